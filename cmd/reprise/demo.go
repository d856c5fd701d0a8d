package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tools/deadlock"
	"github.com/reprise-vm/reprise/tools/lockstat"
	"github.com/reprise-vm/reprise/tools/profile"
)

// demoSampleEvery samples syn_cont ~1000 times (it counts ~1.5e8 loop
// iterations and calls).
const demoSampleEvery = 150_000

func newDemoCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Record syn_cont, replay it with lock probes and sampling, print every report",
		Long: `The whole product in one command: build the guest kit if needed, record the
syn_cont lock-contention workload (16 threads, 2 levels of locks), replay the
tape with the kit's lock probes and deterministic sampling into an event
database, and print the lockstat, deadlock and profile reports. The tape, the
database and a pprof profile stay in --dir for the other commands; the
deadlock_transitive sample is recorded too, to show a potential deadlock.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := guestContext(cmd.Context(), 0)
			defer cancel()
			err := runDemo(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), dir)
			if stop := stoppedBy(ctx); err != nil && stop != nil {
				return &exitError{stop.status(), err}
			}
			if err != nil {
				return &exitError{exitFailure, err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "reprise-demo", "where to keep the tapes, the event databases and the pprof file")
	return cmd
}

// demoStep prints a step's heading and, when it ends, how long it took.
func demoStep(w io.Writer, what string) (done func(note string)) {
	fmt.Fprintf(w, "==> %s\n", what)
	start := time.Now()
	return func(note string) {
		fmt.Fprintf(w, "    %s (%v)\n", note, time.Since(start).Round(10*time.Millisecond))
	}
}

func runDemo(ctx context.Context, out, errOut io.Writer, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := struct{ tape, db, pprof, dlTape, dlDB string }{
		filepath.Join(dir, "syn_cont.tape"), filepath.Join(dir, "syn_cont.db"), filepath.Join(dir, "syn_cont.pb.gz"),
		filepath.Join(dir, "deadlock_transitive.tape"), filepath.Join(dir, "deadlock_transitive.db"),
	}
	// A demo DB holds the demo's recording only: start it afresh. The
	// tapes are the demo's own too, recorded again each time (Overwrite).
	for _, p := range []string{files.db, files.dlDB} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}

	done := demoStep(out, "building the guest kit (cached after the first time)")
	kit, err := guest.Build(ctx)
	if err != nil {
		return err
	}
	img, err := elffile.OpenImage(kit.Image())
	if err != nil {
		return err
	}
	done(kit.Image())

	db, run, err := demoRecordReplay(ctx, out, errOut, img, "syn_cont", files.tape, files.db, demoSampleEvery)
	if err != nil {
		return err
	}
	defer db.Close()

	fmt.Fprintf(out, "\n==> reprise lockstat %s --top 10\n", files.db)
	ls, err := lockstat.Build(db, lockstat.Options{Run: run.ID, Top: 10})
	if err != nil {
		return err
	}
	if err := ls.Write(out); err != nil {
		return err
	}

	if err := demoDeadlock(out, db, files.db, run); err != nil {
		return err
	}

	fmt.Fprintf(out, "\n==> reprise profile %s --callgraph -o %s\n", files.db, files.pprof)
	prof, err := profile.Build(db, profile.Options{Run: run.ID, CallGraph: true})
	if err != nil {
		return err
	}
	if err := prof.WriteText(out, 10, false); err != nil {
		return err
	}
	if err := writePprof(prof, files.pprof); err != nil {
		return err
	}

	fmt.Fprintln(out)
	dldb, dlRun, err := demoRecordReplay(ctx, out, errOut, img, "deadlock_transitive", files.dlTape, files.dlDB, 0)
	if err != nil {
		return err
	}
	defer dldb.Close()
	if err := demoDeadlock(out, dldb, files.dlDB, dlRun); err != nil {
		return err
	}

	fmt.Fprintf(out, `
Done. Kept in %s:
  %-36s the recording (reprise info, reprise replay)
  %-36s the event database (reprise events, lockstat, deadlock, profile)
  %-36s the profile (go tool pprof -top %s)
  %-36s the deadlock sample's recording
  %-36s and its event database
Replay again with other probes, into the same database:
  reprise replay %s --db %s --probe 'comp' --sample 100000
`, dir, files.tape, files.db, files.pprof, files.pprof, files.dlTape, files.dlDB, files.tape, files.db)
	return nil
}

// demoDeadlock prints the deadlock report of run, in db at dir.
func demoDeadlock(out io.Writer, db *eventdb.DB, dir string, run *eventdb.Run) error {
	fmt.Fprintf(out, "\n==> reprise deadlock %s\n", dir)
	rep, err := deadlock.Build(db, deadlock.Options{Run: run.ID})
	if err != nil {
		return err
	}
	return rep.Write(out)
}

// demoRecordReplay records a workload, then replays it with the kit's lock
// probes (and sampling) into a new DB, which it returns open.
func demoRecordReplay(ctx context.Context, out, errOut io.Writer, img *elffile.Image, workload, tapePath, dbDir string, sampleEvery uint64) (*eventdb.DB, *eventdb.Run, error) {
	done := demoStep(out, fmt.Sprintf("reprise record -o %s %s", tapePath, workload))
	res, err := recorder.Record(ctx, recorder.Options{Image: img, Cmdline: workload, Output: tapePath, Console: io.Discard, PositionSource: recorder.Auto, Overwrite: true})
	if err != nil {
		return nil, nil, fmt.Errorf("recording %s: %w", workload, err)
	}
	done(fmt.Sprintf("%d events, %s, %v of guest execution", res.Events, humanBytes(res.Bytes), res.Elapsed.Round(time.Millisecond)))

	specs, err := probes.ParseSpecs(guest.LockProbes)
	if err != nil {
		return nil, nil, err
	}
	plan, err := probes.Resolve(specs, img)
	if err != nil {
		return nil, nil, err
	}
	what := fmt.Sprintf("reprise replay %s --locks --db %s", tapePath, dbDir)
	if sampleEvery != 0 {
		what += fmt.Sprintf(" --sample %d", sampleEvery)
	}
	done = demoStep(out, what)
	opts := replayer.Options{Tape: tapePath, Image: img, Console: io.Discard, Plan: plan, SampleEvery: sampleEvery}
	if isTerminal(os.Stderr) {
		opts.Progress = errOut
	}
	db, err := eventdb.Open(dbDir, nil)
	if err != nil {
		return nil, nil, err
	}
	_, run, err := replayer.ToDB(ctx, opts, db)
	if err == nil && !run.Complete {
		err = errors.New("the replay did not complete")
	}
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("replaying %s: %w", tapePath, err)
	}
	done(fmt.Sprintf("replay matched the recording; run %d: %d events", run.ID, run.Events))
	return db, run, nil
}
