package linux

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"slices"
	"time"

	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/vmm"
)

// The personality's state, for a checkpoint (vmm.KernelState): every
// process, thread, open file, pipe and file the program wrote, as plain
// values, with what several of them share (a process's parent, an open
// file in two descriptor tables, a pipe's two ends, a node) named by its
// index. With guest RAM and the machine's snapshot it resumes the program
// exactly. Files the program never wrote are not kept: a kernel made by New
// from the same Program (the tape's) has them, under the same inodes.
//
// Each part is saved, checked and restored beside its type: the file
// system in vfs (*_persist.go), frames and address spaces in mm, processes
// in process_persist.go, threads and their waits in thread_persist.go.
// This file holds the kernel's own fields and the order of the whole.

// stateVersion is the layout's version; another is refused.
//
// 4: a thread blocked in a read, write, poll or select names the files it
// waits on (savedWait.Files): per-file wait queues replaced poll's one key.
// 5: epoll instances, eventfds and timerfds among the open files; the
// kernel's timerfds and signalfds in creation order; POSIX timers; a
// process's working directory.
// 6: the start call has run; host nodes keep their path, size and hash.
// 7: a process's group and session; the coarse clock files are stamped
// with; when the file system last fell short forgetting the host
// (vfs.Forget); host files the program changed (SavedHost.Edited); a
// pipe's inode.
// 8: shared mappings: the frames' shared objects, a range's object, the
// files' objects (FileObjects); a futex wait's kind of key; a directory's
// listing order; a memfd and its seals; sockets (Sockets: their buffers,
// peers, names and backlogs; a socket file's socket).
// 9: a datagram socket's senders and default destination.
// 10: the system call a thread is in, and whether its SYSCALL issues a
// blocked call again (a debugger's syscall stops).
// 11: a range whose pages get frames when touched (VMA.Lazy).
const stateVersion = 11

type savedKernel struct {
	Version int
	Frames  mm.SavedFrames
	Nodes   []vfs.SavedNode // Nodes[0] is the root
	NextIno uint64
	Held    int64
	Pipes   []vfs.SavedPipe
	Files   []vfs.SavedFile
	Sockets []vfs.SavedSocket
	Procs   []savedProc
	Threads []savedThread
	// FileObjects are the shared objects of the files mapped shared.
	FileObjects []savedFileObject
	// TimerFDs and SignalFDs are the open timerfds and signalfds, in
	// creation order: indices into Files.
	TimerFDs, SignalFDs []int

	Cur, NextTID               int
	Started                    bool
	Coarse                     time.Duration
	ForgotAt                   int64
	Resched, Restart, Returned bool
	WaitSeq, Switches          uint64
	HogThread, HogWaiting      int // HogThread: an index into Threads, -1 for none
	HogAt                      time.Duration
	Calls, Unsupported         map[string]uint64
	Warnings                   []string
}

// SaveState returns the personality's state, between two entries, with no
// breakpoints placed (a replay with probes takes no checkpoints). Not
// while a thread is to run again an instruction that faulted (a write to
// a copy-on-write page, a stale translation): the caller tries again at a
// later stop.
func (k *Kernel) SaveState() ([]byte, error) {
	if k.fr.Patched() {
		return nil, fmt.Errorf("linux: state saved with breakpoints placed")
	}
	if k.locksHeld() {
		return nil, fmt.Errorf("linux: files are locked, which a checkpoint does not hold: %w", vmm.ErrKernelBusy)
	}
	if k.retrying() {
		// A replay started here would meet the instruction's breakpoint,
		// if it has one, as a hit of its own; one that saw the attempt
		// that faulted knows it for the same execution (Break.Retry).
		return nil, fmt.Errorf("linux: a thread runs again the instruction that faulted: %w", vmm.ErrKernelBusy)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(k.save()); err != nil {
		return nil, fmt.Errorf("linux: saving state: %w", err)
	}
	return b.Bytes(), nil
}

// saver numbers the shared parts of the state as it meets them: the
// file system's (vfs.Saver) and the processes.
type saver struct {
	*vfs.Saver
	procs map[*process]int
	s     *savedKernel
}

func (k *Kernel) save() *savedKernel {
	s := &savedKernel{
		Version: stateVersion, NextIno: k.fs.NextIno(), Held: k.budget[fileBytes],
		Frames: k.fr.Save(),
		Cur:    k.cur, NextTID: k.nextTID, Started: k.started, Coarse: k.coarse, ForgotAt: k.fs.ForgotAt(), Resched: k.resched, Restart: k.restart, Returned: k.returned,
		WaitSeq: k.waitSeq, Switches: k.switches, HogThread: -1, HogWaiting: k.hog.waiting, HogAt: k.hog.at,
	}
	stats := k.Stats()
	s.Calls, s.Unsupported, s.Warnings = stats.Calls, stats.Unsupported, stats.Warnings
	sv := &saver{Saver: vfs.NewSaver(k.fs.Root()), procs: map[*process]int{}, s: s}
	for _, t := range k.threads {
		sv.proc(t.proc)
	}
	for i, t := range k.threads {
		if t == k.hog.thread {
			s.HogThread = i
		}
		s.Threads = append(s.Threads, sv.thread(t))
	}
	for _, f := range k.timerfds {
		if !vfs.TimerFDOf(f).Closed() {
			s.TimerFDs = append(s.TimerFDs, sv.File(f))
		}
	}
	for _, f := range k.signalfds {
		if !vfs.SignalFDOf(f).Closed() {
			s.SignalFDs = append(s.SignalFDs, sv.File(f))
		}
	}
	sv.saveObjects(k.shm)
	s.Nodes, s.Pipes, s.Files, s.Sockets = sv.Nodes, sv.Pipes, sv.Files, sv.Sockets
	return s
}

// RestoreState puts the personality in the state SaveState returned, on a
// kernel New made from the same Program and booted, after guest RAM and
// the machine have been restored. The state comes from a file, so it is
// as untrusted as a tape: every count, index, address and size is checked
// before it is used, and a state that fails a check is refused whole.
func (k *Kernel) RestoreState(b []byte) error {
	var s savedKernel
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return fmt.Errorf("linux: state: %w", err)
	}
	if err := k.check(&s); err != nil {
		return fmt.Errorf("linux: state: %w", err)
	}
	r := &restorer{k: k, s: &s}
	if err := r.restore(); err != nil {
		return fmt.Errorf("linux: state: %w", err)
	}
	k.frame.keep(k.m.RAM()) // a checkpoint is at an exit: no retry is under way
	return k.replaceBreakpoints()
}

// check refuses a state whose parts do not fit together or would take
// the kernel outside its bounds.
func (k *Kernel) check(s *savedKernel) error {
	switch {
	case s.Version != stateVersion:
		return fmt.Errorf("version %d, not %d", s.Version, stateVersion)
	case len(s.Threads) == 0 || len(s.Threads) > maxThreads:
		return fmt.Errorf("%d threads (want 1 to %d)", len(s.Threads), maxThreads)
	case len(s.Procs) == 0 || len(s.Procs) > maxProcesses+maxThreads: // live ones, and zombies whose threads are gone
		return fmt.Errorf("%d processes (want 1 to %d)", len(s.Procs), maxProcesses+maxThreads)
	case s.Held < 0 || s.Held > maxFileBytes:
		return fmt.Errorf("%d bytes of files held (at most %d)", s.Held, maxFileBytes)
	case s.Cur < 0 || s.Cur >= len(s.Threads):
		return fmt.Errorf("running thread %d of %d", s.Cur, len(s.Threads))
	case s.HogThread < -1 || s.HogThread >= len(s.Threads):
		return fmt.Errorf("hog thread %d of %d", s.HogThread, len(s.Threads))
	}
	if err := s.Frames.Check(k.m.RAM().Size(), maxProcesses); err != nil {
		return err
	}
	if err := vfs.Check(s.Nodes, s.NextIno, s.Pipes, s.Files, s.Sockets); err != nil {
		return err
	}
	if err := checkObjects(s); err != nil {
		return err
	}
	for i := range s.Procs {
		if err := checkProc(s, &s.Procs[i]); err != nil {
			return fmt.Errorf("process %d: %w", s.Procs[i].PID, err)
		}
	}
	given := map[int]bool{}
	for _, i := range s.TimerFDs {
		if i < 0 || i >= len(s.Files) || s.Files[i].TimerFD == nil || given[i] {
			return fmt.Errorf("timerfd %d of %d open files, or given twice", i, len(s.Files))
		}
		given[i] = true
	}
	for _, i := range s.SignalFDs {
		if i < 0 || i >= len(s.Files) || s.Files[i].SignalFD == nil || given[i] {
			return fmt.Errorf("signalfd %d of %d open files, or given twice", i, len(s.Files))
		}
		given[i] = true
	}
	tids := map[int]bool{}
	for i := range s.Threads {
		t := &s.Threads[i]
		if t.TID <= 0 || t.TID > s.NextTID || tids[t.TID] {
			return fmt.Errorf("thread id %d (next %d), or given twice", t.TID, s.NextTID)
		}
		tids[t.TID] = true
		if err := k.checkThread(s, t); err != nil {
			return fmt.Errorf("thread %d: %w", t.TID, err)
		}
	}
	return nil
}

// index reports whether i is an index of n things, or -1 for none.
func index(i, n int) bool { return i >= -1 && i < n }

// restorer builds the kernel's parts from a checked state.
type restorer struct {
	k     *Kernel
	s     *savedKernel
	fs    *vfs.Restored
	procs []*process
}

func (r *restorer) restore() error {
	k, s := r.k, r.s
	fs, err := vfs.Restore(k.fs, s.Nodes, s.NextIno, s.Pipes, s.Files, s.Sockets, k.console, k.remap, signals{k})
	if err != nil {
		return err
	}
	r.fs = fs
	fr := mm.RestoreFrames(k.m.RAM(), k.m.DropTranslations, &s.Frames)
	fr.SetPolicy(k.prog.paging())
	r.procs = make([]*process, len(s.Procs))
	for i := range s.Procs {
		r.procs[i] = &process{}
	}
	for i := range s.Procs {
		r.proc(r.procs[i], &s.Procs[i], fr)
		if err := r.procs[i].as.CheckCode(); err != nil {
			return fmt.Errorf("process %d: %w", s.Procs[i].PID, err)
		}
	}
	threads := make([]*thread, len(s.Threads))
	for i := range s.Threads {
		threads[i] = r.thread(&s.Threads[i])
	}

	k.fs = fs.FS
	k.timerfds, k.signalfds = nil, nil
	for _, i := range s.TimerFDs {
		k.timerfds = append(k.timerfds, fs.Files[i])
	}
	for _, i := range s.SignalFDs {
		k.signalfds = append(k.signalfds, fs.Files[i])
	}
	r.charge()
	k.fr = fr
	r.restoreObjects(fr)
	k.threads, k.cur, k.nextTID = threads, s.Cur, s.NextTID
	k.started, k.resched, k.restart, k.returned = s.Started, s.Resched, s.Restart, s.Returned
	k.coarse = s.Coarse
	k.fs.SetForgotAt(s.ForgotAt)
	k.waitSeq, k.switches = s.WaitSeq, s.Switches
	k.hog.thread, k.hog.waiting, k.hog.at = nil, s.HogWaiting, s.HogAt
	if s.HogThread >= 0 {
		k.hog.thread = threads[s.HogThread]
	}
	k.stats = Stats{Calls: cloneMap(s.Calls), Unsupported: cloneMap(s.Unsupported), Warnings: s.Warnings}
	k.counts = countsSince(k.stats.Calls)
	return nil
}

// charge sets the restored program's budget from what it holds: its
// files and directories (removed ones still open included: only those are
// saved), their contents, its open pipes and its processes, zombies
// included. The nodes' open files are counted, and the ones gone from
// the tree marked, so they are freed when the last closes.
func (r *restorer) charge() {
	b := r.k.budget
	*b = budget{}
	r.fs.Charge(b)
	for _, p := range r.procs {
		// Not reaped: the first process, or a child its parent still has
		// (a reaped one is saved when an exited thread still names it).
		if p.parent == nil || slices.Contains(p.parent.children, p) {
			b[processCount]++
		}
	}
}
