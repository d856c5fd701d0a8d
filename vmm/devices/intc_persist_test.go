package devices_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/devices"
)

// intcWrite and intcRead go through the controller's ports, as the guest.
func intcWrite(t *testing.T, c *devices.Intc, port uint16, v uint32) {
	t.Helper()
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, v)
	require.NoError(t, c.PortWrite(port, b))
}

func intcRegs(c *devices.Intc) (mask, pending uint32) { return readPort(c, 0), readPort(c, 1) }

// intcDrain injects every deliverable vector, then unmasks all lines and
// injects the rest: the order a guest would see them in.
func intcDrain(t *testing.T, c *devices.Intc) []uint8 {
	var vs []uint8
	for range 2 {
		for v, ok := c.Next(); ok; v, ok = c.Next() {
			vs = append(vs, v)
			c.Ack(v)
		}
		intcWrite(t, c, 0, 0)
	}
	return vs
}

// intcBusy is a controller with lines 2, 9 and 31 pending, 2 and 31
// masked, line 5 raised and acknowledged.
func intcBusy(t *testing.T) *devices.Intc {
	c := devices.NewIntc(0x20, nil)
	for _, line := range []uint32{2, 5, 9, 31} {
		intcWrite(t, c, 1, line)
	}
	intcWrite(t, c, 0, 1<<2|1<<31)
	v, ok := c.Next()
	require.True(t, ok)
	require.Equal(t, uint8(0x25), v)
	c.Ack(v)
	return c
}

func TestIntcSaveRestore(t *testing.T) {
	c := intcBusy(t)
	s := c.Save()

	var woke atomic.Int32
	r := devices.NewIntc(0x20, func() { woke.Add(1) })
	r.Raise(0) // Restore replaces the pending set; it does not add to it
	woke.Store(0)
	require.NoError(t, r.Restore(s))
	require.Zero(t, woke.Load(), "Restore must not wake a vCPU that is not running")

	mask, pending := intcRegs(r)
	require.Equal(t, uint32(1<<2|1<<31), mask)
	require.Equal(t, uint32(1<<2|1<<9|1<<31), pending)
	wantMask, wantPending := intcRegs(c)
	require.Equal(t, wantMask, mask)
	require.Equal(t, wantPending, pending)
	require.Equal(t, c.Masked(31), r.Masked(31))
	require.Equal(t, c.Pending(), r.Pending())

	want := []uint8{0x29, 0x22, 0x3f}
	require.Equal(t, want, intcDrain(t, c))
	require.Equal(t, want, intcDrain(t, r))
}

func TestIntcStateJSON(t *testing.T) {
	requireRoundTrip(t, devices.IntcState{Base: 0xf0, Pending: 0x8000_0001, Mask: 0xffff_fffe})
}

func TestIntcRestoreRefuses(t *testing.T) {
	good := intcBusy(t).Save()
	for _, tc := range []struct {
		name  string
		forge func(*devices.IntcState)
		field string
	}{
		{"another base", func(s *devices.IntcState) { s.Base = 0x40 }, "Base"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := intcBusy(t)
			before := c.Save()
			s := good
			s.Pending, s.Mask = 1, 0 // would change the device if applied
			tc.forge(&s)
			requireStateError(t, c.Restore(s), "intc", tc.field)
			require.Equal(t, before, c.Save(), "a refused Restore changed the controller")
		})
	}
}
