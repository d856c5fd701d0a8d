package linux

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
)

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
	return k.replaceBreakpoints()
}

// check refuses a state whose parts do not fit together or would take
// the kernel outside its bounds.
func (k *Kernel) check(s *savedKernel) error {
	ram := k.m.RAM().Size()
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
	if err := s.Frames.Check(ram, maxProcesses); err != nil {
		return err
	}
	if err := vfs.Check(s.Nodes, s.NextIno, s.Pipes, s.Files); err != nil {
		return err
	}
	for i := range s.Procs {
		if err := checkProc(s, &s.Procs[i]); err != nil {
			return fmt.Errorf("process %d: %w", s.Procs[i].PID, err)
		}
	}
	tids := map[int]bool{}
	for _, t := range s.Threads {
		switch {
		case t.TID <= 0 || t.TID > s.NextTID || tids[t.TID]:
			return fmt.Errorf("thread id %d (next %d), or given twice", t.TID, s.NextTID)
		case t.Proc < 0 || t.Proc >= len(s.Procs):
			return fmt.Errorf("thread %d: process %d of %d", t.TID, t.Proc, len(s.Procs))
		case t.State < int(runnable) || t.State > int(exited):
			return fmt.Errorf("thread %d: state %d", t.TID, t.State)
		case len(t.Infos) > maxSignal:
			return fmt.Errorf("thread %d: %d pending signals' information", t.TID, len(t.Infos))
		case !k.xsave.valid(&t.XSave):
			return fmt.Errorf("thread %d: an XSAVE image KVM_SET_XSAVE would refuse", t.TID)
		}
		tids[t.TID] = true
		if w := t.Wait; !w.valid(len(s.Files), len(s.Procs)) {
			return fmt.Errorf("thread %d: waits on %d %d", t.TID, w.Kind, w.Ref)
		}
	}
	return nil
}

// valid reports whether w names a wait kind and, for files or a child,
// ones there are.
func (w savedWait) valid(files, procs int) bool {
	switch w.Kind {
	case waitNone, waitSignal:
		return true
	case waitFiles:
		return len(w.Files) <= vfs.MaxFDs && !slices.ContainsFunc(w.Files, func(i int) bool { return i < 0 || i >= files })
	case waitChildOf:
		return w.Ref >= 0 && w.Ref < procs
	}
	return false
}

// index reports whether i is an index of n things, or -1 for none.
func index(i, n int) bool { return i >= -1 && i < n }

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
	return p.Space.Check(mm.Limits{InUse: s.Frames.InUse, Nodes: len(s.Nodes), SiteLen: func(n uint8) bool { return n == rdtscLen || n == rdtscpLen }})
}

// restorer builds the kernel's parts from a checked state.
type restorer struct {
	k     *Kernel
	s     *savedKernel
	fs    *vfs.Restored
	procs []*process
}

func (r *restorer) restore() error {
	k, s := r.k, r.s
	fs, err := vfs.Restore(k.fs, s.Nodes, s.NextIno, s.Pipes, s.Files, k.console, k.remap)
	if err != nil {
		return err
	}
	r.fs = fs
	fr := mm.RestoreFrames(k.m.RAM(), k.m.DropTranslations, &s.Frames)
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
	for i, st := range s.Threads {
		t := &thread{k: k, tid: st.TID, proc: r.procs[st.Proc], state: threadState(st.State), regs: st.Regs, xsave: st.XSave,
			fsBase: st.FSBase, clearTID: st.ClearTID, futexAddr: st.FutexAddr, futexMask: st.FutexMask, deadline: st.Deadline,
			wakeErr: unix.Errno(st.WakeErr), waitSeq: st.WaitSeq, warned: st.Warned, timedOut: st.TimedOut,
			sigmask: st.Sigmask, pending: st.Pending, infos: st.Infos, savedMask: st.SavedMask, suspended: st.Suspended,
			altstack: altStack{st.AltStack.SP, st.AltStack.Size, st.AltStack.Flags}, retryAt: st.RetryAt}
		switch st.Wait.Kind {
		case waitFiles:
			files := make([]*openFile, len(st.Wait.Files))
			for j, f := range st.Wait.Files {
				files[j] = fs.Files[f]
			}
			t.waitKey = fileWait{}
			t.waitOnFiles(files)
		case waitSignal:
			t.waitKey = sigWait{}
		case waitChildOf:
			t.waitKey = waitChild(r.procs[st.Wait.Ref])
		}
		threads[i] = t
	}

	k.fs = fs.FS
	r.charge()
	k.fr = fr
	k.threads, k.cur, k.nextTID = threads, s.Cur, s.NextTID
	k.resched, k.restart, k.returned = s.Resched, s.Restart, s.Returned
	k.waitSeq, k.switches = s.WaitSeq, s.Switches
	k.hog.thread, k.hog.waiting, k.hog.at = nil, s.HogWaiting, s.HogAt
	if s.HogThread >= 0 {
		k.hog.thread = threads[s.HogThread]
	}
	k.stats = Stats{Calls: orEmpty(s.Calls), Unsupported: orEmpty(s.Unsupported), Warnings: s.Warnings}
	return nil
}

func orEmpty(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return map[string]uint64{}
	}
	return m
}

func (r *restorer) proc(p *process, sp *savedProc, fr *mm.Frames) {
	*p = process{pid: sp.PID, brk: sp.Brk, exe: sp.Exe, live: sp.Live, zombie: sp.Zombie, status: sp.Status, subreaper: sp.Subreaper,
		execs: sp.Execs, timer: realTimer{at: sp.TimerAt, interval: sp.TimerEvery}}
	if sp.Parent >= 0 {
		p.parent = r.procs[sp.Parent]
	}
	for _, c := range sp.Children {
		p.children = append(p.children, r.procs[c])
	}
	for sig, a := range sp.Sigactions {
		p.sigactions[sig] = sigaction{handler: a.Handler, flags: a.Flags, restorer: a.Restorer, mask: a.Mask}
	}
	p.fds = r.fs.FDs(sp.FDs)
	p.as = &addressSpace{mm.RestoreSpace(fr, sp.Space, sp.PID, r.fs.Mapped)}
}

// replaceBreakpoints places a replay's breakpoints again in a restored
// program: the restored RAM has none.
func (k *Kernel) replaceBreakpoints() error {
	if k.bp == nil {
		return nil
	}
	k.SetBreakpoints(k.bp.on)
	k.bp.keepDebugStack(k.m.RAM())
	live, placed := k.processes(), map[*process]bool{}
	for _, t := range k.threads {
		p := t.proc
		if !live[p] || placed[p] {
			continue
		}
		placed[p] = true
		if err := k.placeAll(p.pid, p.as, true); err != nil {
			return err
		}
	}
	for _, t := range k.threads {
		if t.state == exited {
			continue
		}
		regs := t.regs
		if t == k.current() {
			r, err := k.m.VCPU().Regs()
			if err != nil {
				return err
			}
			regs = k.UserRegs(r)
		}
		if err := k.bp.on.Resumed(&Break{TID: t.tid, PID: t.proc.pid, Regs: &regs, k: k, proc: t.proc}); err != nil {
			return err
		}
	}
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
