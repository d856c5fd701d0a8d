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
)

// The personality's state, for a checkpoint (vmm.KernelState): every
// process, thread, open file, pipe and file the program wrote, as plain
// values, with what several of them share (a process's parent, an open
// file in two descriptor tables, a pipe's two ends, a node) named by its
// index. With guest RAM and the machine's snapshot it resumes the program
// exactly. Files the program never wrote are not kept: a kernel made by New
// from the same Program (the tape's) has them, under the same inodes.

// stateVersion is the layout's version; another is refused.
const stateVersion = 3

type savedKernel struct {
	Version int
	Frames  mm.SavedFrames
	Nodes   []savedNode // Nodes[0] is the root
	NextIno uint64
	Held    int64
	Pipes   []savedPipe
	Files   []savedFile
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

// savedNode is a file or directory. A node the program never wrote has no
// Data: the new kernel's node of the same inode has it.
type savedNode struct {
	Ino      uint64
	Dir      bool
	Mode     uint32
	Written  bool
	Data     []byte
	Children map[string]int // indices into Nodes
}

type savedPipe struct {
	Buf              []byte
	Capacity         int // 0 in a checkpoint from before pipes had capacities: pipeCapacity
	Readers, Writers int
}

// capacity is the saved pipe's capacity.
func (p *savedPipe) capacity() int {
	if p.Capacity == 0 {
		return pipeCapacity
	}
	return p.Capacity
}

type savedFile struct {
	Node, Pipe int // indices, -1 for none
	Path       string
	Console    bool
	Refs       int
	Flags      uint64
	Off        int64
	DirPos     int
}

type savedFD struct {
	File    int // index into Files
	Cloexec bool
}

type savedProc struct {
	PID        int
	Parent     int // index into Procs, -1 for none
	Children   []int
	Space      *mm.SavedSpace // nil for none
	FDs        map[int]savedFD
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
	Kind waitKind
	Ref  int // the pipe's or the process's index
}

type waitKind uint8

const (
	waitNone waitKind = iota
	waitPipe
	waitPoll
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

// saver numbers the shared parts of the state as it meets them.
type saver struct {
	nodes map[*node]int
	order []*node // by index
	pipes map[*pipe]int
	files map[*openFile]int
	procs map[*process]int
	s     *savedKernel
}

func (k *Kernel) save() (*savedKernel, error) {
	s := &savedKernel{
		Version: stateVersion, NextIno: k.fs.nextIno, Held: k.budget[fileBytes],
		Frames: k.fr.Save(),
		Cur:    k.cur, NextTID: k.nextTID, Resched: k.resched, Restart: k.restart, Returned: k.returned,
		WaitSeq: k.waitSeq, Switches: k.switches, HogThread: -1, HogWaiting: k.hog.waiting, HogAt: k.hog.at,
		Calls: maps.Clone(k.stats.Calls), Unsupported: maps.Clone(k.stats.Unsupported), Warnings: slices.Clone(k.stats.Warnings),
	}
	sv := &saver{nodes: map[*node]int{}, pipes: map[*pipe]int{}, files: map[*openFile]int{}, procs: map[*process]int{}, s: s}
	sv.node(k.fs.root)
	for _, t := range k.threads {
		sv.proc(t.proc)
	}
	for i, t := range k.threads {
		if t == k.hog.thread {
			s.HogThread = i
		}
		w, err := sv.wait(t.waitKey)
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
	return s, nil
}

// node numbers n and everything under it.
func (sv *saver) node(n *node) int {
	if i, ok := sv.nodes[n]; ok {
		return i
	}
	i := len(sv.s.Nodes)
	sv.nodes[n] = i
	sv.order = append(sv.order, n)
	sv.s.Nodes = append(sv.s.Nodes, savedNode{Ino: n.ino, Dir: n.dir, Mode: n.mode, Written: n.written})
	if n.written {
		sv.s.Nodes[i].Data = n.data
	}
	if n.dir {
		children := map[string]int{}
		for _, name := range slices.Sorted(maps.Keys(n.children)) {
			children[name] = sv.node(n.children[name])
		}
		sv.s.Nodes[i].Children = children
	}
	return i
}

func (sv *saver) pipe(p *pipe) int {
	if i, ok := sv.pipes[p]; ok {
		return i
	}
	sv.pipes[p] = len(sv.s.Pipes)
	sv.s.Pipes = append(sv.s.Pipes, savedPipe{Buf: p.buf, Capacity: p.capacity, Readers: p.readers, Writers: p.writers})
	return sv.pipes[p]
}

func (sv *saver) file(f *openFile) int {
	if i, ok := sv.files[f]; ok {
		return i
	}
	sf := savedFile{Node: -1, Pipe: -1, Path: f.path, Console: f.console, Refs: f.refs, Flags: f.flags, Off: f.off, DirPos: f.dirPos}
	if f.node != nil {
		sf.Node = sv.node(f.node)
	}
	if f.pipe != nil {
		sf.Pipe = sv.pipe(f.pipe)
	}
	sv.files[f] = len(sv.s.Files)
	sv.s.Files = append(sv.s.Files, sf)
	return sv.files[f]
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
		Execs: p.execs, TimerAt: p.timer.at, TimerEvery: p.timer.interval, FDs: map[int]savedFD{}, Subreaper: p.subreaper}
	for sig, a := range p.sigactions {
		sp.Sigactions[sig] = savedSigaction{Handler: a.handler, Flags: a.flags, Restorer: a.restorer, Mask: a.mask}
	}
	if p.parent != nil {
		sp.Parent = sv.proc(p.parent)
	}
	for _, c := range p.children {
		sp.Children = append(sp.Children, sv.proc(c))
	}
	for _, fd := range p.fds.sorted() {
		e := p.fds[fd]
		sp.FDs[fd] = savedFD{File: sv.file(e.file), Cloexec: e.cloexec}
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
	for _, n := range sv.order {
		if !n.dir && n.dev == nil && bytes.Equal(n.data, data) {
			return sv.node(n)
		}
	}
	return -1
}

func (sv *saver) wait(key any) (savedWait, error) {
	switch key := key.(type) {
	case nil:
		return savedWait{}, nil
	case *pipe:
		return savedWait{Kind: waitPipe, Ref: sv.pipe(key)}, nil
	case pollEvent:
		return savedWait{Kind: waitPoll}, nil
	case sigWait:
		return savedWait{Kind: waitSignal}, nil
	case waitChild:
		return savedWait{Kind: waitChildOf, Ref: sv.proc((*process)(key))}, nil
	}
	return savedWait{}, fmt.Errorf("waits on a %T, which a checkpoint cannot hold", key)
}
