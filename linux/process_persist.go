package linux

import (
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/tape"
)

// A process in a checkpoint (save_restore.go): what it shares with others
// (its parent, children, open files, mapped files) by index.
type savedProc struct {
	PID        int
	Parent     int // index into Procs, -1 for none
	Children   []int
	Space      *mm.SavedSpace // nil for none
	FDs        map[int]vfs.SavedFD
	Brk        [2]uint64
	Exe        string
	Cwd        int // the working directory: a node's index, -1 for the root
	Umask      uint32
	Live       int
	Zombie     bool
	Status     uint64
	Execs      uint64
	Sigactions [maxSignal + 1]savedSigaction
	TimerAt    time.Duration
	TimerEvery time.Duration
	Subreaper  bool
	Timers     map[int]savedTimer // POSIX timers by id
	Pgid, Sid  int
	Args       [3]uint64
	Auxv       uint64
	// IDs are its real, effective and saved user and group ids; Groups
	// its supplementary groups.
	IDs    [6]uint32
	Groups []uint32
}

// savedTimer is a POSIX timer.
type savedTimer struct {
	Clock        int
	At, Interval time.Duration
	Notify       int
	Signo, Value uint64
	TID          int
	Overrun      int
}

type savedSigaction struct{ Handler, Flags, Restorer, Mask uint64 }

// proc numbers p, its parent and its children.
func (sv *saver) proc(p *process) int {
	if i, ok := sv.procs[p]; ok {
		return i
	}
	i := len(sv.s.Procs)
	sv.procs[p] = i
	sv.s.Procs = append(sv.s.Procs, savedProc{})
	c := p.cred
	sp := savedProc{IDs: [6]uint32{c.uid, c.euid, c.suid, c.gid, c.egid, c.sgid}, Groups: c.groups, PID: p.pid, Parent: -1, Cwd: -1, Umask: p.umask, Brk: p.brk, Exe: p.exe, Live: p.live, Zombie: p.zombie, Status: p.status,
		Execs: p.execs, TimerAt: p.timer.at, TimerEvery: p.timer.interval, FDs: sv.FDs(p.fds), Subreaper: p.subreaper,
		Pgid: p.pgid, Sid: p.sid, Args: p.args, Auxv: p.auxv}
	for sig, a := range p.sigactions {
		sp.Sigactions[sig] = savedSigaction{Handler: a.handler, Flags: a.flags, Restorer: a.restorer, Mask: a.mask}
	}
	for id, tm := range p.timers {
		if sp.Timers == nil {
			sp.Timers = map[int]savedTimer{}
		}
		sp.Timers[id] = savedTimer{Clock: tm.clock, At: tm.at, Interval: tm.interval, Notify: tm.notify, Signo: tm.signo,
			Value: tm.value, TID: tm.tid, Overrun: tm.overrun}
	}
	if p.cwd != nil {
		sp.Cwd = sv.Node(p.cwd)
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

func checkProc(s *savedKernel, p *savedProc) error {
	if !index(p.Parent, len(s.Procs)) || p.Live < 0 || p.Live > len(s.Threads) || len(p.FDs) > vfs.MaxFDs || p.Space == nil {
		return fmt.Errorf("parent %d, %d live threads, %d descriptors", p.Parent, p.Live, len(p.FDs))
	}
	for _, c := range p.Children {
		if c < 0 || c >= len(s.Procs) {
			return fmt.Errorf("child %d of %d", c, len(s.Procs))
		}
	}
	if err := vfs.CheckFDs(p.FDs, len(s.Files)); err != nil {
		return err
	}
	if !index(p.Cwd, len(s.Nodes)) || p.Cwd >= 0 && !s.Nodes[p.Cwd].Dir {
		return fmt.Errorf("working directory %d of %d files", p.Cwd, len(s.Nodes))
	}
	if len(p.Groups) > tape.MaxGroups {
		return fmt.Errorf("%d groups", len(p.Groups))
	}
	if len(p.Timers) > maxTimers {
		return fmt.Errorf("%d timers", len(p.Timers))
	}
	for id, tm := range p.Timers {
		if id < 0 || id >= maxTimers || tm.At < 0 || tm.Interval < 0 || tm.Signo > maxSignal || tm.Overrun < 0 ||
			tm.Notify != sigevSignal && tm.Notify != sigevNone && tm.Notify != sigevThreadID {
			return fmt.Errorf("timer %d: at %v every %v, signal %d, notify %d", id, tm.At, tm.Interval, tm.Signo, tm.Notify)
		}
	}
	return p.Space.Check(mm.Limits{Frames: &s.Frames, Nodes: len(s.Nodes), SiteLen: func(n uint8) bool { return n == rdtscLen || n == rdtscpLen }})
}

// proc fills p from its checked state; the processes it names are
// allocated already (restorer.procs).
func (r *restorer) proc(p *process, sp *savedProc, fr *mm.Frames) {
	*p = process{pid: sp.PID, pgid: sp.Pgid, sid: sp.Sid, args: sp.Args, auxv: sp.Auxv, umask: sp.Umask & 0o777, brk: sp.Brk, exe: sp.Exe, live: sp.Live, zombie: sp.Zombie, status: sp.Status, subreaper: sp.Subreaper,
		execs: sp.Execs, timer: realTimer{at: sp.TimerAt, interval: sp.TimerEvery},
		cred: creds{sp.IDs[0], sp.IDs[1], sp.IDs[2], sp.IDs[3], sp.IDs[4], sp.IDs[5], sp.Groups}}
	if sp.Parent >= 0 {
		p.parent = r.procs[sp.Parent]
	}
	for _, c := range sp.Children {
		p.children = append(p.children, r.procs[c])
	}
	for sig, a := range sp.Sigactions {
		p.sigactions[sig] = sigaction{handler: a.Handler, flags: a.Flags, restorer: a.Restorer, mask: a.Mask}
	}
	for id, tm := range sp.Timers {
		if p.timers == nil {
			p.timers = map[int]*posixTimer{}
		}
		p.timers[id] = &posixTimer{clock: tm.Clock, at: tm.At, interval: tm.Interval, notify: tm.Notify, signo: tm.Signo,
			value: tm.Value, tid: tm.TID, overrun: tm.Overrun}
	}
	if sp.Cwd >= 0 {
		p.cwd = r.fs.Nodes[sp.Cwd]
	}
	p.fds = r.fs.FDs(sp.FDs)
	p.as = mm.RestoreSpace(fr, sp.Space, sp.PID, r.fs.Mapped)
}

func (w waitChild) saved(sv *saver, _ *thread) savedWait {
	return savedWait{Kind: waitChildOf, Ref: sv.proc(w.parent)}
}
