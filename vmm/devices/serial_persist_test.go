package devices_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/devices"
)

// serialRegs reads all eight ports, as the guest.
func serialRegs(s *devices.Serial) []byte {
	regs := make([]byte, devices.SerialPorts)
	for p := range regs {
		regs[p] = serialRead(s, uint16(p))
	}
	return regs
}

// serialBusy is a UART with every register set and the divisor latch
// mapped in (DLAB set).
func serialBusy(t *testing.T, out *bytes.Buffer) *devices.Serial {
	s := &devices.Serial{Out: out}
	for _, w := range []struct{ port, v byte }{
		{1, 0x05}, {4, 0x0b}, {7, 0x5a}, {3, 0x83}, {0, 0x0c}, {1, 0x01},
	} {
		require.NoError(t, s.PortWrite(uint16(w.port), []byte{w.v}))
	}
	return s
}

func TestSerialSaveRestore(t *testing.T) {
	var out, rout bytes.Buffer
	s := serialBusy(t, &out)
	r := &devices.Serial{Out: &rout}
	require.NoError(t, r.Restore(s.Save()))
	require.Equal(t, []byte{0x0c, 0x01, 0x01, 0x83, 0x0b, 0x60, 0xb0, 0x5a}, serialRegs(r))
	require.Equal(t, serialRegs(s), serialRegs(r))

	// The same next writes: into the divisor latch (nothing printed), then,
	// DLAB cleared, to the line; IER comes back as the guest set it.
	for _, u := range []*devices.Serial{s, r} {
		require.NoError(t, u.PortWrite(0, []byte{'x'}))
		require.NoError(t, u.PortWrite(3, []byte{0x03}))
		require.NoError(t, u.PortWrite(0, []byte{'y'}))
	}
	require.Equal(t, "y", rout.String())
	require.Equal(t, out.String(), rout.String())
	require.Equal(t, byte(0x05), serialRead(r, 1))
	require.Equal(t, serialRegs(s), serialRegs(r))
}

func TestSerialStateJSON(t *testing.T) {
	requireRoundTrip(t, devices.SerialState{IER: 0x0f, LCR: 0xff, MCR: 0x1f, Scratch: 0x80, DLL: 1, DLM: 0xfe})
}

func TestSerialRestoreRefuses(t *testing.T) {
	var out bytes.Buffer
	good := serialBusy(t, &out).Save()
	for _, tc := range []struct {
		name  string
		forge func(*devices.SerialState)
		field string
	}{
		{"IER bit 4", func(s *devices.SerialState) { s.IER = 0x15 }, "IER"},
		{"MCR bit 5", func(s *devices.SerialState) { s.MCR = 0x20 }, "MCR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &devices.Serial{}
			before := serialRegs(s)
			forged := good
			tc.forge(&forged)
			requireStateError(t, s.Restore(forged), "serial", tc.field)
			require.Equal(t, before, serialRegs(s), "a refused Restore changed the UART")
			require.Equal(t, devices.SerialState{}, s.Save())
		})
	}
}
