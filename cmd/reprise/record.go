package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

func newRecordCmd() *cobra.Command {
	var (
		mf             machineFlags
		out            string
		positionSource string
		jitter         time.Duration
		timeout        time.Duration
		host           string
		force          bool
		pack           bool
		ckptFile       string
		ckptEvery      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "record -o TAPE WORKLOAD|IMAGE|PROGRAM [ARG...]",
		Short: "Run a guest and record it to a tape",
		Long: `Run a bundled workload, an ELF64 image or a Linux program like 'reprise run'
and record every
nondeterministic input it sees to a tape, which 'reprise replay' re-executes
exactly. Ctrl-C, SIGTERM or --timeout end the recording cleanly at the next point a
replay can find again; a recorder killed outright leaves a tape that replays
up to its last flushed chunk (flushed every 250 ms).

Position sources (--position-source): swbc counts the guest's user-mode loop iterations and calls
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

--checkpoint-every 5s takes a checkpoint of the whole machine every 5 s of
guest time, to TAPE.ckpt (or --checkpoints FILE), as 'reprise replay
--checkpoint-every' does: the first replay can then start anywhere (--from)
or be split (--jobs, --segment). The guest's clock stands still while one
is written, so they do not change what is recorded.

The tape (-o) is never an existing file: reprise refuses to overwrite a
recording unless --force is given.

Exits with the guest's exit status, like 'reprise run': 124 when --timeout
ended the recording, 130 on Ctrl-C, 143 on SIGTERM (the tape is whole and
replays in each case), 125 if reprise or the guest failed (a guest fault
is recorded and replays).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := guestArgs(cmd, args)
			if err != nil {
				return err
			}
			if out == "" {
				return errors.New("record needs -o TAPE")
			}
			if err := checkJitter(jitter, int(mf.timerHz)); err != nil {
				return err
			}
			if err := distinctOutputs(out, ckptFile, ckptEvery, &mf); err != nil {
				return err
			}
			ctx, cancel := guestContext(cmd.Context(), timeout)
			defer cancel()
			g, err := resolveGuest(ctx, cmd, &mf, target, rest)
			if err != nil {
				return err
			}
			netCfg, err := mf.net()
			if err != nil {
				return err
			}
			mode, err := recorder.ParseHostMode(host)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			res, err := recorder.Record(ctx, recorder.Options{
				Image: g.img, Linux: g.linux, KeepWrites: mf.keep, Pack: pack, Cmdline: g.cmdline, MemBytes: g.memBytes(cmd, &mf), TimerHz: mf.tickRate(),
				TimerJitter: jitter, PositionSource: tape.PositionSource(positionSource), Console: cmd.OutOrStdout(),
				Output: out, KVMPath: mf.kvmPath, DiskBase: mf.disk, DiskOverlay: mf.overlay, Net: netCfg, Host: mode,
				Overwrite: force, CheckpointEvery: ckptEvery, Checkpoints: ckptFile,
			})
			if res != nil {
				for _, w := range res.Warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "reprise: warning: %s\n", w)
				}
				if res.Unimplemented != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "reprise: system calls answered ENOSYS: %s\n", res.Unimplemented)
				}
				if res.StaleTranslations > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "reprise: faults of stale host translations retried: %d\n", res.StaleTranslations)
				}
				if mf.keep != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "reprise: kept %d written files in %s\n", res.KeptWrites, mf.keep)
				}
			}
			if res != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "reprise: recorded %s: %d events, %d host records, %s, %v of guest execution (%s positions)%s\n",
					res.Tape, res.Events, res.HostRecords, humanBytes(res.Bytes), res.Elapsed.Round(time.Millisecond), res.PositionSource, endNote(res.End))
				if res.HostMissing != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "reprise: %s\n", res.HostMissing)
				}
				reportCheckpoints(cmd.ErrOrStderr(), cmp.Or(ckptFile, out+".ckpt"), res.Checkpoints, res.CheckpointsSkipped)
			}
			var (
				gf     *vmm.GuestFault
				exists *recorder.ExistsError
			)
			stop := stoppedBy(ctx)
			switch {
			case errors.As(err, &exists):
				return &exitError{exitFailure, fmt.Errorf("%w: choose another name, remove it, or add --force to overwrite it", err)}
			case errors.As(err, &gf):
				return &exitError{exitFailure, fmt.Errorf("%w\n(the fault is recorded: 'reprise replay %s' reproduces it)", err, out)}
			case err != nil && stop != nil && res != nil:
				return &exitError{stop.status(), fmt.Errorf("%w: the guest reached no point a replay can stop at within the grace period; the tape replays up to its last event", err)}
			case err != nil:
				return &exitError{exitFailure, err}
			case stop != nil && res.End != nil && res.End.Reason == vmm.EndInterrupted:
				// Stopped cleanly where a replay stops too; the status
				// still says why, as 'reprise run' does.
				return &exitError{stop.status(), fmt.Errorf("recording stopped: %v (%s ends there, whole: a replay stops at the same point)", stop, out)}
			}
			return guestStatus(res.Status)
		},
	}
	mf.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "tape to write (never an existing file, unless --force)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing tape (and its disk overlay)")
	cmd.Flags().BoolVar(&pack, "pack", false, "copy a Linux program's files (libraries, --file, --stdin) into the tape, so it replays on another machine")
	cmd.Flags().StringVar(&positionSource, "position-source", string(recorder.Auto), "position source: auto, swbc, exit-sync or pmu")
	cmd.Flags().StringVar(&positionSource, "position", string(recorder.Auto), "")
	_ = cmd.Flags().MarkDeprecated("position", "use --position-source")
	cmd.Flags().Var(newDurationFlag(&jitter, time.Nanosecond, time.Second, "none"), "timer-jitter", "move each timer tick randomly by up to this much, less than the tick period (stress-tests determinism)")
	cmd.Flags().Var(newDurationFlag(&timeout, time.Nanosecond, maxDuration, "no limit"), "timeout", "end the recording cleanly after this long (0: no limit)")
	cmd.Flags().StringVar(&ckptFile, "checkpoints", "", "where --checkpoint-every writes (default: TAPE.ckpt; never an existing file, unless --force)")
	cmd.Flags().Var(newDurationFlag(&ckptEvery, 10*time.Millisecond, 24*time.Hour, ""), "checkpoint-every", "take a checkpoint every this much of guest time (e.g. 5s)")
	cmd.Flags().StringVar(&host, "host", string(recorder.HostFull), "host view to keep: full, vmm or off")
	cmd.Flags().SetInterspersed(false)
	return cmd
}

func endNote(e *vmm.End) string {
	if e == nil {
		return ", no end recorded"
	}
	if e.Reason == vmm.EndInterrupted {
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

// checkJitter refuses a jitter that would reorder or merge ticks: it must be
// less than the tick period, and there must be a timer to jitter.
func checkJitter(jitter time.Duration, hz int) error {
	switch {
	case jitter == 0:
		return nil
	case hz == 0:
		return errors.New("--timer-jitter needs a timer: --timer-hz is 0")
	case jitter >= time.Second/time.Duration(hz):
		return fmt.Errorf("--timer-jitter %v is not less than the tick period (%v at %d Hz)", jitter, time.Second/time.Duration(hz), hz)
	}
	return nil
}

// distinctOutputs refuses a recording whose tape, checkpoint file and disk
// overlay are one file: each would be written over the other (`--checkpoints
// X -o X` created the checkpoint file, then refused the tape, and left the
// file behind). It runs before anything is written.
func distinctOutputs(out, ckptFile string, ckptEvery time.Duration, mf *machineFlags) error {
	outputs := [][2]string{{"-o", out}}
	if ckptEvery != 0 {
		outputs = append(outputs, [2]string{"--checkpoints", cmp.Or(ckptFile, out+".ckpt")})
	}
	if mf.disk != "" {
		outputs = append(outputs, [2]string{"--overlay", cmp.Or(mf.overlay, out+".overlay")})
	}
	for i, a := range outputs {
		for _, b := range outputs[:i] {
			if samePlace(a[1], b[1]) {
				return &exitError{exitUsage, fmt.Errorf("%s %s and %s %s name the same file: a recording writes each of them", b[0], b[1], a[0], a[1])}
			}
		}
	}
	return nil
}

// samePlace says whether paths a and b name the same directory entry:
// the same name in the same directory, however each is spelled.
func samePlace(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	if errA != nil || errB != nil {
		return a == b
	}
	if absA == absB {
		return true
	}
	if filepath.Base(absA) != filepath.Base(absB) {
		return false
	}
	dirA, errA := os.Stat(filepath.Dir(absA))
	dirB, errB := os.Stat(filepath.Dir(absB))
	return errA == nil && errB == nil && os.SameFile(dirA, dirB)
}
