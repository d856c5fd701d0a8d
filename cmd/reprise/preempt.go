package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/preempt"
	"github.com/reprise-vm/reprise/tools/report"
	"github.com/reprise-vm/reprise/tools/states"
)

func newPreemptCmd() *cobra.Command {
	var (
		run     uint32
		thread  threadFlag
		with    []string
		top     limitFlag = 10
		entries limitFlag = 40
		asJSON  bool
		from    time.Duration
		to      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "preempt DB",
		Short: "Who took the CPU: vCPU states, steal time, virtual preemption, a thread's execution flow",
		Long: `From the host view a recording keeps (reprise record --host full, the
default), show for each vCPU its time RUNNING in the guest, in the VMM, IDLE
and PREEMPTED by the host (steal time), and who ran on the host CPU while it
waited; then the guest threads that were virtually preempted (current in the
guest while their vCPU waited on the host).

--thread T adds the execution flow of guest thread T: the ordered stretches
of whatever held the CPU while T wanted it (running or runnable in the
guest) — T itself, another guest thread, the VMM and the exit it handled, a
host thread — with totals per holder and per system.

--with DB2 names the event DB of another VM recorded at the same time on the
same host: its vCPU thread is then resolved to the guest thread it ran.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := loadStates(cmd.ErrOrStderr(), args[0], run)
			if err != nil {
				return err
			}
			var others []*states.Run
			for _, dir := range with {
				o, err := loadStates(cmd.ErrOrStderr(), dir, 0)
				if err != nil {
					return err
				}
				o.Align(r)
				others = append(others, o)
			}
			o := preempt.Options{Thread: thread.Selected()}
			if cmd.Flags().Changed("from") || cmd.Flags().Changed("to") {
				if to == 0 {
					to = r.Span.End
				}
				if to <= from {
					return &exitError{exitUsage, fmt.Errorf("--from %v --to %v: an empty window", from, to)}
				}
				o.Windows = []states.Span{{Start: from, End: to}}
			}
			rep, err := preempt.Analyze(r, others, o)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			if asJSON {
				err = report.JSON(cmd.OutOrStdout(), rep)
			} else {
				err = rep.WriteText(cmd.OutOrStdout(), preempt.TextOptions{Top: int(top), Entries: int(entries)})
			}
			if err != nil {
				return &exitError{exitFailure, err}
			}
			return nil
		},
	}
	cmd.Flags().Uint32Var(&run, "run", 0, "the run to analyse (0: the latest complete run with a host view)")
	cmd.Flags().Var(&thread, "thread", "also show this guest thread's execution flow")
	cmd.Flags().StringArrayVar(&with, "with", nil, "event DB of another VM recorded at the same time on this host (repeatable)")
	cmd.Flags().Var(newDurationFlag(&from, 0, maxDuration, ""), "from", "execution flow from this record time (e.g. 1.25s)")
	cmd.Flags().Var(newDurationFlag(&to, 0, maxDuration, ""), "to", "execution flow up to this record time (0: the end)")
	cmd.Flags().Var(&top, "top", "rows per ranking (0: all)")
	cmd.Flags().Var(&entries, "entries", "execution-flow entries to print (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// loadStates opens an event DB and rebuilds a run's states (run 0: the
// latest complete run with a host view), telling w what the user must
// know about the run.
func loadStates(w io.Writer, dir string, run uint32) (*states.Run, error) {
	db, err := openDB(dir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	r, err := states.Load(db, run)
	switch {
	case errors.Is(err, eventdb.ErrNoRun), errors.Is(err, eventdb.ErrNoSuitableRun),
		errors.Is(err, states.ErrNoHostView), errors.Is(err, states.ErrIncomplete):
		return nil, &exitError{exitUsage, fmt.Errorf("%s: %w", dir, err)}
	case err != nil:
		return nil, &exitError{exitFailure, fmt.Errorf("%s: %w", dir, err)}
	}
	warnRun(w, dir, r.ID, r.Note)
	return r, nil
}
