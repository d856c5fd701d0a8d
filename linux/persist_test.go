package linux

import (
	"bytes"
	"encoding/gob"
	"github.com/reprise-vm/reprise/abi"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/vmm"
)

// The identity bootedKernel's program runs as: an ordinary user.
const testUID, testGID = 1000, 1000

// bootedKernel is a kernel booted on a machine with the static musl hello
// program, not yet run.
func bootedKernel(t testing.TB) *Kernel {
	t.Helper()
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc")
	bin := filepath.Join(t.TempDir(), "hello")
	out, err := exec.Command("musl-gcc", "-static", "-O2", "-o", bin, filepath.Join("testdata", "hello.c")).CombinedOutput()
	require.NoError(t, err, string(out))
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)
	k, err := New(Program{Path: "/bin/hello", Image: raw, Argv: []string{"hello"}, Epoch: time.Unix(1700000000, 0), User: User{UID: testUID, GID: testGID}})
	require.NoError(t, err)
	m, err := vmm.New(vmm.Config{Kernel: k, MemBytes: 64 << 20, Console: &bytes.Buffer{}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	// The start call, the program's first exit, executes it.
	c := m.VCPU()
	regs, err := c.Regs()
	require.NoError(t, err)
	*c.SyncedRegs() = regs
	require.NoError(t, k.Exit(abi.PortSyscall))
	require.NoError(t, c.SetRegs(*c.SyncedRegs()))
	return k
}

// A saved state restores to the same state; a forged one — each part
// that names another out of range, an address outside RAM, a bound
// exceeded — is refused whole, naming what is wrong, and the kernel is
// left as it was.
func TestStateRestoresAndForgeriesAreRefused(t *testing.T) {
	k := bootedKernel(t)
	held := *k.budget
	saved, err := k.SaveState()
	require.NoError(t, err)
	*k.budget = budget{}
	require.NoError(t, k.RestoreState(saved))
	require.Equal(t, held, *k.budget, "the budget counted from the restored state")
	again, err := k.SaveState()
	require.NoError(t, err)
	require.Equal(t, decodeState(t, saved), decodeState(t, again), "restored, then saved again: the same state")

	for _, tc := range []struct {
		name  string
		forge func(s *savedKernel)
		want  string
	}{
		{"version", func(s *savedKernel) { s.Version = 99 }, "version 99"},
		{"no threads", func(s *savedKernel) { s.Threads = nil }, "0 threads"},
		{"running thread", func(s *savedKernel) { s.Cur = 5 }, "running thread 5"},
		{"thread's process", func(s *savedKernel) { s.Threads[0].Proc = 7 }, "process 7 of 1"},
		{"thread state", func(s *savedKernel) { s.Threads[0].State = 9 }, "state 9"},
		{"wait on a pipe", func(s *savedKernel) { s.Threads[0].Wait = savedWait{Kind: waitFiles, Files: []int{99}} }, "waits on"},
		{"XSAVE component", func(s *savedKernel) { s.Threads[0].XSave.Region[128] = 1 << 18 }, "XSAVE image"},
		{"compacted XSAVE", func(s *savedKernel) { s.Threads[0].XSave.Region[131] = 1 << 31 }, "XSAVE image"},
		{"MXCSR", func(s *savedKernel) { s.Threads[0].XSave.Region[6] = 1 << 20 }, "XSAVE image"},
		{"frames past RAM", func(s *savedKernel) { s.Frames.Next = 1 << 40 }, "frames end at"},
		{"free frame", func(s *savedKernel) { s.Frames.Free = append(s.Frames.Free, 12345) }, "free frame"},
		{"retired frame", func(s *savedKernel) { s.Frames.Retired = append(s.Frames.Retired, 1<<40) }, "free frame"},
		{"settled frames", func(s *savedKernel) { s.Frames.Settled = len(s.Frames.Retired) + 1 }, "retired frames settled"},
		{"page outside RAM", func(s *savedKernel) { s.Procs[0].Space.Pages[0x400000] = 1 << 40 }, "page 0x400000"},
		{"page-table root", func(s *savedKernel) { s.Procs[0].Space.Root = 0 }, "page-table root"},
		{"descriptor", func(s *savedKernel) { s.Procs[0].FDs[1] = vfs.SavedFD{File: 99} }, "open file 99"},
		{"timerfd of no file", func(s *savedKernel) { s.TimerFDs = []int{99} }, "timerfd 99"},
		{"timerfd of a file", func(s *savedKernel) { s.TimerFDs = []int{0} }, "timerfd 0"},
		{"working directory", func(s *savedKernel) { s.Procs[0].Cwd = len(s.Nodes) }, "working directory"},
		{"working directory a file", func(s *savedKernel) {
			for i, n := range s.Nodes {
				if !n.Dir {
					s.Procs[0].Cwd = i
					return
				}
			}
		}, "working directory"},
		{"POSIX timer id", func(s *savedKernel) { s.Procs[0].Timers = map[int]savedTimer{maxTimers: {}} }, "timer 1024"},
		{"POSIX timer signal", func(s *savedKernel) { s.Procs[0].Timers = map[int]savedTimer{0: {Signo: 99}} }, "signal 99"},
		{"parent", func(s *savedKernel) { s.Procs[0].Parent = 4 }, "parent 4"},
		{"file tree", func(s *savedKernel) { s.Nodes[0].Children["loop"] = 0 }, `entry "loop"`},
		{"inode", func(s *savedKernel) { s.Nodes[1].Ino = s.Nodes[0].Ino }, "given twice"},
		{"a host file it never read", func(s *savedKernel) { hostFile(t, s).Host.SHA256[0]++ }, "which is not packed"},
		{"a device it never had", func(s *savedKernel) { hostFile(t, s).Device = "tape0" }, `no device "tape0"`},
		{"written files", func(s *savedKernel) { s.Held = maxFileBytes + 1 }, "bytes of files held"},
		{"code mapping's offset", func(s *savedKernel) { codeMapping(t, s).Offset += pageSize }, "is not the file's"},
		{"code mapping's unaligned offset", func(s *savedKernel) { codeMapping(t, s).Offset++ }, "at offset"},
		{"pipe", func(s *savedKernel) { s.Pipes = append(s.Pipes, vfs.SavedPipe{Buf: make([]byte, vfs.PipeCapacity+1)}) }, "pipe 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := decodeState(t, saved)
			tc.forge(s)
			var b bytes.Buffer
			require.NoError(t, gob.NewEncoder(&b).Encode(s))
			err := k.RestoreState(b.Bytes())
			require.ErrorContains(t, err, tc.want)
			now, err := k.SaveState()
			require.NoError(t, err)
			require.Equal(t, decodeState(t, saved), decodeState(t, now), "a refused state changed the kernel")
		})
	}
	require.Error(t, k.RestoreState([]byte("not a state")))
}

func decodeState(t *testing.T, b []byte) *savedKernel {
	t.Helper()
	var s savedKernel
	require.NoError(t, gob.NewDecoder(bytes.NewReader(b)).Decode(&s))
	return &s
}

// codeMapping is the first executable file mapping of the state's first
// process.
func codeMapping(t *testing.T, s *savedKernel) *mm.SavedMapping {
	t.Helper()
	files := s.Procs[0].Space.Files
	for i := range files {
		if files[i].Exec {
			return &files[i]
		}
	}
	t.Fatal("no executable file mapping")
	return nil
}

// hostFile is the state's first file read from the host (the
// executable: its contents are the tape's image).
func hostFile(t *testing.T, s *savedKernel) *vfs.SavedNode {
	t.Helper()
	for i := range s.Nodes {
		if n := &s.Nodes[i]; n.Host != nil && n.Host.Loaded && !n.Written {
			return n
		}
	}
	t.Fatal("no file read from the host")
	return nil
}
