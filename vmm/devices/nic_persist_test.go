package devices_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/devices"
	"github.com/reprise-vm/reprise/vmm/memory"
)

const txFrames = 0x50000

// nicBusy drives a NIC through its ports into a state with both rings set,
// the RX indices wrapped past the ring's end, frames sent and one refused.
func nicBusy(t *testing.T, ram *memory.RAM) *devices.NIC {
	n := devices.NewNIC(ram, true)
	n.Send = func([]byte) error { return nil }
	port(t, n, 0x0, rxRing)
	port(t, n, 0x4, txRing)
	postRX := func() {
		for i := range abi.NICRing {
			putDesc(t, ram, rxRing, i, bufs+uint64(i)*2048, 2048)
		}
	}
	postRX()
	for i := range abi.NICRing {
		frame := bytes.Repeat([]byte{byte(i)}, 60+i)
		require.NoError(t, ram.Write(txFrames+uint64(i)*2048, frame))
		putDesc(t, ram, txRing, i, txFrames+uint64(i)*2048, uint16(len(frame)))
	}
	putDesc(t, ram, txRing, 5, txFrames, 0) // an empty frame: refused
	port(t, n, 0x8, 62)
	n.Deliver(nicFrames(60))
	postRX() // the guest gives the filled buffers back
	port(t, n, 0x8, 60+abi.NICRing)
	n.Deliver(nicFrames(8))
	port(t, n, 0xC, 6)
	require.Equal(t, devices.NICState{
		Attached: true, RXRing: rxRing, TXRing: txRing,
		RXHead: 68, RXTail: 124, TXHead: 6, Bad: 1,
	}, n.Save())
	return n
}

func nicFrames(k int) [][]byte {
	fs := make([][]byte, k)
	for i := range fs {
		fs[i] = bytes.Repeat([]byte{0xf0 | byte(i)}, 100+i)
	}
	return fs
}

func TestNICSaveRestore(t *testing.T) {
	ram := newRAM(t)
	n := nicBusy(t, ram)
	// The restored NIC gets a copy of guest RAM, as from a snapshot.
	ram2 := newRAM(t)
	ram2.Reach(ram2.Size())
	copy(ram2.Mapping(), ram.Mapping())
	r := devices.NewNIC(ram2, true)
	posted := 0
	r.RXPosted = func() { posted++ }
	require.NoError(t, r.Restore(n.Save()))
	require.Zero(t, posted, "Restore must not report buffers posted before the snapshot")
	require.Equal(t, n.Save(), r.Save())
	require.Equal(t, uint32(1), readPort(r, 0x10))
	require.Equal(t, readPort(n, 0x10), readPort(r, 0x10))
	require.Equal(t, 56, r.RXFree())
	require.Equal(t, n.RXFree(), r.RXFree())

	// The same next deliveries and transmissions, to the same slots.
	frames := nicFrames(3)
	require.Equal(t, n.Deliver(frames), r.Deliver(frames))
	var sent, rsent [][]byte
	n.Send = func(f []byte) error { sent = append(sent, f); return nil }
	r.Send = func(f []byte) error { rsent = append(rsent, f); return nil }
	port(t, n, 0xC, 8)
	port(t, r, 0xC, 8)
	require.Len(t, rsent, 2)
	require.Equal(t, bytes.Repeat([]byte{6}, 66), rsent[0], "TX resumes at slot 6")
	require.Equal(t, sent, rsent)
	require.True(t, bytes.Equal(ram.Mapping(), ram2.Mapping()), "the two NICs wrote guest RAM differently")
	require.Equal(t, n.Save(), r.Save())
}

func TestNICStateJSON(t *testing.T) {
	requireRoundTrip(t, devices.NICState{
		Attached: true, RXRing: math.MaxUint32, TXRing: 0x1000,
		RXHead: math.MaxUint32 - 1, RXTail: 30, TXHead: 7, Bad: math.MaxUint64,
	})
}

func TestNICRestoreRefuses(t *testing.T) {
	good := nicBusy(t, newRAM(t)).Save()
	for _, tc := range []struct {
		name  string
		forge func(*devices.NICState)
		field string
	}{
		{"no backend behind it", func(s *devices.NICState) { s.Attached = false }, "Attached"},
		{"RX ring past 32 bits", func(s *devices.NICState) { s.RXRing = 1 << 32 }, "RXRing"},
		{"TX ring past 32 bits", func(s *devices.NICState) { s.TXRing = 1<<32 | txRing }, "TXRing"},
		{"more than a ring posted", func(s *devices.NICState) { s.RXTail = s.RXHead + abi.NICRing + 1 }, "RXTail"},
		{"tail behind head", func(s *devices.NICState) { s.RXTail = s.RXHead - 1 }, "RXTail"},
		{"received without a ring", func(s *devices.NICState) { s.RXRing = 0 }, "RXHead"},
		{"sent without a ring", func(s *devices.NICState) { s.TXRing = 0 }, "TXHead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := devices.NewNIC(newRAM(t), true)
			port(t, n, 0x0, 0x3000)
			port(t, n, 0x8, 9)
			before := n.Save()
			forged := good
			tc.forge(&forged)
			requireStateError(t, n.Restore(forged), "nic", tc.field)
			require.Equal(t, before, n.Save(), "a refused Restore changed the NIC")
			require.Equal(t, 9, n.RXFree())
		})
	}
	// The bounds are inclusive: a full ring may be posted.
	s := good
	s.RXTail = s.RXHead + abi.NICRing
	require.NoError(t, devices.NewNIC(newRAM(t), true).Restore(s))
}

// FuzzNICRestorable drives a NIC with arbitrary register writes and
// deliveries: whatever state the guest leaves it in, Restore must take.
func FuzzNICRestorable(f *testing.F) {
	op := func(kind byte, v uint32) []byte { return binary.LittleEndian.AppendUint32([]byte{kind}, v) }
	f.Add(bytes.Join([][]byte{op(0, rxRing), op(2, 64), op(4, 7), op(2, 100), op(4, 3), op(1, txRing), op(3, 5)}, nil))
	f.Add(bytes.Join([][]byte{op(2, 3), op(0, 0xffff_fff0), op(2, 2), op(4, 5), op(3, 1), op(1, 0), op(3, 70)}, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		ram, err := memory.New(8 << 20)
		require.NoError(t, err)
		defer ram.Close()
		n := devices.NewNIC(ram, len(in)%2 == 0)
		for ; len(in) >= 5; in = in[5:] {
			kind, v := in[0]%5, binary.LittleEndian.Uint32(in[1:])
			if kind == 4 {
				n.Deliver(nicFrames(int(v % 9)))
			} else {
				b := binary.LittleEndian.AppendUint32(nil, v)
				require.NoError(t, n.PortWrite(uint16(kind)*4, b))
			}
			s := n.Save()
			r := devices.NewNIC(ram, s.Attached)
			require.NoError(t, r.Restore(s), "state %+v", s)
			require.Equal(t, s, r.Save())
		}
	})
}
