package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/host/userfile"
	"github.com/reprise-vm/reprise/tape"
)

func newPackCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "pack TAPE -o PACKED",
		Short: "Copy a Linux program's files into its tape, so it replays on another machine",
		Long: `Write a copy of TAPE with the files its Linux program read (its loader and
libraries, --file, --stdin) inside, as rr pack does: the packed tape
replays where those files are not, or have changed. Each file must still
be the one recorded (size and SHA-256). 'reprise record --pack' packs as
it records.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{exitUsage, fmt.Errorf("pack needs -o PACKED")}
			}
			r, err := tape.Open(args[0])
			if err != nil {
				return &exitError{exitDamaged, err}
			}
			defer r.Close()
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			reportHostFiles(cmd.ErrOrStderr(), "pack reads", r.Header().Linux)
			err = tape.Pack(r, f, func(file *tape.File) (io.ReadCloser, fs.FileInfo, error) {
				return userfile.Open(file.Host)
			})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(out)
				return &exitError{exitFailure, err}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reprise: packed %d files into %s\n", len(r.Header().Linux.Files), out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "packed tape to write (never an existing file)")
	return cmd
}
