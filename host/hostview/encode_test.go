package hostview

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomRecords returns n records of every kind, each with random values
// in exactly the fields its kind carries.
func randomRecords(rng *rand.Rand, n int) []Record {
	recs := make([]Record, n)
	t := int64(1e12)
	var exit uint64
	for i := range recs {
		k := Kind(1 + rng.IntN(int(kindLast)))
		f := fieldsOf[k]
		t += rng.Int64N(100000) - 1000 // mostly forward, sometimes back (two sources)
		r := Record{Kind: k, Time: t}
		if f&fDur != 0 {
			r.Dur = rng.Int64N(1 << 40)
		}
		if f&fExit != 0 {
			exit += uint64(rng.IntN(3))
			r.Exit = exit
		}
		if f&fCPU != 0 {
			r.CPU = uint32(rng.IntN(4))
		}
		if f&fTID != 0 {
			r.TID = rng.Uint32()
		}
		if f&fNext != 0 {
			r.Next = uint32(rng.IntN(70000))
		}
		if f&fCode != 0 {
			r.Code = uint32(rng.IntN(ExitInterrupted + 1))
		}
		if f&fArg != 0 {
			r.Arg = rng.Uint64()
		}
		if f&fText != 0 && rng.IntN(2) == 0 {
			r.Text = "reprise vcpu \x00 ü"[:rng.IntN(17)]
		}
		recs[i] = r
	}
	return recs
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var e Encoder
	for round := 0; round < 3; round++ {
		recs := randomRecords(rng, 2000)
		for i := range recs {
			require.NoError(t, e.Add(&recs[i]))
		}
		require.EqualValues(t, len(recs), e.Len())
		got, err := Decode(e.Bytes(), e.Len())
		require.NoError(t, err)
		require.Equal(t, recs, got)
		e.Reset()
	}
}

// TestRunRecordSize: a vCPU run record, written once per exit, must stay
// small or host tracing would grow tapes by more than their events.
func TestRunRecordSize(t *testing.T) {
	var e Encoder
	for i := 0; i < 1000; i++ {
		r := Record{Kind: KindRun, Time: 1e12 + int64(i)*25000, Dur: 18000, Exit: uint64(i + 1), Code: 2}
		require.NoError(t, e.Add(&r))
	}
	perRecord := float64(len(e.Bytes())) / 1000
	require.LessOrEqual(t, perRecord, 10.1, "bytes per run record")
}

func TestAddRejects(t *testing.T) {
	var e Encoder
	require.ErrorContains(t, e.Add(&Record{Kind: 0}), "unknown record kind 0")
	require.ErrorContains(t, e.Add(&Record{Kind: KindSwitch, Dur: 5}), "fields it does not carry")
	require.ErrorContains(t, e.Add(&Record{Kind: KindRun, Dur: -1}), "negative duration")
	require.ErrorContains(t, e.Add(&Record{Kind: KindComm, Text: string(make([]byte, MaxText+1))}), "bytes of text")
	require.Zero(t, e.Len(), "a rejected record adds nothing")
}

func TestDecodeRejects(t *testing.T) {
	var e Encoder
	require.NoError(t, e.Add(&Record{Kind: KindComm, TID: 7, Text: "stress"}))
	body := e.Bytes()
	_, err := Decode(body, 4)
	require.ErrorContains(t, err, "cannot fit")
	_, err = Decode(append(body[:len(body):len(body)], 1, 0, 0), 1)
	require.ErrorContains(t, err, "3 bytes left")
	bad := append([]byte(nil), body...)
	bad[0] = 99
	_, err = Decode(bad, 1)
	require.ErrorContains(t, err, "unknown kind 99")
	_, err = Decode(body[:len(body)-2], 1)
	require.ErrorContains(t, err, "text of 6 bytes")
}

func FuzzDecode(f *testing.F) {
	var e Encoder
	recs := randomRecords(rand.New(rand.NewPCG(3, 4)), 20)
	for i := range recs {
		_ = e.Add(&recs[i])
	}
	f.Add(e.Bytes(), e.Len())
	f.Fuzz(func(t *testing.T, body []byte, count uint32) {
		recs, err := Decode(body, count)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		var e Encoder
		for i := range recs {
			require.NoError(t, e.Add(&recs[i]))
		}
		require.Equal(t, string(body), string(e.Bytes()))
	})
}
