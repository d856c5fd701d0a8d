package lockops_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/lockops"
)

// hit is one probe event of a synthetic run: the probe's name, the
// thread, the argument.
type hit struct {
	probe  string
	thread uint32
	arg    uint64
}

// scan stores hits, in order, as a run whose probes are the C library's
// set (lockops.PthreadProbes) and returns the operations Scan rebuilds,
// one "kind mode lock thread" line each.
func scan(t *testing.T, hits []hit) []string {
	t.Helper()
	db, err := eventdb.Open(filepath.Join(t.TempDir(), "db"), nil)
	require.NoError(t, err)
	defer db.Close()
	var table []eventdb.Probe
	ids := map[string]uint32{}
	for i, spec := range lockops.PthreadProbes(true) {
		name, rest, _ := strings.Cut(spec, "=")
		var args []string
		if _, a, ok := strings.Cut(rest, " "); ok {
			n, _, _ := strings.Cut(a, "=")
			args = []string{n}
		}
		ids[name] = uint32(i + 1)
		table = append(table, eventdb.Probe{ID: uint32(i + 1), Name: name, Spec: spec, Return: strings.Contains(rest, "%return"), Args: args})
	}
	run, in, err := db.NewRun("synthetic", table, "")
	require.NoError(t, err)
	for i, h := range hits {
		id, ok := ids[h.probe]
		require.True(t, ok, h.probe)
		kind := eventdb.KindProbeEntry
		if strings.HasSuffix(strings.Split(h.probe, ".")[0], "ed") {
			kind = eventdb.KindProbeReturn
		}
		require.NoError(t, in.Add(&eventdb.Event{Kind: kind, Thread: h.thread, Pos: eventdb.Position{Exit: uint64(i)},
			Time: time.Duration(i) * time.Microsecond, Probe: id, Addr: 0x1000, Args: []uint64{h.arg}}))
	}
	require.NoError(t, in.Finish())
	var out []string
	require.NoError(t, lockops.Scan(db, run, func(op *lockops.Op) error {
		mode := op.Mode.String()
		if op.RW {
			mode = map[bool]string{true: "read", false: "write"}[op.Shared]
		}
		out = append(out, fmt.Sprintf("%v %s %#x %d", op.Kind, mode, op.Lock, op.Thread))
		return nil
	}))
	return out
}

// musl's pthread_mutex_lock calls its timed lock when the lock is taken:
// the inner request is part of the outer one, one acquisition in all.
func TestNestedRequestIsOne(t *testing.T) {
	got := scan(t, []hit{
		{"lock", 1, 0xA}, {"timedlock", 1, 0xA}, {"timedlocked", 1, 0}, {"locked", 1, 0},
		{"unlock", 1, 0xA},
	})
	require.Equal(t, []string{"request lock 0xa 1", "acquired lock 0xa 1", "release lock 0xa 1"}, got)
}

// A condition wait releases its mutex at entry and takes it again at its
// return: a request and an acquisition.
func TestConditionWaitReleasesAndRetakes(t *testing.T) {
	got := scan(t, []hit{
		{"lock", 2, 0xB}, {"locked", 2, 0},
		{"condwait", 2, 0xB},
		{"condwaited", 2, 0},
		{"unlock", 2, 0xB},
	})
	require.Equal(t, []string{
		"request lock 0xb 2", "acquired lock 0xb 2",
		"release lock 0xb 2",
		"request lock 0xb 2", "acquired lock 0xb 2",
		"release lock 0xb 2",
	}, got)
}

// Reader-writer locks: read and write acquisitions keep their mode; a
// failed try is a failure; the one unlock releases either.
func TestReaderWriterOperations(t *testing.T) {
	got := scan(t, []hit{
		{"rdlock", 1, 0xC}, {"rdlocked", 1, 0},
		{"trywrlock", 2, 0xC}, {"trywrlocked", 2, 16}, // EBUSY
		{"rwunlock", 1, 0xC},
		{"wrlock", 2, 0xC}, {"wrlocked", 2, 0},
		{"rwunlock", 2, 0xC},
	})
	require.Equal(t, []string{
		"request read 0xc 1", "acquired read 0xc 1",
		"request write 0xc 2", "failed write 0xc 2",
		"release write 0xc 1",
		"request write 0xc 2", "acquired write 0xc 2",
		"release write 0xc 2",
	}, got)
}
