package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/tools/lockstat"
	"github.com/reprise-vm/reprise/tools/report"
)

func newLockstatCmd() *cobra.Command {
	var (
		o      lockstat.Options
		sort   string
		top    limitFlag
		asJSON bool
	)
	keys := make([]string, len(lockstat.SortKeys))
	for i, k := range lockstat.SortKeys {
		keys[i] = string(k)
	}
	cmd := &cobra.Command{
		Use:   "lockstat DB",
		Short: "Lock contention per lock and per thread, from a replay with --locks",
		Long: `Rebuild every lock operation of a run (a replay with --locks, or probes named
lock, locked, unlock, trylock, trylocked, timedlock, timedlocked) and print,
per lock, acquisitions, contended acquisitions (the lock was held by another
thread when asked for), the share blocked, owner changes, wait and hold times
(record time), and where the lock was first acquired; then the same per
thread.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Sort, o.Top = lockstat.SortKey(sort), int(top)
			db, err := openDB(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			rep, err := lockstat.Build(db, o)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			warnRun(cmd.ErrOrStderr(), args[0], rep.Run, rep.RunNote)
			if asJSON {
				return report.JSON(cmd.OutOrStdout(), rep)
			}
			return rep.Write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().Uint32Var(&o.Run, "run", 0, "run to read (default: the latest complete run with lock probes)")
	cmd.Flags().StringVar(&sort, "sort", string(lockstat.ByContended), "order locks by "+strings.Join(keys, "|"))
	cmd.Flags().Var(&top, "top", "print only the first N locks (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
