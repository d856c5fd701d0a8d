package linux

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
)

// The personality's state, for a checkpoint (vmm.KernelState): every
// process, thread, open file, pipe and file the program wrote, as plain
// values, with what several of them share (a process's parent, an open
// file in two descriptor tables, a pipe's two ends, a node) named by its
// index. With guest RAM and the machine's snapshot it resumes the program
// exactly. Files the program never wrote are not kept: a kernel made by New
// from the same Program (the tape's) has them, under the same inodes.

// stateVersion is the layout's version; another is refused.
//
// 4: a thread blocked in a read, write, poll or select names the files it
// waits on (savedWait.Files): per-file wait queues replaced poll's one key.
const stateVersion = 4

type savedKernel struct {
	Version int
	Frames  mm.SavedFrames
	Nodes   []vfs.SavedNode // Nodes[0] is the root
	NextIno uint64
	Held    int64
	Pipes   []vfs.SavedPipe
	Files   []vfs.SavedFile
	Procs   []savedProc
	Threads []savedThread

	Cur, NextTID               int
	Resched, Restart, Returned bool
	WaitSeq, Switches          uint64
	HogThread, HogWaiting      int // HogThread: an index into Threads, -1 for none
	HogAt                      time.Duration
	Calls, Unsupported         map[string]uint64
	Warnings                   []string
}

type savedProc struct {
	PID        int
	Parent     int // index into Procs, -1 for none
	Children   []int
	Space      *mm.SavedSpace // nil for none
	FDs        map[int]vfs.SavedFD
	Brk        [2]uint64
	Exe        string
	Live       int
	Zombie     bool
	Status     uint64
	Execs      uint64
	Sigactions [maxSignal + 1]savedSigaction
	TimerAt    time.Duration
	TimerEvery time.Duration
	Subreaper  bool
}

type savedSigaction struct{ Handler, Flags, Restorer, Mask uint64 }

type savedThread struct {
	TID       int
	Proc      int // index into Procs
	State     int
	Regs      kvm.Regs
	XSave     kvm.XSave
	FSBase    uint64
	ClearTID  uint64
	FutexAddr uint64
	FutexMask uint32
	Deadline  time.Duration
	WakeErr   uint64
	WaitSeq   uint64
	Wait      savedWait
	Warned    bool
	TimedOut  bool
	Sigmask   uint64
	Pending   uint64
	Infos     map[uint64][128]byte
	SavedMask uint64
	Suspended bool
	AltStack  savedAltStack
	RetryAt   uint64
}

type savedAltStack struct {
	SP, Size uint64
	Flags    uint32
}

// savedWait is what a blocked thread waits on (thread.waitKey).
type savedWait struct {
	Kind  waitKind
	Ref   int   // the child's process index
	Files []int // the open files waited on (waitFiles), indices into Files
}

type waitKind uint8

const (
	waitNone  waitKind = iota
	waitFiles          // a read, write, poll or select: Files
	_                  // 2: poll's one key, before version 4
	waitSignal
	waitChildOf
)

// SaveState returns the personality's state, between two entries, with no
// breakpoints placed (a replay with probes takes no checkpoints).
func (k *Kernel) SaveState() ([]byte, error) {
	if k.fr.Patched() {
		return nil, fmt.Errorf("linux: state saved with breakpoints placed")
	}
	s, err := k.save()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(s); err != nil {
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

func (k *Kernel) save() (*savedKernel, error) {
	s := &savedKernel{
		Version: stateVersion, NextIno: k.fs.NextIno(), Held: k.budget[fileBytes],
		Frames: k.fr.Save(),
		Cur:    k.cur, NextTID: k.nextTID, Resched: k.resched, Restart: k.restart, Returned: k.returned,
		WaitSeq: k.waitSeq, Switches: k.switches, HogThread: -1, HogWaiting: k.hog.waiting, HogAt: k.hog.at,
		Calls: maps.Clone(k.stats.Calls), Unsupported: maps.Clone(k.stats.Unsupported), Warnings: slices.Clone(k.stats.Warnings),
	}
	sv := &saver{Saver: vfs.NewSaver(k.fs.Root()), procs: map[*process]int{}, s: s}
	for _, t := range k.threads {
		sv.proc(t.proc)
	}
	for i, t := range k.threads {
		if t == k.hog.thread {
			s.HogThread = i
		}
		w, err := sv.wait(t.waitKey, t.waitOn)
		if err != nil {
			return nil, fmt.Errorf("linux: thread %d: %w", t.tid, err)
		}
		s.Threads = append(s.Threads, savedThread{
			TID: t.tid, Proc: sv.procs[t.proc], State: int(t.state), Regs: t.regs, XSave: t.xsave, FSBase: t.fsBase, ClearTID: t.clearTID,
			FutexAddr: t.futexAddr, FutexMask: t.futexMask, Deadline: t.deadline, WakeErr: uint64(t.wakeErr), WaitSeq: t.waitSeq,
			Wait: w, Warned: t.warned, TimedOut: t.timedOut, Sigmask: t.sigmask, Pending: t.pending, Infos: maps.Clone(t.infos),
			SavedMask: t.savedMask, Suspended: t.suspended,
			AltStack: savedAltStack{t.altstack.sp, t.altstack.size, t.altstack.flags}, RetryAt: t.retryAt,
		})
	}
	s.Nodes, s.Pipes, s.Files = sv.Nodes, sv.Pipes, sv.Files
	return s, nil
}

// proc numbers p, its parent and its children.
func (sv *saver) proc(p *process) int {
	if i, ok := sv.procs[p]; ok {
		return i
	}
	i := len(sv.s.Procs)
	sv.procs[p] = i
	sv.s.Procs = append(sv.s.Procs, savedProc{})
	sp := savedProc{PID: p.pid, Parent: -1, Brk: p.brk, Exe: p.exe, Live: p.live, Zombie: p.zombie, Status: p.status,
		Execs: p.execs, TimerAt: p.timer.at, TimerEvery: p.timer.interval, FDs: sv.FDs(p.fds), Subreaper: p.subreaper}
	for sig, a := range p.sigactions {
		sp.Sigactions[sig] = savedSigaction{Handler: a.handler, Flags: a.flags, Restorer: a.restorer, Mask: a.mask}
	}
	if p.parent != nil {
		sp.Parent = sv.proc(p.parent)
	}
	for _, c := range p.children {
		sp.Children = append(sp.Children, sv.proc(c))
	}
	if p.as != nil {
		sp.Space = p.as.Save(sv.sameAs)
	}
	sv.s.Procs[i] = sp
	return i
}

// sameAs is the index of a numbered node whose contents are data (a
// mapping's), -1 if none is.
func (sv *saver) sameAs(data []byte) int {
	if n := sv.SameAs(data); n != nil {
		return sv.Node(n)
	}
	return -1
}

func (sv *saver) wait(key any, on []*openFile) (savedWait, error) {
	switch key := key.(type) {
	case nil:
		return savedWait{}, nil
	case fileWait:
		w := savedWait{Kind: waitFiles, Files: []int{}}
		for _, f := range on {
			w.Files = append(w.Files, sv.File(f))
		}
		return w, nil
	case sigWait:
		return savedWait{Kind: waitSignal}, nil
	case waitChild:
		return savedWait{Kind: waitChildOf, Ref: sv.proc((*process)(key))}, nil
	}
	return savedWait{}, fmt.Errorf("waits on a %T, which a checkpoint cannot hold", key)
}
