package main

import (
	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/tools/overhead"
	"github.com/reprise-vm/reprise/tools/report"
)

func newOverheadCmd() *cobra.Command {
	var (
		run    uint32
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "overhead DB",
		Short: "What virtualisation cost: per vCPU, time in the guest, in the VMM by exit reason, preempted, idle",
		Long: `Break each vCPU's time down, from the VMM's own entry and exit timestamps
and the host scheduler's view kept in the recording: in the guest, in the VMM
(by the exit reason that brought the vCPU out, with counts and the average
stay), preempted on the host, and idle. Without host scheduling in the
recording (no tracefs), preempted time cannot be told apart.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := loadStates(cmd.ErrOrStderr(), args[0], run)
			if err != nil {
				return err
			}
			rep := overhead.Analyze(r)
			if asJSON {
				err = report.JSON(cmd.OutOrStdout(), rep)
			} else {
				err = rep.WriteText(cmd.OutOrStdout())
			}
			if err != nil {
				return &exitError{exitFailure, err}
			}
			return nil
		},
	}
	cmd.Flags().Uint32Var(&run, "run", 0, "the run to analyse (0: the latest complete run with a host view)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
