package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

func newRecordCmd() *cobra.Command {
	var (
		mf      machineFlags
		out     string
		places  string
		jitter  time.Duration
		timeout time.Duration
		host    string
	)
	cmd := &cobra.Command{
		Use:   "record WORKLOAD|IMAGE [ARG...] -o TAPE",
		Short: "Run a guest and record it to a tape",
		Long: `Run a bundled workload or an ELF64 image like 'reprise run' and record every
nondeterministic input it sees to a tape, which 'reprise replay' re-executes
exactly. Ctrl-C (or --timeout) ends the recording cleanly at the next point a
replay can find again; a recorder killed outright leaves a tape that replays
up to its last flushed chunk (flushed every 250 ms).

Position sources (--position): swbc counts the guest's user-mode basic blocks
(the bundled kit has the counter built in) and places interrupts exactly;
exit-sync delivers them only at the guest's own exits (any image, but
compute-bound code sees late interrupts); pmu needs a hardware PMU that
counts guest branches; auto picks swbc when the image has the counter.

The tape also keeps the host's view of the run for 'reprise preempt',
'overhead' and 'timeline' (--host): full (the default) stores every vCPU
entry and exit with its reason, hypervisor events, and the host scheduler's
sched_switch on every CPU with the vCPU thread's wakeups and migrations
(tracefs, needs root; without it the recording goes on and says what is
missing); vmm stores the VMM's part only; off stores none.

Exits with the guest's exit status, like 'reprise run'.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("record needs -o TAPE")
			}
			ctx, cancel, _ := guestContext(cmd.Context(), timeout)
			defer cancel()
			img, cmdline, err := resolveGuest(ctx, &mf, args)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			mode, err := recorder.ParseHostMode(host)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			res, err := recorder.Record(ctx, recorder.Options{
				Image: img, Cmdline: cmdline, MemBytes: uint64(mf.mem), TimerHz: timerHz(mf.timerHz),
				TimerJitter: jitter, Places: tape.PositionSource(places), Console: cmd.OutOrStdout(),
				Output: out, KVMPath: mf.kvmPath, DiskBase: mf.disk, DiskOverlay: mf.overlay, Net: mf.net(), Host: mode,
			})
			if res != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "reprise: recorded %s: %d events, %d host records, %s, %v of guest execution (%s positions)%s\n",
					res.Tape, res.Events, res.HostRecords, humanBytes(res.Bytes), res.Elapsed.Round(time.Millisecond), res.Places, endNote(res.End))
				if res.HostMissing != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "reprise: %s\n", res.HostMissing)
				}
			}
			var gf *vmm.GuestFault
			switch {
			case errors.As(err, &gf):
				return &exitError{exitFailure, fmt.Errorf("%w\n(the fault is recorded: 'reprise replay %s' reproduces it)", err, out)}
			case err != nil && ctx.Err() != nil && res != nil:
				return &exitError{exitInterrupted, fmt.Errorf("%w: the guest reached no point a replay can stop at within the grace period; the tape replays up to its last event", err)}
			case err != nil:
				return &exitError{exitFailure, err}
			}
			return guestStatus(res.Status)
		},
	}
	mf.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "tape to write")
	cmd.Flags().StringVar(&places, "position", string(recorder.Auto), "position source: auto, swbc, exit-sync or pmu")
	cmd.Flags().DurationVar(&jitter, "timer-jitter", 0, "move each timer tick randomly by up to this much (stress-tests determinism)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "end the recording cleanly after this long (0: no limit)")
	cmd.Flags().StringVar(&host, "host", string(recorder.HostFull), "host view to keep: full, vmm or off")
	cmd.Flags().SetInterspersed(false)
	return cmd
}

func endNote(e *tape.End) string {
	if e == nil {
		return ", no end recorded"
	}
	if e.Reason == tape.EndInterrupted {
		return ", stopped on request"
	}
	return ""
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
