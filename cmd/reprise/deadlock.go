package main

import (
	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/tools/deadlock"
	"github.com/reprise-vm/reprise/tools/report"
)

func newDeadlockCmd() *cobra.Command {
	var (
		o      deadlock.Options
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "deadlock DB",
		Short: "Potential deadlocks in a replay's lock orders (lock trees, cycles, gate locks)",
		Long: `Build each thread's lock tree from a run with lock probes (replay --locks),
join the trees where threads take the same lock, and report every cycle of
threads each holding a lock the next one takes: a potential deadlock even if
the recorded run never deadlocked. Threads that would hold one lock at once
cannot all be in a cycle: a chain that needs two of them to hold one of its
own locks is not reported, and a cycle where two or more of them hold
another lock when they ask for their next is reported as protected by that
gate lock. A trylock never waits, so a cycle closed only through one is
reported as safe.

Exits 0 when no potential deadlock is found, 1 when one is.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := openDB(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			rep, err := deadlock.Build(db, o)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			warnRun(cmd.ErrOrStderr(), args[0], rep.Run, rep.RunNote)
			if asJSON {
				err = report.JSON(cmd.OutOrStdout(), rep)
			} else {
				err = rep.Write(cmd.OutOrStdout())
			}
			if err == nil && len(rep.Deadlocks) > 0 {
				return &exitError{code: 1}
			}
			return err
		},
	}
	cmd.Flags().Uint32Var(&o.Run, "run", 0, "run to read (default: the latest complete run with lock probes)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
