package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/profile"
)

func newProfileCmd() *cobra.Command {
	var (
		run       uint32
		thread    threadFlag
		callGraph bool
		perThread bool
		top       limitFlag = 20
		output    string
		asJSON    bool
		user      bool
	)
	cmd := &cobra.Command{
		Use:   "profile DB",
		Short: "Profile a run's samples by function: self and total time, threads, call graph",
		Long: `Aggregate the samples of a run (taken by 'reprise replay --sample N' or
--sample-period) into a function profile: each function's self samples (the
sampled code was in it) and total samples (it was anywhere on the stack),
with --per-thread also each thread's, and with --callgraph the caller →
callee edges of the sampled stacks. Without --run, the latest complete run
that has samples; --thread T keeps one guest thread's samples. --json always lists
every thread.

-o also writes the profile in pprof format, for 'go tool pprof -top FILE'
or a flame graph ('go tool pprof -http=: FILE'); samples carry a "thread"
label.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := profile.Options{Run: run, CallGraph: callGraph, Thread: thread.Selected(), User: user}
			db, err := openDB(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			p, err := profile.Build(db, o)
			switch {
			case errors.Is(err, eventdb.ErrNoRun), errors.Is(err, eventdb.ErrNoSuitableRun):
				return &exitError{exitUsage, err}
			case err != nil:
				return &exitError{exitFailure, err}
			}
			warnRun(cmd.ErrOrStderr(), args[0], p.Run, p.RunNote)
			if output != "" {
				if err := writePprof(p, output); err != nil {
					return &exitError{exitFailure, err}
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (go tool pprof -http=: %s)\n", output, output)
			}
			if asJSON {
				err = p.WriteJSON(cmd.OutOrStdout(), int(top))
			} else {
				err = p.WriteText(cmd.OutOrStdout(), int(top), perThread)
			}
			if err != nil {
				return &exitError{exitFailure, err}
			}
			return nil
		},
	}
	cmd.Flags().Uint32Var(&run, "run", 0, "the run to profile (0: the latest complete run that has samples)")
	cmd.Flags().Var(&thread, "thread", "only this guest thread (0: idle / kernel)")
	cmd.Flags().BoolVar(&perThread, "per-thread", false, "also list each thread's functions")
	cmd.Flags().BoolVar(&callGraph, "callgraph", false, "also list the caller → callee edges")
	cmd.Flags().Var(&top, "top", "rows per table (0: all)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "also write the profile in pprof format to this file (e.g. profile.pb.gz)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of tables")
	cmd.Flags().BoolVar(&user, "user", false, "leave out the samples taken while the VMM served the program's system calls and faults (as perf's cpu-clock:u)")
	return cmd
}

// writePprof writes p in pprof format to path.
func writePprof(p *profile.Profile, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if err := p.WritePprof(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("profile: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	return nil
}
