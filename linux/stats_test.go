package linux

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The counts a kernel keeps by number add up to the Stats by name: those
// restored (a checkpoint's), those since, and numbers past the table.
func TestCallCountsAddUpByName(t *testing.T) {
	restored := Stats{Calls: map[string]uint64{"read": 5, "mbind": 1}, Unsupported: map[string]uint64{"mbind": 1}}
	var c callCounts
	s := restored
	s.Calls, s.Unsupported = cloneMap(restored.Calls), cloneMap(restored.Unsupported)
	for range 3 {
		c.call(&s, unix.SYS_READ, true)
		c.serve(unix.SYS_READ, 2*time.Microsecond)
	}
	c.call(&s, unix.SYS_MBIND, false)
	c.call(&s, 1000, false)
	c.serve(1000, time.Second) // not timed: no such call

	got := c.add(s)
	require.Equal(t, map[string]uint64{"read": 8, "mbind": 2, "syscall 1000": 1}, got.Calls)
	require.Equal(t, map[string]uint64{"mbind": 2, "syscall 1000": 1}, got.Unsupported)
	require.Equal(t, map[string]Served{"read": {3, 6 * time.Microsecond}}, got.Served)
	require.Equal(t, 2*time.Microsecond, got.Served["read"].Each())
	require.Equal(t, uint64(5), restored.Calls["read"], "the restored counts are not changed")

	got.Calls["read"] = 0
	require.Equal(t, map[string]uint64{"read": 8, "mbind": 2, "syscall 1000": 1}, c.add(s).Calls, "each Stats has maps of its own")

	var out bytes.Buffer
	got.Print(&out)
	require.Contains(t, out.String(), "VMM time per system call, exit to return: 2µs on average  read=2µs\n")
	require.Contains(t, out.String(), "answered ENOSYS (not implemented): mbind ×2, syscall 1000 ×1\n")
}

// A program making calls with many numbers no table has cannot make the
// counts grow without bound: past maxPastTable names they share one.
func TestCallsPastTheTableAreBounded(t *testing.T) {
	s := Stats{Calls: map[string]uint64{}, Unsupported: map[string]uint64{}}
	var c callCounts
	for nr := range uint64(1000) {
		c.call(&s, 1<<40+nr, false)
	}
	c.call(&s, 1<<40, false) // one already named keeps its name
	got := c.add(s)
	require.Len(t, got.Calls, maxPastTable+1)
	require.Equal(t, uint64(1000-maxPastTable), got.Calls[pastTable])
	require.Equal(t, uint64(2), got.Calls[unknownName(1<<40)])
	var total uint64
	for _, n := range got.Unsupported {
		total += n
	}
	require.Equal(t, uint64(1001), total)

	// Restored with those names, a kernel names no more numbers.
	c = countsSince(got.Calls)
	c.call(&got, 1<<50, false)
	require.Len(t, got.Calls, maxPastTable+1)
	require.Equal(t, uint64(1000-maxPastTable+1), got.Calls[pastTable])
	require.Zero(t, countsSince(map[string]uint64{"read": 1, pastTable: 5}).pastNamed)
}
