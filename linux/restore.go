package linux

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
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
	fr := &s.Frames
	if fr.Next < firstFree || fr.Next > ram || fr.Next%pageSize != 0 {
		return fmt.Errorf("frames end at %#x (want %#x to %#x, page-aligned)", fr.Next, firstFree, ram)
	}
	inUse := func(pa uint64) bool { return pa >= firstFree && pa < fr.Next && pa%pageSize == 0 }
	for _, pa := range slices.Concat(fr.Free, fr.Retired) {
		if !inUse(pa) {
			return fmt.Errorf("free frame %#x outside [%#x, %#x)", pa, firstFree, fr.Next)
		}
	}
	if fr.Settled < 0 || fr.Settled > len(fr.Retired) {
		return fmt.Errorf("%d of %d retired frames settled", fr.Settled, len(fr.Retired))
	}
	for pa, n := range fr.Shared {
		if !inUse(pa) || n < 2 || n > maxProcesses {
			return fmt.Errorf("shared frame %#x held %d times", pa, n)
		}
	}
	if err := vfs.Check(s.Nodes, s.NextIno, s.Pipes, s.Files); err != nil {
		return err
	}
	for i := range s.Procs {
		if err := checkProc(s, &s.Procs[i], inUse); err != nil {
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

func checkProc(s *savedKernel, p *savedProc, inUse func(uint64) bool) error {
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
	as := p.Space
	if !inUse(as.Root) {
		return fmt.Errorf("page-table root %#x", as.Root)
	}
	for _, list := range [][]uint64{as.Tables, as.Fresh} {
		for _, pa := range list {
			if !inUse(pa) {
				return fmt.Errorf("page table %#x", pa)
			}
		}
	}
	for va, pa := range as.Pages {
		if va%pageSize != 0 || va >= maxUserAddr || !inUse(pa) {
			return fmt.Errorf("page %#x in frame %#x", va, pa)
		}
	}
	for _, va := range slices.Concat(slices.Collect(maps.Keys(as.TSCSites)), as.COW) {
		if va >= maxUserAddr || as.TSCSites[va] != 0 && as.TSCSites[va] != rdtscLen && as.TSCSites[va] != rdtscpLen {
			return fmt.Errorf("address %#x", va)
		}
	}
	var end uint64
	for _, v := range as.VMAs {
		if v.Start < end || v.End <= v.Start || v.Start%pageSize != 0 || v.End%pageSize != 0 || v.End > maxUserAddr {
			return fmt.Errorf("range [%#x, %#x) after %#x", v.Start, v.End, end)
		}
		end = v.End
	}
	end = 0
	for _, m := range as.Files {
		if m.Start < end || m.End <= m.Start || m.End > maxUserAddr || !index(m.Node, len(s.Nodes)) || len(m.Path) > abi.LinuxMaxPath {
			return fmt.Errorf("file mapping [%#x, %#x) of %q after %#x", m.Start, m.End, m.Path, end)
		}
		end = m.End
	}
	return nil
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
	fr := newFrames(k.m.RAM(), k.m.DropTranslations)
	fr.next, fr.free = s.Frames.Next, slices.Clone(s.Frames.Free)
	fr.retired, fr.settled = slices.Clone(s.Frames.Retired), s.Frames.Settled
	for pa, n := range s.Frames.Shared {
		fr.shared[pa] = n
	}
	r.procs = make([]*process, len(s.Procs))
	for i := range s.Procs {
		r.procs[i] = &process{}
	}
	for i := range s.Procs {
		r.proc(r.procs[i], &s.Procs[i], fr)
		if err := r.checkCode(r.procs[i].as); err != nil {
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

func (r *restorer) proc(p *process, sp *savedProc, fr *frames) {
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
	ss := sp.Space
	as := &addressSpace{ram: fr.ram, fr: fr, root: ss.Root, fresh: map[uint64]bool{}, pages: map[uint64]uint64{},
		tables: slices.Clone(ss.Tables), tscSites: map[uint64]uint8{}, cow: map[uint64]bool{}}
	for _, pa := range ss.Fresh {
		as.fresh[pa] = true
	}
	for va, pa := range ss.Pages {
		as.pages[va] = pa
	}
	maps.Copy(as.tscSites, ss.TSCSites)
	for _, va := range ss.COW {
		as.cow[va] = true
	}
	for _, v := range ss.VMAs {
		as.vmas = append(as.vmas, vma{start: v.Start, end: v.End, prot: prot(v.Prot)})
	}
	for _, m := range ss.Files {
		data := m.Data
		if m.Node >= 0 {
			data = r.fs.Mapped(m.Node)
		}
		as.files = append(as.files, Mapping{PID: sp.PID, Path: m.Path, Start: m.Start, End: m.End, Offset: m.Offset, Exec: m.Exec, data: data})
	}
	p.as = as
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

// checkCode checks the executable file mappings of as against RAM, which
// the replay checks against the tape: each byte of their pages is the
// file's byte at the offset the mapping names, or zero (past a segment's
// file part), or an RDTSC site's patch. Probes are placed, and their
// hits named, by these offsets: a mapping that misplaces its file would
// put them where the program never runs.
func (r *restorer) checkCode(as *addressSpace) error {
	ram := r.k.m.RAM().Bytes()
	for _, m := range as.files {
		if !m.Exec {
			continue
		}
		if m.Offset%pageSize != 0 || m.Offset > uint64(len(m.data)) {
			return fmt.Errorf("file mapping [%#x, %#x) of %q at offset %#x of %d bytes", m.Start, m.End, m.Path, m.Offset, len(m.data))
		}
		for va := m.Start; va < m.End; va += pageSize {
			pa, ok := as.pages[va]
			if !ok || as.protAt(va)&protWrite != 0 {
				continue // the program may have written its own code there
			}
			got := ram[pa : pa+pageSize]
			at := m.Offset + (va - m.Start)
			for j, b := range got {
				if b == 0 || as.patched(va+uint64(j)) {
					continue
				}
				if at+uint64(j) >= uint64(len(m.data)) || m.data[at+uint64(j)] != b {
					return fmt.Errorf("file mapping [%#x, %#x) of %q: the byte at %#x is not the file's at offset %#x", m.Start, m.End, m.Path, va+uint64(j), at+uint64(j))
				}
			}
		}
	}
	return nil
}

// patched reports whether va is in an RDTSC site the kernel patched.
func (as *addressSpace) patched(va uint64) bool {
	for back := uint64(0); back < rdtscpLen && back <= va; back++ {
		if n, ok := as.tscSites[va-back]; ok && uint64(n) > back {
			return true
		}
	}
	return false
}
