package eventdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The killed-ingest test re-executes the test binary as a child that
// ingests into a DB and SIGKILLs itself before Finish.
const (
	childEnv      = "EVENTDB_CHILD" // "sync" or "nosync" (killed ingest), holdChild or holdChildRO: run as the child
	childDirEnv   = "EVENTDB_CHILD_DIR"
	childBatch    = 100  // events per committed batch
	childAdded    = 1050 // events added before the kill: 10 batches + 50 buffered
	childEvtsSeed = 7
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		var err error
		switch dir := os.Getenv(childDirEnv); mode {
		case holdChild, holdChildRO:
			err = hold(dir, mode == holdChildRO)
		default:
			err = child(mode, dir)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0) // a killed ingest's child never gets here
	}
	os.Exit(m.Run())
}

func child(mode, dir string) error {
	db, err := Open(dir, &Options{Sync: mode == "sync", BatchEvents: childBatch})
	if err != nil {
		return err
	}
	_, in, err := db.NewRun("killed.tape", testProbes, "")
	if err != nil {
		return err
	}
	evs := genEvents(childEvtsSeed, childAdded, 4)
	for i := range evs {
		if err := in.Add(&evs[i]); err != nil {
			return err
		}
	}
	return syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

func runChild(t *testing.T, mode, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "child: %v\n%s", err, out)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child did not die of SIGKILL: %v\n%s", err, out)
}

func TestKilledIngest(t *testing.T) {
	for _, mode := range []string{"sync", "nosync"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()

			// Run 1 finishes normally; the child's run 2 is killed.
			db, err := Open(dir, nil)
			require.NoError(t, err)
			done := genEvents(1, 5000, 4)
			ingest(t, db, done)
			require.NoError(t, db.Close())

			runChild(t, mode, dir)

			// A read-only open sees the killed run as it will be: Pebble
			// replays the WAL into memory, and writes nothing.
			before := snapshot(t, dir)
			ro, err := Open(dir, &Options{ReadOnly: true})
			require.NoError(t, err, "read-only open after a killed ingest")
			runs, err := ro.Runs()
			require.NoError(t, err)
			require.Len(t, runs, 2)
			require.False(t, runs[1].Complete)
			require.Equal(t, runs[1].Events, uint64(len(collect(t, ro, Query{Run: 2}))))
			require.NoError(t, ro.Close())
			require.Equal(t, before, snapshot(t, dir), "a read-only open changed the DB")

			db, err = Open(dir, nil)
			require.NoError(t, err, "open after a killed ingest")
			defer db.Close()
			staged, err := os.ReadDir(filepath.Join(dir, stageDir))
			require.NoError(t, err)
			require.Empty(t, staged, "a writable open leaves no staged sstable of the killed ingest")

			runs, err = db.Runs()
			require.NoError(t, err)
			require.Len(t, runs, 2)
			require.True(t, runs[0].Complete)
			require.Equal(t, uint64(len(done)), runs[0].Events)
			killed := runs[1]
			require.Equal(t, uint32(2), killed.ID)
			require.False(t, killed.Complete)
			require.Equal(t, "killed.tape", killed.Tape)
			require.Equal(t, testProbes, killed.Probes)

			// The count names exactly the events present: whole batches,
			// all of them with Sync.
			require.Zero(t, killed.Events%childBatch, "events %d: a partial batch", killed.Events)
			if mode == "sync" {
				require.Equal(t, uint64(childAdded/childBatch*childBatch), killed.Events)
			}
			require.LessOrEqual(t, killed.Events, uint64(childAdded))
			want := keyOrder(genEvents(childEvtsSeed, childAdded, 4)[:killed.Events])
			requireEvents(t, want, collect(t, db, Query{Run: 2}), "killed run")
			t.Logf("%s: %d of %d events survived the kill", mode, killed.Events, childAdded)

			// Run 1 is untouched, and the next run is 3.
			requireEvents(t, keyOrder(done), collect(t, db, Query{Run: 1}), "run 1")
			run, in, err := db.NewRun("next.tape", nil, "")
			require.NoError(t, err)
			require.Equal(t, uint32(3), run.ID)
			require.NoError(t, in.Add(&Event{Kind: KindSample, Thread: 1, Addr: 0x401000}))
			require.NoError(t, in.Finish())
			require.Len(t, collect(t, db, Query{Run: 3}), 1)
			require.Equal(t, killed.Events, uint64(len(collect(t, db, Query{Run: 2}))))
		})
	}
}

// TestReopenKeepsIDs: runs whose records made it but no batch (ingests
// abandoned, as if killed) still hold their ids after a reopen.
func TestReopenKeepsIDs(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		run, in, err := db.NewRun("t"+strconv.Itoa(i), nil, "")
		require.NoError(t, err)
		require.Equal(t, uint32(i), run.ID)
		_ = in // never finished, never closed: as if killed
	}
	require.NoError(t, db.Close())
	db, err = Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	runs, err := db.Runs()
	require.NoError(t, err)
	require.Len(t, runs, 3)
	for _, r := range runs {
		require.False(t, r.Complete)
		require.Zero(t, r.Events)
	}
	run, _, err := db.NewRun("t4", nil, "")
	require.NoError(t, err)
	require.Equal(t, uint32(4), run.ID)
}
