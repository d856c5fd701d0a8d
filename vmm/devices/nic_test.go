package devices_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/devices"
	"github.com/reprise-vm/reprise/vmm/memory"
)

const rxRing, txRing, bufs = 0x10000, 0x11000, 0x20000

func port(t *testing.T, n *devices.NIC, off uint16, v uint32) {
	t.Helper()
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, v)
	require.NoError(t, n.PortWrite(off, b))
}

func putDesc(t *testing.T, ram *memory.RAM, ring uint64, i int, buf uint64, length uint16) {
	b := make([]byte, abi.NICDescSize)
	binary.LittleEndian.PutUint64(b, buf)
	binary.LittleEndian.PutUint16(b[8:], length)
	require.NoError(t, ram.Write(ring+uint64(i%abi.NICRing)*abi.NICDescSize, b))
}

func desc(t *testing.T, ram *memory.RAM, ring uint64, i int) (length, flags uint16) {
	b := make([]byte, 4)
	require.NoError(t, ram.Read(ring+uint64(i%abi.NICRing)*abi.NICDescSize+8, b))
	return binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:])
}

func TestNICReceive(t *testing.T) {
	ram := newRAM(t)
	n := devices.NewNIC(ram, true)
	posted := 0
	n.RXPosted = func() { posted++ }
	info := make([]byte, 4)
	n.PortRead(0x10, info)
	require.Equal(t, uint32(1), binary.LittleEndian.Uint32(info))

	port(t, n, 0x0, rxRing)
	for i := 0; i < 3; i++ {
		putDesc(t, ram, rxRing, i, bufs+uint64(i)*2048, 1536)
	}
	port(t, n, 0x8, 3)
	require.Equal(t, 1, posted)
	require.Equal(t, 3, n.RXFree())

	f1, f2 := bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 1514)
	d := n.Deliver([][]byte{f1, f2})
	require.Len(t, d, 8)
	require.Equal(t, 1, n.RXFree())
	l, fl := desc(t, ram, rxRing, 0)
	require.Equal(t, uint16(60), l)
	require.Equal(t, uint16(abi.NICDone), fl)
	got := make([]byte, 60)
	require.NoError(t, ram.Read(bufs, got))
	require.Equal(t, f1, got)
	l, _ = desc(t, ram, rxRing, 1)
	require.Equal(t, uint16(1514), l)

	// A frame too big for its buffer comes back as an empty buffer.
	putDesc(t, ram, rxRing, 3, bufs+3*2048, 100)
	port(t, n, 0x8, 4)
	n.Deliver([][]byte{f2, f2})
	l, fl = desc(t, ram, rxRing, 2)
	require.Equal(t, uint16(1514), l)
	require.Equal(t, uint16(abi.NICDone), fl)
	l, fl = desc(t, ram, rxRing, 3)
	require.Equal(t, uint16(0), l)
	require.Equal(t, uint16(abi.NICDone), fl)
	require.Equal(t, uint64(1), n.Bad)

	// Posting more than a ring's worth is refused.
	port(t, n, 0x8, 4+abi.NICRing+1)
	require.Equal(t, 0, n.RXFree())
}

func TestNICTransmit(t *testing.T) {
	ram := newRAM(t)
	n := devices.NewNIC(ram, true)
	var sent [][]byte
	n.Send = func(f []byte) error { sent = append(sent, f); return nil }
	port(t, n, 0x4, txRing)
	frame := bytes.Repeat([]byte{7}, 100)
	require.NoError(t, ram.Write(bufs, frame))
	putDesc(t, ram, txRing, 0, bufs, 100)
	putDesc(t, ram, txRing, 1, ram.Size()-10, 100) // runs past RAM
	putDesc(t, ram, txRing, 2, bufs, 0)            // empty
	putDesc(t, ram, txRing, 3, bufs, 2000)         // larger than a frame
	port(t, n, 0xC, 4)
	require.Equal(t, [][]byte{frame}, sent)
	require.Equal(t, uint64(3), n.Bad)
	for i := 0; i < 4; i++ {
		_, fl := desc(t, ram, txRing, i)
		require.Equal(t, uint16(abi.NICDone), fl, "descriptor %d must come back", i)
	}
	// A TX tail beyond a ring's worth is refused; a ring outside RAM too.
	port(t, n, 0xC, 4+abi.NICRing+1)
	require.Len(t, sent, 1)
	port(t, n, 0x4, uint32(ram.Size()-8))
	putDesc(t, ram, txRing, 0, bufs, 100)
	port(t, n, 0xC, 1)
	require.Len(t, sent, 1)
}
