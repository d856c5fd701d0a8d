package main

import (
	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/tape"
)

func newInfoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "info TAPE",
		Short: "Summarise a tape: machine, position source, events, duration, damage",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := tape.Summarize(args[0])
			if err != nil {
				return &exitError{exitFailure, err}
			}
			s.Print(cmd.OutOrStdout())
			return nil
		},
	}
}
