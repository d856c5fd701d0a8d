package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/tape"
)

func newInfoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "info TAPE",
		Short: "Summarise a tape: machine, position source, events, duration, damage",
		Long: `Summarise a tape: the recorded machine, its position source, the events by
kind, the duration, how the recording ended, and any damage found by reading
every chunk.

Exits 0 for a whole tape and for one cut short by a killed recorder (the
summary says where; everything before the cut replays), 4 when the tape is
damaged (corrupt bytes anywhere, or a file that ends inside its header), 125
when it is no tape at all or cannot be read.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := tape.Summarize(args[0])
			switch {
			case tape.IsDamaged(err):
				return &exitError{exitDamaged, err}
			case err != nil:
				return &exitError{exitFailure, err}
			}
			s.Print(cmd.OutOrStdout())
			if tape.IsDamaged(s.Damage) {
				return &exitError{exitDamaged, fmt.Errorf("%s is damaged: %w", args[0], s.Damage)}
			}
			return nil
		},
	}
}
