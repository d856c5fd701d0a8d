package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/tools/lockops"
	"github.com/reprise-vm/reprise/vmm"
)

func newReplayCmd() *cobra.Command {
	var (
		quiet      bool
		disk       string
		probeSpecs []string
		probeFile  string
		sample     uint64
		period     time.Duration
		dbDir      string
		locks      bool
		ckptFile   string
		ckptEvery  time.Duration
		from       string
		jobs       int
		segment    string
		gdbListen  string
	)
	cmd := &cobra.Command{
		Use:   "replay TAPE",
		Short: "Re-execute a recorded run exactly, checking it against the tape",
		Long: `Rebuild the machine from the tape, re-execute the guest from boot with every
input taken from the tape, and check at every event that the guest is where
and as it was when recorded (exit, branch count, registers), and at the end
that its console output and RAM are identical. Idle time is skipped.

Exits 0 when the replay matched (a recorded guest fault reproduced counts as
a match), 3 on a divergence (with the event, position, expected and found
state), 4 when the tape is damaged (corrupt bytes anywhere, or a file that
ends inside its header), 130 or 143 when interrupted (Ctrl-C, SIGTERM). A
tape cut short by a killed recorder replays up to its last whole chunk and
exits 0 with a notice.

--checkpoint-every 5s writes a checkpoint of the whole machine every 5 s of
the recording's time, to TAPE.ckpt (or --checkpoints FILE); only the RAM
pages that changed are written again. --from 30s (or --from EXIT:BRANCH, a
position) then starts a replay at the last checkpoint before that point
instead of at boot, probes and --db included; it is checked like any
replay, and a replay from boot checks every checkpoint it passes.

With checkpoints, a replay into a DB splits into segments (boot to the
first checkpoint, one to the next, the last to the end): --jobs N replays
them N at a time and stores one run, the one a replay from boot stores;
--segment I/N replays the I-th of N shares of them into its own DB, on any
machine, and reprise merge joins the N DBs into one run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if gdbListen != "" && (locks || len(probeSpecs) > 0 || probeFile != "" || dbDir != "" || sample != 0 || period != 0 || ckptEvery != 0 || from != "") {
				return &exitError{exitUsage, errors.New("--gdb-listen debugs a replay from boot: it takes no probes, sampling, --db, --from or --checkpoint-every")}
			}
			ctx, cancel := guestContext(cmd.Context(), 0)
			defer cancel()
			console := cmd.OutOrStdout()
			if quiet {
				console = io.Discard
			}
			// Opened once: every step below reads this one (its header,
			// image, program files, kernel), none opens the path again.
			rec, err := replayer.OpenRecording(args[0])
			switch {
			case tape.IsDamaged(err):
				return &exitError{exitDamaged, err}
			case err != nil:
				return &exitError{exitFailure, err}
			}
			defer rec.Close()
			if rec.Header.Linux != nil {
				read, err := rec.FilesRead()
				if err != nil {
					return &exitError{exitDamaged, err}
				}
				reportHostFiles(cmd.ErrOrStderr(), rec.Header.Linux, read)
			}
			opts := replayer.Options{Tape: args[0], Recording: rec, Console: console, DiskBase: disk, SampleEvery: sample, SamplePeriod: period}
			if err := checkpointOptions(&opts, ckptFile, ckptEvery, from, cmd.ErrOrStderr()); err != nil {
				return err
			}
			// A progress line on the terminal, unless the console is
			// streaming to that same terminal.
			if isTerminal(os.Stderr) && (quiet || !isTerminal(os.Stdout)) {
				opts.Progress = os.Stderr
			}
			probing := locks || len(probeSpecs) > 0 || probeFile != ""
			var objs []*elffile.File // a Linux program's files: where its probes are
			if probing {
				objs, err = rec.Objects()
			}
			switch {
			case tape.IsDamaged(err):
				return &exitError{exitDamaged, err}
			case err != nil:
				return &exitError{exitFailure, err}
			}
			switch {
			case objs != nil:
				if opts.Set, err = linuxProbeSet(objs, probeSpecs, probeFile, locks); err != nil {
					return &exitError{exitUsage, err}
				}
			case probing:
				if locks {
					probeSpecs = append(probeSpecs, guest.LockProbes...)
				}
				plan, err := probePlan(rec, probeSpecs, probeFile)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				opts.Plan = plan
			}
			if (jobs != 0 || segment != "") && (dbDir == "" || opts.Checkpoints == "" || opts.CheckpointEvery != 0 || opts.Start != 0) {
				return &exitError{exitUsage, errors.New("--jobs and --segment replay the segments between a tape's checkpoints into a DB: they need --db and the checkpoints (TAPE.ckpt or --checkpoints), not --from or --checkpoint-every")}
			}
			if (opts.Plan != nil || opts.Set != nil || sample != 0 || period != 0) && dbDir == "" {
				return &exitError{exitUsage, errors.New("probes and sampling write to an event database: add --db DIR")}
			}
			var res *replayer.Result
			if gdbListen != "" {
				res, err = serveGDB(ctx, opts, gdbListen, cmd.ErrOrStderr(), nil)
				if err == nil && (res == nil || res.End == nil && !res.Segment) {
					return nil // killed from gdb (after going back, a replay that reached no end)
				}
			} else if dbDir != "" {
				var run *eventdb.Run
				res, run, err = replayToDB(ctx, opts, dbDir, jobs, segment, cmd.ErrOrStderr())
				if run != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "reprise: run %d in %s: %d events%s\n", run.ID, dbDir, run.Events, map[bool]string{false: " (incomplete)", true: ""}[run.Complete])
				}
			} else {
				res, err = replayer.Replay(ctx, opts)
			}
			var (
				div *replayer.DivergenceError
				cut *replayer.TapeCutError
			)
			stderr := cmd.ErrOrStderr()
			switch {
			case errors.As(err, &div):
				return &exitError{exitDivergence, err}
			case tape.IsDamaged(err) || checkpoint.IsDamaged(err):
				return &exitError{exitDamaged, err}
			case errors.As(err, &cut):
				fmt.Fprintf(stderr, "reprise: notice: %v\nreprise: replayed and checked everything up to there\n", err)
				return nil
			case err != nil && stoppedBy(ctx) != nil:
				return &exitError{stoppedBy(ctx).status(), err}
			case err != nil:
				return &exitError{exitFailure, err}
			}
			if res.Segment {
				fmt.Fprintf(stderr, "reprise: replay matched up to its last checkpoint: %d events, %d exits; RAM and registers as checkpointed (%v)\n",
					res.Events, res.Stats.TotalExits(), res.Elapsed.Round(time.Millisecond))
				return nil
			}
			fmt.Fprintf(stderr, "reprise: replay matched: %d events, %d exits, %s; console and RAM identical (%v)\n",
				res.Events, res.Stats.TotalExits(), describeEnd(res.End), res.Elapsed.Round(time.Millisecond))
			reportProbeSites(stderr, res.ProbeSites)
			reportCheckpoints(stderr, opts.Checkpoints, res.Checkpoints, res.CheckpointsSkipped)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the guest console")
	cmd.Flags().StringVar(&disk, "disk", "", "where the recording's disk base image is now, if it moved (checked against the recorded hash)")
	cmd.Flags().StringArrayVar(&probeSpecs, "probe", nil, "a probe: [NAME=]SYMBOL[+OFF][@LIBRARY][%return] [ARG=EXPR ...] [@tid=N] (repeatable; e.g. 'lock=mutex_lock m=arg0', 'pthread_mutex_lock@libc.so.6 m=arg0')")
	cmd.Flags().StringVar(&probeFile, "probes", "", "probes from a YAML or JSON file")
	cmd.Flags().BoolVar(&locks, "locks", false, "probe the lock functions for lockstat and deadlock: the guest kit's, or a Linux program's pthread mutexes, reader-writer locks and condition waits")
	cmd.Flags().Var(&countFlag{n: &sample, what: "branch counts between samples"}, "sample", "sample every N counts of the user-mode branch counter — loop iterations and calls (deterministic: identical in every replay)")
	cmd.Flags().Var(newDurationFlag(&period, replayer.MinSamplePeriod, time.Hour, ""), "sample-period", "also sample every this long of replay time, wherever the guest is (e.g. 1ms; differs between replays)")
	cmd.Flags().StringVar(&dbDir, "db", "", "event database to add this replay's run to (created if absent; never a directory of other files)")
	cmd.Flags().StringVar(&ckptFile, "checkpoints", "", "the tape's checkpoint file (default: TAPE.ckpt; --checkpoint-every writes a new one, never an existing file)")
	cmd.Flags().Var(newDurationFlag(&ckptEvery, 10*time.Millisecond, 24*time.Hour, ""), "checkpoint-every", "write a checkpoint every this much of the recording's time (e.g. 5s)")
	cmd.Flags().StringVar(&gdbListen, "gdb-listen", "", "wait for a gdb remote client on this address (e.g. 127.0.0.1:2345) and let it debug the replay")
	cmd.Flags().IntVar(&jobs, "jobs", 0, "replay the segments between the tape's checkpoints this many at a time (with --db)")
	cmd.Flags().StringVar(&segment, "segment", "", "replay share I of N of the segments between the tape's checkpoints into --db (I/N; join the N DBs with reprise merge)")
	cmd.Flags().StringVar(&from, "from", "", "start at the last checkpoint before this record time (e.g. 30s) or position (EXIT:BRANCH)")
	return cmd
}

// checkpointOptions sets the replay's checkpoint file and what it does
// with it: write checkpoints every `every`, or start from the last one
// before `from`. o.Recording is the tape, opened.
func checkpointOptions(o *replayer.Options, file string, every time.Duration, from string, stderr io.Writer) error {
	if every == 0 && from == "" {
		if file == "" {
			if _, err := os.Stat(o.Tape + ".ckpt"); err != nil {
				return nil
			}
			file = o.Tape + ".ckpt"
		}
		// Checked as the replay passes them: the whole ones. A file with
		// none is no reason not to replay from boot.
		f, err := openCheckpoints(o.Recording.Header, file, stderr)
		if err != nil && checkpoint.IsDamaged(err) {
			fmt.Fprintf(stderr, "reprise: warning: %v: replaying without its checkpoints\n", err)
			return nil
		}
		if err == nil {
			f.Close()
		}
		o.Checkpoints = file // another error, the replay's to report
		return nil
	}
	if file == "" {
		file = o.Tape + ".ckpt"
	}
	o.Checkpoints = file
	if every != 0 {
		if from != "" {
			return &exitError{exitUsage, errors.New("--from starts at a checkpoint; --checkpoint-every writes them: one at a time")}
		}
		// As a recording never overwrites a tape, a replay never
		// overwrites a file with checkpoints: --checkpoints naming the
		// tape itself truncated it.
		if _, err := os.Lstat(file); !errors.Is(err, fs.ErrNotExist) {
			if err != nil {
				return &exitError{exitFailure, err}
			}
			return &exitError{exitFailure, fmt.Errorf("%s exists; --checkpoint-every never overwrites a file: remove it or name another with --checkpoints", file)}
		}
		o.CheckpointEvery = every
		return nil
	}
	start, at, err := startCheckpoint(o.Recording.Header, file, from, stderr)
	if err != nil {
		return err
	}
	o.Start = start
	if start == 0 {
		fmt.Fprintf(stderr, "reprise: no checkpoint before %s in %s: replaying from boot\n", from, file)
	} else {
		fmt.Fprintf(stderr, "reprise: starting at checkpoint %d, record time %v, exit %d\n", start, at.Time.Round(time.Millisecond), at.Pos.Exit)
	}
	return nil
}

// startCheckpoint is the 1-based index of the last checkpoint at or before
// from (a duration, or EXIT:BRANCH), 0 when none is.
func startCheckpoint(h *tape.Header, file, from string, stderr io.Writer) (int, checkpoint.Summary, error) {
	var none checkpoint.Summary
	f, err := openCheckpoints(h, file, stderr)
	switch {
	case checkpoint.IsDamaged(err):
		return 0, none, &exitError{exitDamaged, err}
	case err != nil:
		return 0, none, &exitError{exitFailure, err}
	}
	defer f.Close()
	var before func(s checkpoint.Summary) bool
	if d, err := time.ParseDuration(from); err == nil {
		before = func(s checkpoint.Summary) bool { return s.Time <= d }
	} else {
		var exit, branch uint64
		if n, _ := fmt.Sscanf(from, "%d:%d", &exit, &branch); n != 2 {
			return 0, none, &exitError{exitUsage, fmt.Errorf("--from %q: want a record time (30s) or a position (EXIT:BRANCH)", from)}
		}
		before = func(s checkpoint.Summary) bool {
			return s.Pos.Exit < exit || s.Pos.Exit == exit && s.Pos.Branch <= branch
		}
	}
	start, at := 0, none
	for i, s := range f.Checkpoints() {
		if before(s) {
			start, at = i+1, s
		}
	}
	return start, at, nil
}

// openCheckpoints opens the checkpoint file of the tape whose header is h,
// and says what of it a replay ignores: the damage its index stopped at,
// and all after it.
func openCheckpoints(h *tape.Header, file string, stderr io.Writer) (*checkpoint.File, error) {
	f, err := checkpoint.Open(file, checkpoint.RecordingOf(h))
	if err != nil {
		return nil, err
	}
	if d := f.Damage(); d != nil {
		fmt.Fprintf(stderr, "reprise: warning: %v: ignoring it and the rest of the file; using the %d whole checkpoints before it\n", d, len(f.Checkpoints()))
	}
	return f, nil
}

func describeEnd(e *vmm.End) string {
	switch e.Reason {
	case vmm.EndExited:
		return fmt.Sprintf("guest exited with status %d", e.Status)
	case vmm.EndFault:
		return "recorded guest fault reproduced: " + e.Fault
	}
	return "stopped where the recording was stopped"
}

// parseProbes parses the probe specs given on the command line and in
// file (none if "").
func parseProbes(specs []string, file string) ([]probes.Spec, error) {
	var all []probes.Spec
	if len(specs) > 0 {
		s, err := probes.ParseSpecs(specs)
		if err != nil {
			return nil, err
		}
		all = append(all, s...)
	}
	if file != "" {
		s, err := probes.ParseFile(file)
		if err != nil {
			return nil, err
		}
		all = append(all, s...)
	}
	return all, nil
}

// probePlan parses the probe specs and resolves them against the image the
// recording embeds.
func probePlan(rec *replayer.Recording, specs []string, file string) (*probes.Plan, error) {
	all, err := parseProbes(specs, file)
	if err != nil {
		return nil, err
	}
	img, err := rec.Image()
	if err != nil {
		return nil, err
	}
	return probes.Resolve(all, img)
}

// linuxProbeSet parses the probe specs for a Linux program's replay (with
// the C library's lock probes if locks) and checks them against the
// program's executable and libraries, objs.
func linuxProbeSet(objs []*elffile.File, specs []string, file string, locks bool) (*probes.Set, error) {
	all, err := parseProbes(specs, file)
	if err != nil {
		return nil, err
	}
	if locks {
		s, err := pthreadProbes(objs)
		if err != nil {
			return nil, err
		}
		all = append(all, s...)
	}
	set, err := probes.NewSet(all)
	if err != nil {
		return nil, err
	}
	return set, set.Check(objs)
}

// pthreadProbes are the C library's lock probes for a program made of
// objs: musl's or glibc's set, without the functions its C library lacks.
func pthreadProbes(objs []*elffile.File) ([]probes.Spec, error) {
	if !probes.Defines(objs, "pthread_mutex_lock") {
		return nil, errors.New("--locks: the program's files define no pthread_mutex_lock (a static program without threads, or a C library reprise does not know)")
	}
	return probes.Available(lockops.PthreadProbes(probes.Defines(objs, "gnu_get_libc_version")), objs)
}

// replayToDB replays into the DB at dir: whole, in `jobs` segments at
// once, or the share `segment` ("I/N") of them.
func replayToDB(ctx context.Context, opts replayer.Options, dir string, jobs int, segment string, stderr io.Writer) (res *replayer.Result, run *eventdb.Run, err error) {
	created, err := claimDBDir(dir)
	if err != nil {
		return nil, nil, err
	}
	db, err := eventdb.Open(dir, nil)
	if err != nil {
		return nil, nil, dbError(dir, err)
	}
	defer func() {
		db.Close()
		if created && run == nil {
			os.RemoveAll(dir) // made for a replay that stored nothing
		}
	}()
	switch {
	case jobs > 0:
		return replayer.ParallelToDB(ctx, opts, db, jobs)
	case segment != "":
		var i, n int
		if k, _ := fmt.Sscanf(segment, "%d/%d", &i, &n); k != 2 || n < 1 || i < 1 || i > n {
			return nil, nil, &exitError{exitUsage, fmt.Errorf("--segment %q: want I/N, 1 <= I <= N", segment)}
		}
		total, err := replayer.Segments(opts)
		if err != nil {
			return nil, nil, err
		}
		from, to := replayer.Group(total, i-1, n)
		if from == to {
			return nil, nil, &exitError{exitUsage, fmt.Errorf("--segment %s: the tape has %d segments, fewer than %d shares", segment, total, n)}
		}
		fmt.Fprintf(stderr, "reprise: segment %s: the replay's segments %d to %d of %d\n", segment, from+1, to, total)
		return replayer.SegmentsToDB(ctx, opts, db, from, to, total)
	}
	return replayer.ToDB(ctx, opts, db)
}

// reportProbeSites says how the replay patched each probe site: exits
// from CPL3 on one line, each int3 (the costlier trap) with its reason.
func reportProbeSites(w io.Writer, sites []replayer.ProbeSite) {
	var exits []string
	for _, s := range sites {
		if s.Patch == probes.PatchExit {
			exits = append(exits, s.Where)
		}
	}
	if len(exits) > 0 {
		fmt.Fprintf(w, "reprise: probe sites exiting from CPL3: %s\n", strings.Join(exits, ", "))
	}
	for _, s := range sites {
		if s.Patch != probes.PatchExit {
			fmt.Fprintf(w, "reprise: probe site %s: %v (%s)\n", s.Where, s.Patch, s.Why)
		}
	}
}

// reportCheckpoints warns of the checkpoints a run skipped, and says how
// many it wrote and their sizes:
// the first holds all of RAM, the others the pages that changed.
func reportCheckpoints(w io.Writer, file string, taken []checkpoint.Summary, skipped []string) {
	for _, s := range skipped {
		fmt.Fprintf(w, "reprise: warning: no checkpoint at %s\n", s)
	}
	if len(taken) == 0 {
		return
	}
	var rest int64
	for _, c := range taken[1:] {
		rest += c.Bytes
	}
	avg := int64(0)
	if n := len(taken); n > 1 {
		avg = rest / int64(n-1)
	}
	fmt.Fprintf(w, "reprise: wrote %d checkpoints to %s: the first %s, then %s each on average\n",
		len(taken), file, humanBytes(taken[0].Bytes), humanBytes(avg))
}

// claimDBDir checks that an event DB may be written in dir: dir is absent
// (created says so: it is made), an empty directory, or holds an event DB
// that runs are added to. Anything else is refused before a byte is
// written: --db and merge -o into a directory of other files wrote a DB
// among them.
func claimDBDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, &exitError{exitFailure, fmt.Errorf("event database %s: %w", dir, err)}
	case len(entries) == 0:
		return false, nil
	}
	db, err := eventdb.Open(dir, &eventdb.Options{ReadOnly: true})
	switch {
	case err == nil:
		return false, db.Close()
	case errors.Is(err, eventdb.ErrNotDB):
		return false, &exitError{exitFailure, fmt.Errorf("%s holds files but no event database; reprise writes one only into a new or empty directory, or adds runs to one it wrote", dir)}
	}
	return false, &exitError{exitFailure, dbError(dir, err)}
}

// maxListedFiles bounds the host files reportHostFiles names: a tape may
// list thousands.
const maxListedFiles = 16

// reportHostFiles says which host files a replay of the program l may
// read again: those it read when recorded, read, that the tape does not
// pack.
func reportHostFiles(w io.Writer, l *tape.Linux, read []tape.File) {
	var names []string
	for _, f := range read {
		if _, packed := l.Packed(f.Host, f.Size, f.SHA256); !packed {
			names = append(names, strconv.Quote(f.Host)) // quoted: a forged name may hold control characters
		}
	}
	n := len(names)
	if n == 0 {
		return
	}
	more := ""
	if n > maxListedFiles {
		names, more = names[:maxListedFiles], fmt.Sprintf(" and %d more", n-maxListedFiles)
	}
	fmt.Fprintf(w, "reprise: replay reads %d host files the tape names, each only if it is a regular file of the recorded size and SHA-256: %s%s\n",
		n, strings.Join(names, ", "), more)
}
