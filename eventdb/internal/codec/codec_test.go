package codec

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEventKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	small := func() uint64 { return []uint64{0, 1, 255, 256, 1 << 32, math.MaxUint64}[r.IntN(6)] }
	keys := make([]EventKey, 2000)
	for i := range keys {
		keys[i] = EventKey{Run: uint32(small()), Kind: uint8(small()), Thread: uint32(small()),
			Exit: small(), Branch: small(), Seq: uint32(small())}
	}
	for i := range keys {
		a := &keys[i]
		ea := a.Append(nil)
		require.Len(t, ea, EventKeyLen)
		back, err := DecodeEventKey(ea)
		require.NoError(t, err)
		require.Equal(t, *a, back)
		b := &keys[(i*7+3)%len(keys)]
		want := cmp.Or(cmp.Compare(a.Run, b.Run), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Thread, b.Thread),
			cmp.Compare(a.Exit, b.Exit), cmp.Compare(a.Branch, b.Branch), cmp.Compare(a.Seq, b.Seq))
		require.Equal(t, want, bytes.Compare(ea, b.Append(nil)), "%+v vs %+v", a, b)
	}
	k := EventKey{Run: 3, Kind: 4, Thread: 5}
	require.True(t, bytes.HasPrefix(k.Append(nil), ThreadEvents(3, 4, 5)))
	require.True(t, bytes.HasPrefix(k.Append(nil), KindEvents(3, 4)))
	require.True(t, bytes.HasPrefix(k.Append(nil), RunEvents(3)))

	_, err := DecodeEventKey(make([]byte, 29))
	require.Error(t, err)
	_, err = DecodeEventKey(make([]byte, 30))
	require.Error(t, err)
}

// TestEventKeyGolden pins the layout: a change here is a schema change.
func TestEventKeyGolden(t *testing.T) {
	k := EventKey{Run: 0x01020304, Kind: 3, Thread: 0x0a0b0c0d, Exit: 0x1112131415161718, Branch: 0x2122232425262728, Seq: 0x31323334}
	require.Equal(t, []byte{'e', 1, 2, 3, 4, 3, 0xa, 0xb, 0xc, 0xd,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
		0x31, 0x32, 0x33, 0x34}, k.Append(nil))
	require.Equal(t, []byte{'m', 'r', 0, 0, 0, 7}, RunKey(7))
	require.Equal(t, []byte{'m', 'v'}, MetaVersionKey)
	v := Value{Time: -1, Probe: 2, Addr: 0x400000, Args: []uint64{300}, Stack: []uint64{0x400010, 0x400000}}
	require.Equal(t, []byte{1, 0x01, 0x02, 0x80, 0x80, 0x80, 0x02, 0x01, 0xac, 0x02, 0x02, 0x20, 0x1f}, AppendValue(nil, &v))
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte{'e', 0, 0, 0, 1}, []byte{'e', 0, 0, 0, 2}},
		{[]byte{'e', 0, 0, 0, 0xff}, []byte{'e', 0, 0, 1}},
		{[]byte{'e', 0xff, 0xff, 0xff, 0xff}, []byte{'f'}},
		{[]byte{0xff, 0xff}, nil},
	} {
		in := append([]byte(nil), tc.in...)
		require.Equal(t, tc.want, PrefixEnd(in))
		require.Equal(t, tc.in, in, "input untouched")
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, v := range []Value{
		{},
		{Time: math.MaxInt64, Probe: math.MaxUint32, Addr: math.MaxUint64},
		{Time: math.MinInt64, Args: []uint64{0, 1, math.MaxUint64}},
		{Addr: 0xffffffff80001000, Stack: []uint64{0x400000, 0xffffffff80002000, 0, math.MaxUint64, 1}},
	} {
		b := AppendValue(nil, &v)
		var got Value
		require.NoError(t, DecodeValue(&got, b))
		if len(v.Args) == 0 {
			got.Args = v.Args
		}
		if len(v.Stack) == 0 {
			got.Stack = v.Stack
		}
		require.Equal(t, v, got)
		// Every strict prefix fails cleanly, and so does one more byte.
		for i := range b {
			require.Error(t, DecodeValue(&got, b[:i]), "prefix %d of %x", i, b)
		}
		require.Error(t, DecodeValue(&got, append(b, 0)))
	}
	// A probe id that overflows 32 bits.
	require.ErrorContains(t, DecodeValue(new(Value), []byte{1, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0}), "overflows 32 bits")
}

// FuzzValueDecodersAgree: the fast decoder and the explaining one accept
// exactly the same values.
func FuzzValueDecodersAgree(f *testing.F) {
	f.Add(AppendValue(nil, &Value{Time: 5, Probe: 1, Addr: 0x400000, Args: []uint64{1, 2}, Stack: []uint64{0x400100}}))
	f.Add([]byte{1, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var v Value
		fast := decodeValue(&v, b)
		slow := checkValue(b)
		if (fast == nil) != (slow == nil) {
			t.Fatalf("%x: fast decoder says %v, slow one %v", b, fast, slow)
		}
	})
}
