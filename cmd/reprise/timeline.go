package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/tools/states"
	"github.com/reprise-vm/reprise/tools/timeline"
)

func newTimelineCmd() *cobra.Command {
	var (
		run       uint32
		with      []string
		output    string
		maxEvents uint64
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "timeline DB -o trace.pftrace",
		Short: "Write a Perfetto trace of vCPU, guest-thread and host-CPU states",
		Long: `Write the run's states as a Perfetto trace (its protobuf format, TrackEvent
with interned names), which ui.perfetto.dev (Open trace file) displays at
sizes where JSON traces fail to load; --json writes Chrome trace-event JSON
instead, for chrome://tracing. Per VM a track for each vCPU
(RUNNING, VMM with its exit reason, IDLE, PREEMPTED with the host CPU it
waited on) and for each guest thread (running, runnable), and, when the
recording kept host scheduling, a "host" process with a track per host CPU.
--with DB2 adds another VM recorded at the same time on the same host, on
the same time line.

Above --max-events slices (default 10,000,000; 1,000,000 with --json),
stretches shorter than a quantum are merged into "mixed" slices, and the
quantum is reported.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return &exitError{exitUsage, errors.New("timeline needs -o FILE")}
			}
			r, err := loadStates(cmd.ErrOrStderr(), args[0], run)
			if err != nil {
				return err
			}
			runs := []*states.Run{r}
			for _, dir := range with {
				o, err := loadStates(cmd.ErrOrStderr(), dir, 0)
				if err != nil {
					return err
				}
				o.Align(r)
				runs = append(runs, o)
			}
			f, err := os.Create(output)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			st, err := timeline.Write(f, runs, timeline.Options{MaxEvents: int(maxEvents), JSON: asJSON})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return &exitError{exitFailure, fmt.Errorf("timeline: %s: %w", output, err)}
			}
			note := ""
			if st.Quantum > 0 {
				note = fmt.Sprintf("; %d intervals, more than the %d slices --max-events allows: stretches shorter than %v merged", st.Intervals, st.Limit, st.Quantum)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d slices%s (open it in ui.perfetto.dev)\n", output, st.Events, note)
			return nil
		},
	}
	cmd.Flags().Uint32Var(&run, "run", 0, "the run to show (0: the latest complete run with a host view)")
	cmd.Flags().StringArrayVar(&with, "with", nil, "event DB of another VM recorded at the same time on this host (repeatable)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "trace file to write")
	cmd.Flags().Var(&countFlag{n: &maxEvents, what: "slices"}, "max-events", "merge short stretches above this many slices (default 10000000, or 1000000 with --json)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write Chrome trace-event JSON instead of Perfetto's protobuf")
	return cmd
}
