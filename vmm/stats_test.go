package vmm

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The time between KVM_RUNs is the VMM's, idle waits left out; the first
// entry has no exit before it.
func TestStatsSplitTheTimeAtEntries(t *testing.T) {
	var s Stats
	const us = time.Microsecond
	s.timeRun(10*us, 0, 40*us)         // the first: nothing before it is an exit's
	s.timeRun(45*us, 40*us, 70*us)     // 5µs in the VMM
	s.timeRun(1070*us, 70*us, 1100*us) // 1000µs, of which 993 idle
	s.Halted = 993 * us
	require.Equal(t, uint64(3), s.Entries)
	require.Equal(t, 85*us, s.InGuest)
	require.Equal(t, 1005*us, s.InVMM)
	require.Equal(t, 6*us, s.VMMPerExit())

	var out bytes.Buffer
	s.Print(&out)
	require.Contains(t, out.String(), "time: 0s in KVM_RUN over 3 entries (28.3µs each: the guest and KVM), 0s in the VMM between them (6µs an exit, idle waits left out)\n")
	require.Zero(t, (&Stats{Entries: 1, InVMM: time.Second}).VMMPerExit(), "one entry: no exit between two")
}

func TestRound3(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		0: 0, 999: 999, 1234: 1230, 98765: 98800, 1859560: 1860000, -1234: -1230,
		time.Duration(1<<63 - 1): 9220000000000000000,
	} {
		require.Equal(t, want, Round3(d), "%d", int64(d))
	}
}
