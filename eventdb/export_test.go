package eventdb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// exported mirrors the documented Export field names.
type exported struct {
	Run    uint32   `json:"run"`
	Seq    uint32   `json:"seq"`
	Kind   string   `json:"kind"`
	Thread uint32   `json:"thread"`
	Exit   uint64   `json:"exit"`
	Branch uint64   `json:"branch"`
	TimeNS int64    `json:"time_ns"`
	Probe  uint32   `json:"probe"`
	Addr   uint64   `json:"addr"`
	Args   []uint64 `json:"args"`
	Stack  []uint64 `json:"stack"`
}

func TestExport(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	ingest(t, db, genEvents(8, 100, 2)) // run 1: must not leak into run 2's export
	evs := genEvents(9, 20_000, 8)
	evs = append(evs, Event{Kind: KindUser, Thread: 1 << 31, Pos: Position{^uint64(0), ^uint64(0)},
		Seq: uint32(len(evs)), Time: -time.Millisecond, Addr: ^uint64(0), Args: []uint64{^uint64(0), 0}})
	run := ingest(t, db, evs)

	var buf bytes.Buffer
	require.NoError(t, db.Export(run.ID, &buf))

	var got []Event
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var x exported
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&x), sc.Text())
		require.Equal(t, run.ID, x.Run)
		k, err := ParseKind(x.Kind)
		require.NoError(t, err)
		got = append(got, Event{Kind: k, Thread: x.Thread, Pos: Position{x.Exit, x.Branch}, Seq: x.Seq,
			Time: time.Duration(x.TimeNS), Probe: x.Probe, Addr: x.Addr, Args: x.Args, Stack: x.Stack})
	}
	require.NoError(t, sc.Err())
	requireEvents(t, keyOrder(evs), got, "export")

	require.ErrorIs(t, db.Export(42, &buf), ErrNoRun)
}
