package debugger

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/rsp"
)

// gdb's /proc paths name a process and a file: its own, a task's (the
// process's), or self's (the process setfs named, else the one registers
// are read from); other /proc paths name nothing, and paths outside /proc
// are not the stub's.
func TestProcPaths(t *testing.T) {
	s := &server{gThread: rsp.ThreadID{PID: 4, TID: 5}}
	for _, c := range []struct {
		path string
		pid  int
		name string
		ok   bool
	}{
		{"/proc/7/maps", 7, "maps", true},
		{"/proc/7/task/9/maps", 7, "maps", true},
		{"/proc/self/exe", 4, "exe", true},
		{"/proc/7/task/9", 0, "", true},
		{"/proc/x/maps", 0, "", true},
		{"/proc/-1/maps", 0, "", true},
		{"/proc/cpuinfo", 0, "", true},
		{"/lib/libc.so.6", 0, "", false},
	} {
		pid, name, ok := s.procPath(c.path)
		require.Equal(t, []any{c.pid, c.name, c.ok}, []any{pid, name, ok}, c.path)
	}
	s.fsPID = 6
	pid, _, _ := s.procPath("/proc/self/maps")
	require.Equal(t, 6, pid, "setfs's process")
}
