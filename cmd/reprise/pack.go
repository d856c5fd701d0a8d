package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/tape"
)

func newPackCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "pack TAPE -o PACKED",
		Short: "Copy a Linux program's files into its tape, so it replays on another machine",
		Long: `Write a copy of TAPE with exactly the files its Linux program read
inside (its loader and libraries, --file, --stdin, every file it opened,
mapped or executed), as rr pack does: the packed tape replays where
those files are not, or have changed. Each file must still be the one
recorded (size and SHA-256). 'reprise record --pack' packs when the
recording ends.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{exitUsage, fmt.Errorf("pack needs -o PACKED")}
			}
			n, err := recorder.Pack(args[0], out)
			if err != nil {
				if tape.IsDamaged(err) {
					return &exitError{exitDamaged, err}
				}
				return &exitError{exitFailure, err}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reprise: packed %d files into %s\n", n, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "packed tape to write (never an existing file)")
	return cmd
}
