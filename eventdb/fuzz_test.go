package eventdb

import (
	"testing"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeValue feeds arbitrary bytes to the event value decoder: it
// must never panic, and whatever it accepts must survive a round trip.
//
//	go test ./eventdb -run '^$' -fuzz FuzzDecodeValue -fuzztime 30s
func FuzzDecodeValue(f *testing.F) {
	for _, e := range genEvents(5, 50, 3) {
		f.Add(codec.AppendValue(nil, &codec.Value{Time: int64(e.Time), Probe: e.Probe, Addr: e.Addr, Args: e.Args, Stack: e.Stack}))
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var v codec.Value
		if err := codec.DecodeValue(&v, b); err != nil {
			return
		}
		again := codec.AppendValue(nil, &v)
		var w codec.Value
		require.NoError(t, codec.DecodeValue(&w, again))
		require.Equal(t, v, w)
		require.LessOrEqual(t, len(again), len(b), "re-encoding is minimal")
	})
}

// FuzzDecodeRun does the same for run records.
func FuzzDecodeRun(f *testing.F) {
	f.Add(appendRun(nil, &Run{ID: 1, Tape: "x.tape", Probes: testProbes, Sampling: "s", Note: "n", Events: 99, Complete: true}))
	f.Add(appendRun(nil, &Run{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRun(1, b)
		if err != nil {
			return
		}
		again, err := decodeRun(1, appendRun(nil, &r))
		require.NoError(t, err)
		require.Equal(t, r, again)
	})
}
