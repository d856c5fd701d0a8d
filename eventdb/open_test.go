package eventdb

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Children that hold a DB open until their stdin closes.
const (
	holdChild   = "hold"
	holdChildRO = "hold-ro"
)

func hold(dir string, readOnly bool) error {
	db, err := Open(dir, &Options{ReadOnly: readOnly})
	if err != nil {
		return err
	}
	fmt.Println("open")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return db.Close()
}

// holdInChild starts a child process that opens dir and keeps it open
// until the returned function is called.
func holdInChild(t *testing.T, mode, dir string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "open\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child did not open %s: %q, %v", dir, line, err)
	}
	return func() {
		require.NoError(t, stdin.Close())
		require.NoError(t, cmd.Wait(), "child")
	}
}

// TestInUse: a DB another process has open, for writing or reading,
// cannot be opened either way, and the error says so.
func TestInUse(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	ingest(t, db, genEvents(1, 100, 2))
	require.NoError(t, db.Close())

	for _, holder := range []string{holdChild, holdChildRO} {
		release := holdInChild(t, holder, dir)
		for _, readOnly := range []bool{false, true} {
			_, err := Open(dir, &Options{ReadOnly: readOnly})
			require.ErrorIs(t, err, ErrInUse, "held by %s, read-only %v", holder, readOnly)
			require.ErrorContains(t, err, dir)
		}
		release()
	}
	db, err = Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err, "once the other process closed it")
	require.NoError(t, db.Close())
}

// TestOpenReadOnly: a read-only open refuses what is not an event DB,
// creating and writing nothing, and reads an event DB without changing a
// byte of it.
func TestOpenReadOnly(t *testing.T) {
	ro := &Options{ReadOnly: true}
	base := t.TempDir()

	missing := filepath.Join(base, "missing")
	_, err := Open(missing, ro)
	require.ErrorIs(t, err, ErrNotDB)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, missing)
	require.NoDirExists(t, missing)

	other := filepath.Join(base, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	notes := filepath.Join(other, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("not a DB"), 0o644))
	empty := filepath.Join(base, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	for _, dir := range []string{other, empty, notes} {
		before := snapshot(t, base)
		_, err = Open(dir, ro)
		require.ErrorIs(t, err, ErrNotDB, dir)
		require.ErrorContains(t, err, dir)
		require.Equal(t, before, snapshot(t, base), "%s: files created", dir)
	}

	// Pebble DBs that are not event DBs: an empty one (which a writable
	// Open would make an event DB) and one with other keys.
	bare := filepath.Join(base, "bare")
	pdb, err := pebble.Open(bare, nil)
	require.NoError(t, err)
	require.NoError(t, pdb.Close())
	_, err = Open(bare, ro)
	require.ErrorIs(t, err, ErrNotDB)
	require.ErrorContains(t, err, "empty Pebble DB")
	pdb, err = pebble.Open(bare, nil)
	require.NoError(t, err)
	_, _, err = pdb.Get(codec.MetaVersionKey)
	require.ErrorIs(t, err, pebble.ErrNotFound, "a read-only open wrote the schema version")
	require.NoError(t, pdb.Set([]byte("k"), []byte("v"), pebble.Sync))
	require.NoError(t, pdb.Close())
	_, err = Open(bare, ro)
	require.ErrorIs(t, err, ErrNotDB)
	require.ErrorContains(t, err, "without an eventdb schema version")

	// An event DB reads as usual; every write is refused.
	dir := filepath.Join(base, "events")
	db, err := Open(dir, nil)
	require.NoError(t, err)
	evs := genEvents(3, 1000, 4)
	ingest(t, db, evs)
	require.NoError(t, db.Close())
	before := snapshot(t, dir)
	db, err = Open(dir, ro)
	require.NoError(t, err)
	runs, err := db.Runs()
	require.NoError(t, err)
	require.Len(t, runs, 1)
	requireEvents(t, keyOrder(evs), collect(t, db, Query{Run: 1}), "read-only")
	_, _, err = db.NewRun("t", nil, "")
	require.ErrorIs(t, err, ErrReadOnly)
	require.ErrorIs(t, db.SetHost(1, &Host{}), ErrReadOnly)
	require.ErrorIs(t, db.SetSymbols(NewSymbols("img", nil)), ErrReadOnly)
	require.ErrorIs(t, db.Compact(), ErrReadOnly)
	require.NoError(t, db.Close())
	require.Equal(t, before, snapshot(t, dir), "a read-only open changed the DB")
}

// snapshot lists the files under dir with their sizes and modification
// times, except Pebble's LOCK file, which every open truncates.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() == "LOCK" {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[path] = fmt.Sprintf("%v %d %v", info.IsDir(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	require.NoError(t, err)
	return files
}
