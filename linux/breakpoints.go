package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// Mapping is a file mapped into a process: what names the addresses in
// it (mm.Mapping).
type Mapping = mm.Mapping

// Breakpoints is told of a program's file mappings and stops the program
// where it asks: a replay's probes. Nothing it does changes what the
// program computes, so a recording replays with or without it.
type Breakpoints interface {
	// Mapped is told of every file mapping as it is made (a fork's copies
	// included), with the file's contents; it returns the addresses in
	// [m.Start, m.End) to break at.
	Mapped(m Mapping, file []byte) ([]uint64, error)
	// Break is called when a thread reaches one of them, or returns from
	// a call it asked to see return (Break.WatchReturn).
	Break(b *Break) error
	// Resumed is told of each live thread of a program restored from a
	// checkpoint, with its own registers: the calls it is in began before
	// the checkpoint, and their returns can be watched as if their
	// entries had been seen (Break.WatchReturnAt).
	Resumed(b *Break) error
}

// ExitWatcher is a Breakpoints that is also told, after each of the
// program's exits (a system call, a trap, an interrupt), of the thread
// that runs next with its user registers: where the stretch of execution
// up to the next exit begins; and of each system call as the program makes
// it, before the kernel serves it (Entering: syscall_stops.go). Only a
// debugger needs it.
type ExitWatcher interface {
	Exited(b *Break) error
	Entering(b *Break) error
}

// Break is a thread stopped at a breakpoint.
type Break struct {
	TID, PID int
	// Image is which of the process's images runs: the count of its
	// execs (Mapping.Image).
	Image uint64
	// Regs are the thread's registers, RIP at the breakpoint. The callee
	// must not change them.
	Regs *kvm.Regs
	// Mapping is the file mapping holding RIP (nil if none does).
	Mapping *Mapping
	// Return is set for a return asked for by WatchReturn: Cookie is the
	// cookie it gave.
	Return bool
	Cookie uint64
	// Stepped is set for a single step Step asked for, done; Start for the
	// stop StopAtStart asked for. Retry is set for a breakpoint reached
	// again because its instruction faulted before it ran and runs again
	// (a fault the kernel served): the same execution of it, met twice —
	// once in the stretch the fault ended, once where the next begins.
	Stepped, Start, Retry bool
	// Running, on a Resumed Break, marks the thread the restored program
	// runs first: where the stretch after the checkpoint's exit begins
	// (that exit's own Break came before the checkpoint was taken; an
	// interrupt there that runs another thread has a Break of its own).
	Running bool
	// Forked and Execed, on an exit's Break (ExitWatcher), say what the
	// system call the thread resumes from did to its process: it made
	// process Forked (fork, vfork, or a clone without CLONE_THREAD), or
	// exec replaced its image (Regs at the new image's entry).
	Forked int
	Execed bool
	// Ended are the processes (but the program's first, whose end is the
	// run's) that ended since the last exit's Break.
	Ended []ProcessEnd
	// Syscall is a system call: on Entering's Break, the one the thread
	// makes, Regs as Linux shows them at a syscall-entry stop (RIP after
	// the SYSCALL, RAX -ENOSYS); on an exit's, if Returned, the one the
	// thread returns from, its result in RAX.
	Syscall  uint64
	Returned bool
	// BeforeHandler: Returned from a call at the exit where a signal's
	// handler is entered next, Regs the call's return as Linux's
	// syscall-exit stop shows it; no instruction runs at them. The
	// handler's own Break follows at the same exit.
	BeforeHandler bool

	k    *Kernel
	proc *process
}

// ProcessEnd is a process's end: its pid and wait status (the exit code
// in bits 8-15, or the signal that killed it in bits 0-6).
type ProcessEnd struct {
	PID    int
	Status uint64
}

// maxReturnWatches bounds the returns one thread can be watched for at
// once: a recursion deeper than this loses its outermost returns.
const maxReturnWatches = 4096

// WatchReturn asks for a Break when the function the thread has just
// entered returns: at the return address on top of its stack, with the
// stack pointer above it. Call it at the function's entry only.
func (b *Break) WatchReturn(cookie uint64) error {
	ret, err := b.ReadUint64(b.Regs.RSP)
	if err != nil {
		return nil // no return address to watch: the call never returns here
	}
	return b.WatchReturnAt(cookie, ret, b.Regs.RSP+8)
}

// WatchReturnAt asks for a Break when the thread returns to ret with its
// stack pointer at rsp: the return of a call it is in.
func (b *Break) WatchReturnAt(cookie, ret, rsp uint64) error {
	k := b.k
	w := returnWatch{tid: b.TID, addr: ret, rsp: rsp, cookie: cookie}
	ws := k.bp.returns[b.TID]
	if len(ws) >= maxReturnWatches {
		k.bp.unwatch(k, ws[0])
		ws = ws[1:]
	}
	pa, ok := b.proc.as.Frame(ret &^ pageMask)
	if !ok {
		return nil
	}
	w.pa = pa + ret&pageMask
	k.bp.returns[b.TID] = append(ws, w)
	k.bp.temp[w.pa]++
	return k.fr.Patch(w.pa, false)
}

// ReadUint64 reads a word of the thread's memory.
func (b *Break) ReadUint64(va uint64) (uint64, error) {
	var w [8]byte
	if err := b.proc.as.Read(va, w[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(w[:]), nil
}

// FileAt is the file mapping of the thread's process that holds va, nil
// if none does.
func (b *Break) FileAt(va uint64) *Mapping { return b.proc.as.FileAt(va) }

// returnWatch is a return a thread is watched for.
type returnWatch struct {
	tid    int
	addr   uint64 // the return address
	pa     uint64 // where its int3 is
	rsp    uint64 // the stack pointer after the return
	cookie uint64
}

// breakpoints are the kernel's side of a Breakpoints: which thread is
// being stepped over an int3, which returns are watched. The int3s
// themselves are the frames' (mm.Frames.Patch).
type breakpoints struct {
	on      Breakpoints
	temp    map[uint64]int // the int3s returns are watched at, with their holds
	returns map[int][]returnWatch
	// step is the int3 the running thread is being single-stepped over:
	// put back when the step traps (#DB), or when its instruction faults
	// (abortStep), and then retry is that thread's next trap there.
	step  *stepOver
	retry *stepOver
	// debugStack is what the debug traps' stack held before the
	// breakpoints' traps wrote it: zeros, or the frame of the program's
	// own last debug trap.
	debugStack []byte
	// stepFlags is the flags slot of the last trap frame the trap stub
	// holds or held, if a debugger's trap flag is in it (trapFlags).
	stepFlags *trapFlags
	// A debugger's (debug.go): the holds on the int3s it set, in all and
	// by the image they were set in, the threads it has single-stepping,
	// and whether it waits for the start.
	holds    map[uint64]int
	held     map[image]map[uint64]int
	stepping map[int]bool
	atStart  bool
	// afterSyscall is, for a thread stepping over a SYSCALL, the int3
	// after it that ends the step (armStep).
	afterSyscall map[int]uint64
	// exits is on, if it watches exits; ended, the processes that ended
	// since it was last told.
	exits ExitWatcher
	ended []ProcessEnd
}

// keepDebugStack notes what the debug stack holds after a trap of the
// program's own.
func (bp *breakpoints) keepDebugStack(ram *memory.RAM) {
	if bp == nil {
		return
	}
	if b, err := ram.Slice(abi.IST1Top, abi.IST2Top-abi.IST1Top); err == nil {
		bp.debugStack = bytes.Clone(b)
	}
}

// image is one of a process's images: what a breakpoint is set in, and
// goes with.
type image struct {
	pid   int
	execs uint64
}

type stepOver struct {
	tid  int
	pa   uint64
	site bool
	tf   bool // the trap flag the thread had itself
}

// SetBreakpoints lets b place breakpoints in the program from now on;
// call it before the machine runs.
func (k *Kernel) SetBreakpoints(b Breakpoints) {
	k.bp = &breakpoints{on: b, temp: map[uint64]int{}, returns: map[int][]returnWatch{}, holds: map[uint64]int{}, held: map[image]map[uint64]int{}, stepping: map[int]bool{}, afterSyscall: map[int]uint64{}}
	k.bp.exits, _ = b.(ExitWatcher)
}

// mapped records a new file mapping of p, tells the breakpoints and
// places the ones they ask for.
func (k *Kernel) mapped(p *process, m Mapping, data []byte) error {
	m.PID, m.Image = p.pid, p.execs
	m = p.as.AddFile(m, data)
	if k.bp == nil {
		return nil
	}
	return k.placeIn(p.as, m)
}

// placeIn tells the breakpoints of mapping m in as and places the ones
// they ask for.
func (k *Kernel) placeIn(as *mm.Space, m Mapping) error {
	addrs, err := k.bp.on.Mapped(m, m.Data())
	if err != nil {
		return err
	}
	for _, va := range addrs {
		pa, ok := as.Frame(va &^ pageMask)
		if va < m.Start || va >= m.End || !ok {
			return fmt.Errorf("linux: breakpoint %#x is outside the mapping of %s at [%#x, %#x)", va, m.Path, m.Start, m.End)
		}
		if err := k.bp.hold(k, image{m.PID, m.Image}, pa+va&pageMask); err != nil { // as SetBreakpoint's: ClearBreakpoint drops it
			return err
		}
	}
	return nil
}

// hold holds the int3 at pa for a breakpoint set in img.
func (bp *breakpoints) hold(k *Kernel, img image, pa uint64) error {
	if bp.held[img] == nil {
		bp.held[img] = map[uint64]int{}
	}
	bp.held[img][pa]++
	bp.holds[pa]++
	return k.fr.Patch(pa, true)
}

// release lets n holds of img on the int3 at pa go; the int3 goes with
// the last, unless a return watch or a step still needs it.
func (bp *breakpoints) release(k *Kernel, img image, pa uint64, n int) error {
	n = min(n, bp.held[img][pa])
	if n == 0 {
		return nil
	}
	if bp.held[img][pa] -= n; bp.held[img][pa] == 0 {
		delete(bp.held[img], pa)
	}
	if bp.holds[pa] -= n; bp.holds[pa] > 0 {
		return nil
	}
	delete(bp.holds, pa)
	if s := bp.step; s != nil && s.pa == pa {
		s.site = false // the step over it puts back only what is still wanted
	}
	if bp.temp[pa] > 0 {
		return nil
	}
	return k.fr.Unpatch(pa)
}

// imageGone lets every hold set in img go: exec replaced the image, or
// its process ended. Frames it shared (a fork's) keep the others' int3s.
func (k *Kernel) imageGone(img image) error {
	if k.bp == nil {
		return nil
	}
	var errs []error
	for pa, n := range k.bp.held[img] {
		errs = append(errs, k.bp.release(k, img, pa, n))
	}
	delete(k.bp.held, img)
	return errors.Join(errs...)
}

// placeAll tells the breakpoints of every file mapping of process pid's
// address space as, its image execs — a new image's, the ones a fork's
// child inherits, or (restored) those of a program restored from a
// checkpoint — and places the ones they ask for.
func (k *Kernel) placeAll(pid int, execs uint64, as *mm.Space, restored bool) error {
	as.SetOwner(pid, execs)
	if k.bp == nil {
		return nil
	}
	for _, m := range as.Files() {
		m.Restored = restored
		if err := k.placeIn(as, m); err != nil {
			return err
		}
	}
	return nil
}

// HostTrap reports whether the exit at port is a trap that is not the
// program's own: a debug trap — a breakpoint (#BP) or a single step (#DB)
// — or a fault of a stale translation (stale.go). Like the kit's probe
// hits they do not count in positions, so a replay, with probes or
// without the host's fault, sees the recording's.
func (k *Kernel) HostTrap(port uint16) bool {
	if port != abi.PortTrap {
		return false
	}
	v, err := k.m.RAM().Uint64(k.m.VCPU().SyncedRegs().RSP)
	return err == nil && (v == 1 || v == 3 || v == 14 && k.staleFault() || v == 6 && k.staleOpcode())
}

// The trap frame's slots the stub leaves at RSP.
const (
	frameRIP    = 2 * 8
	frameRFLAGS = 4 * 8
	frameRSP    = 5 * 8
)

const rflagsTF = x86.RFLAGSTF

// frameRegs are the program's registers where the trap stub's frame at
// regs.RSP resumes it: the frame's RIP, RSP and flags, the rest regs'.
func (k *Kernel) frameRegs(regs *kvm.Regs) (kvm.Regs, error) {
	ram := k.m.RAM()
	at := *regs
	var errRIP, errRSP, errFlags error
	at.RIP, errRIP = ram.Uint64(regs.RSP + frameRIP)
	at.RSP, errRSP = ram.Uint64(regs.RSP + frameRSP)
	at.RFLAGS, errFlags = ram.Uint64(regs.RSP + frameRFLAGS)
	return at, errors.Join(errRIP, errRSP, errFlags)
}

// debugTrap handles #BP and #DB: a breakpoint of k.bp is reported and
// stepped over; anything else is the program's own (handled reports
// false).
func (k *Kernel) debugTrap(regs *kvm.Regs, vector, rip uint64) (handled bool, err error) {
	bp := k.bp
	if bp == nil {
		return false, nil
	}
	ram := k.m.RAM()
	if vector == 1 {
		return k.stepTrap(regs)
	}
	at := rip - 1 // past the int3
	pa, ok := k.proc().as.Frame(at &^ pageMask)
	if !ok {
		return false, nil
	}
	pa += at & pageMask
	ours, site := k.fr.PatchedAt(pa)
	if !ours {
		return false, nil // the program's own int3
	}
	hit, err := k.frameRegs(regs)
	if err != nil {
		return true, err
	}
	hit.RIP = at
	b := &Break{TID: k.current().tid, PID: k.proc().pid, Image: k.proc().execs, Regs: &hit, Mapping: k.proc().as.FileAt(at), k: k, proc: k.proc()}
	if r := bp.retry; r != nil && r.tid == b.TID {
		bp.retry = nil
		b.Retry = r.pa == pa
	}
	if bp.temp[pa] > 0 {
		if err := bp.returned(k, b, pa); err != nil {
			return true, err
		}
		if err := bp.steppedSyscall(k, b, pa); err != nil {
			return true, err
		}
	}
	if site {
		b.Return, b.Cookie = false, 0
		if err := bp.on.Break(b); err != nil {
			return true, err
		}
	}
	// Step over: the original instruction in place, one instruction
	// with the trap flag, then the int3 back (the #DB above) — or, for a
	// SYSCALL, which would copy the flag into R11, an int3 after it
	// (armStep; syscallStepped puts this one back).
	if err := k.fr.Unpatch(pa); err != nil {
		return true, err
	}
	// A trap flag of a debugger's step is not the thread's own.
	bp.step = &stepOver{tid: b.TID, pa: pa, site: site, tf: hit.RFLAGS&rflagsTF != 0 && !bp.stepping[b.TID]}
	if err := ram.PutUint64(regs.RSP+frameRIP, at); err != nil {
		return true, err
	}
	tf, err := k.armStep(k.current(), at)
	if err != nil {
		return true, err
	}
	if !tf {
		return true, nil
	}
	return true, ram.PutUint64(regs.RSP+frameRFLAGS, hit.RFLAGS|rflagsTF)
}

// stepTrap handles a #DB: the end of a step over an int3 (which goes
// back), and of a single step a debugger asked for (a Break). Another is
// the program's own (handled false).
func (k *Kernel) stepTrap(regs *kvm.Regs) (handled bool, err error) {
	bp, t, ram := k.bp, k.current(), k.m.RAM()
	s := bp.step
	over := s != nil && s.tid == t.tid
	if !over && !bp.stepping[t.tid] {
		return false, nil
	}
	at, err := k.frameRegs(regs)
	if err != nil {
		return true, err
	}
	if over {
		bp.step = nil
		if err := bp.putBack(k, s); err != nil {
			return true, err
		}
		if !s.tf {
			at.RFLAGS &^= rflagsTF
		}
	}
	if bp.stepping[t.tid] {
		if err := k.stepped(t, &at); err != nil {
			return true, err
		}
	}
	return true, ram.PutUint64(regs.RSP+frameRFLAGS, at.RFLAGS)
}

// stepped reports a debugger's single step of thread t done, at regs,
// their trap flag cleared (the debugger's): a Break with Stepped set. If
// the debugger steps t again, the step is armed — by the trap flag, set
// in regs.RFLAGS for the caller to resume with, or by an int3 after a
// SYSCALL.
func (k *Kernel) stepped(t *thread, regs *kvm.Regs) error {
	bp := k.bp
	delete(bp.stepping, t.tid)
	regs.RFLAGS &^= rflagsTF
	b := &Break{TID: t.tid, PID: t.proc.pid, Image: t.proc.execs, Regs: regs, Mapping: t.proc.as.FileAt(regs.RIP), Stepped: true, k: k, proc: t.proc}
	if err := bp.on.Break(b); err != nil || !bp.stepping[t.tid] {
		return err
	}
	tf, err := k.armStep(t, regs.RIP)
	if tf {
		regs.RFLAGS |= rflagsTF
	}
	return err
}

// putBack puts the int3 a step over s took out back, if still wanted.
func (bp *breakpoints) putBack(k *Kernel, s *stepOver) error {
	if s.site || bp.temp[s.pa] > 0 {
		return k.fr.Patch(s.pa, s.site)
	}
	return nil
}

// steps reports whether a debugger's single step of t is under way.
func (bp *breakpoints) steps(t *thread) bool { return bp != nil && bp.stepping[t.tid] }

// handlerEntered ends the step over a SYSCALL of the running thread t
// whose return enters the signal handler regs now point at: the int3
// after the SYSCALL goes (the handler may never return there), an int3
// stepped over comes back. A debugger's single step ends where the handler
// begins too, as Linux ends a ptraced thread's (signal_setup_done), without
// its trap flag (the debugger's: the signal frame keeps the flags without
// it): a Break with Stepped set.
func (bp *breakpoints) handlerEntered(k *Kernel, t *thread, regs *kvm.Regs) error {
	if bp == nil {
		return nil
	}
	if pa, ok := bp.afterSyscall[t.tid]; ok {
		if err := bp.syscallStepped(k, t.tid, pa); err != nil {
			return err
		}
	}
	if !bp.steps(t) {
		return nil
	}
	return k.stepped(t, regs)
}

// emulatedStep ends a debugger's single step of the running thread t
// over an instruction the kernel emulated (an RDTSC, patched to UD2): its
// fault came before the trap flag's trap, and the thread, with the flag
// still set, would run one more instruction before it. The step ends
// where the trap stub's frame (at regs.RSP) resumes t, as it would have
// natively: a Break with Stepped set.
func (bp *breakpoints) emulatedStep(k *Kernel, t *thread, regs *kvm.Regs) error {
	if !bp.steps(t) {
		return nil
	}
	at, err := k.frameRegs(regs)
	if err != nil {
		return err
	}
	if err := k.stepped(t, &at); err != nil {
		return err
	}
	return k.m.RAM().PutUint64(regs.RSP+frameRFLAGS, at.RFLAGS)
}

// abortStep ends the step over an int3 of the running thread whose
// instruction faulted instead (the trap stub's frame at regs.RSP, its
// flags slot flags): the int3 goes back and the trap flag is again the
// thread's own, so that the instruction, run again after a fault the
// kernel serves, meets its breakpoint again, a Break with Retry set —
// and a signal's handler, entered instead, runs without the flag.
func (k *Kernel) abortStep(regs *kvm.Regs, flags *uint64) error {
	bp := k.bp
	if bp == nil || bp.step == nil || bp.step.tid != k.current().tid {
		return nil
	}
	s := bp.step
	bp.step, bp.retry = nil, s
	if err := bp.putBack(k, s); err != nil {
		return err
	}
	*flags &^= rflagsTF
	if s.tf || bp.stepping[s.tid] {
		*flags |= rflagsTF
	}
	return k.m.RAM().PutUint64(regs.RSP+frameRFLAGS, *flags)
}

// armStep has thread t, about to run the instruction at rip, stop after
// it — by the trap flag (tf: the caller sets it), or, for a SYSCALL, by
// an int3 after it: SYSCALL copies the flags into R11, and a trap flag
// there would be seen where the recording saw none (and would trap one
// instruction late).
func (k *Kernel) armStep(t *thread, rip uint64) (tf bool, err error) {
	var code [2]byte
	if k.readOriginal(t.proc.as, rip, code[:]) != nil || code != [2]byte{0x0f, 0x05} {
		return true, nil
	}
	after := rip + 2
	pa, ok := t.proc.as.Frame(after &^ pageMask)
	if !ok {
		return true, nil
	}
	pa += after & pageMask
	bp := k.bp
	bp.afterSyscall[t.tid] = pa
	bp.temp[pa]++
	return false, k.fr.Patch(pa, false)
}

// syscallStepped ends thread tid's step over a SYSCALL, by the int3 after
// it at pa (armStep): that int3 goes, and an int3 on the SYSCALL that the
// step went over comes back.
func (bp *breakpoints) syscallStepped(k *Kernel, tid int, pa uint64) error {
	delete(bp.afterSyscall, tid)
	bp.dropTemp(k, pa)
	if st := bp.step; st != nil && st.tid == tid {
		bp.step = nil
		return bp.putBack(k, st)
	}
	return nil
}

// steppedSyscall reports the end of a step over a SYSCALL (armStep), if
// that is the int3 thread b.TID reached at pa: a Break with Stepped set.
func (bp *breakpoints) steppedSyscall(k *Kernel, b *Break, pa uint64) error {
	if at, ok := bp.afterSyscall[b.TID]; !ok || at != pa {
		return nil
	}
	if err := bp.syscallStepped(k, b.TID, pa); err != nil {
		return err
	}
	if !bp.stepping[b.TID] {
		return nil
	}
	delete(bp.stepping, b.TID)
	b.Stepped = true
	err := bp.on.Break(b)
	b.Stepped = false
	return err
}

// returned reports the watched returns that thread b.TID has reached at
// pa: those whose stack pointer it is back at. Watches deeper than that
// (a longjmp or an exception unwound past them) are dropped.
func (bp *breakpoints) returned(k *Kernel, b *Break, pa uint64) error {
	ws := bp.returns[b.TID]
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		if w.rsp > b.Regs.RSP {
			break // an outer call's
		}
		bp.returns[b.TID] = ws[:i]
		bp.unwatch(k, w)
		if w.pa == pa && w.rsp == b.Regs.RSP && w.addr == b.Regs.RIP {
			b.Return, b.Cookie = true, w.cookie
			if err := bp.on.Break(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// unwatch drops a return watch's hold on its int3, removing the int3
// with the last hold unless it is also a site (or being stepped over:
// the step puts back what is still wanted).
func (bp *breakpoints) unwatch(k *Kernel, w returnWatch) { bp.dropTemp(k, w.pa) }

// dropTemp drops a hold on the temporary int3 at pa, removing it with the
// last unless it is also a site.
func (bp *breakpoints) dropTemp(k *Kernel, pa uint64) {
	if bp.temp[pa]--; bp.temp[pa] > 0 {
		return
	}
	delete(bp.temp, pa)
	if _, site := k.fr.PatchedAt(pa); !site {
		_ = k.fr.Unpatch(pa)
	}
}

// forgetThread forgets what the breakpoints keep for a thread that exited,
// or whose image exec replaced: the returns it was watched for, and the
// steps under way — a debugger's, and the step over an int3 on the
// system call that ended it (exit, execve), whose int3 goes back, for
// the threads and processes that share its code.
func (k *Kernel) forgetThread(tid int) error {
	bp := k.bp
	if bp == nil {
		return nil
	}
	for _, w := range bp.returns[tid] {
		bp.unwatch(k, w)
	}
	delete(bp.returns, tid)
	if pa, ok := bp.afterSyscall[tid]; ok {
		bp.dropTemp(k, pa)
		delete(bp.afterSyscall, tid)
	}
	delete(bp.stepping, tid)
	if r := bp.retry; r != nil && r.tid == tid {
		bp.retry = nil
	}
	if s := bp.step; s != nil && s.tid == tid {
		bp.step = nil
		return bp.putBack(k, s)
	}
	return nil
}

// RemoveBreakpoints puts back every instruction a breakpoint replaced,
// the debug traps' stack and the flags of a trap frame a debugger's trap
// flag is in: RAM as the recording left it, for the end's hash.
func (k *Kernel) RemoveBreakpoints() error {
	if k.bp == nil {
		return nil
	}
	if _, err := k.showRecordedTraps(); err != nil {
		return err
	}
	return k.fr.UnpatchAll()
}

// WithoutBreakpoints runs f with RAM as the recording has it here — the
// bytes every int3 replaced, the debug traps' stack and a trap frame's
// flags put back — and then puts the breakpoints back: a replay with probes checks a
// checkpoint's RAM hash so.
func (k *Kernel) WithoutBreakpoints(f func() error) error {
	if k.bp == nil {
		return f()
	}
	restore, err := k.showRecordedTraps()
	if err != nil {
		return err
	}
	defer restore()
	if err := k.fr.ShowOriginals(); err != nil {
		return err
	}
	return errors.Join(f(), k.fr.ShowPatches())
}

// showRecordedTraps puts back what the debugger's traps wrote in RAM where
// the recording's own are — the debug traps' stack, and the flags of a
// trap frame a debugger's trap flag is in — and returns how to put the
// debugger's back.
func (k *Kernel) showRecordedTraps() (restore func(), err error) {
	stack, err := k.m.RAM().Slice(abi.IST1Top, abi.IST2Top-abi.IST1Top)
	if err != nil {
		return nil, err
	}
	ours := bytes.Clone(stack)
	if k.bp.debugStack != nil {
		copy(stack, k.bp.debugStack)
	} else {
		clear(stack)
	}
	flags, err := k.showRecordedFlags()
	if err != nil {
		copy(stack, ours)
		return nil, err
	}
	return func() { flags(); copy(stack, ours) }, nil
}

// procNews is what a thread's system call did to its process, for an
// ExitWatcher to be told when the thread resumes (Break.Forked, Execed),
// and, when it resumes in a signal's handler, the call's return as it
// stood before the handler (returned: its registers).
type procNews struct {
	forked   int
	execed   bool
	returned *kvm.Regs
}

// tell keeps news for thread t's next resumption, if an ExitWatcher
// watches: only a debugger asks, and a replay without one keeps none.
func (k *Kernel) tell(t *thread, news procNews) {
	if k.watchesExits() {
		t.news = news
	}
}

func (k *Kernel) watchesExits() bool { return k.bp != nil && k.bp.exits != nil }

// exited tells an ExitWatcher of the thread that runs after an exit,
// which leaves the system call it was in, if it was and has not blocked.
func (k *Kernel) exited() error {
	t := k.current()
	watched := k.watchesExits()
	if t.state == exited || !watched && !t.inCall {
		return nil
	}
	regs := k.UserRegs(*k.m.VCPU().SyncedRegs())
	// A thread that blocked is still in its call: it returns when it runs
	// again (a sleep, with its result), or from the call it issues again.
	returned := t.state != blocked && t.leaveCall(regs.RIP)
	if !watched {
		return nil
	}
	return k.tellExited(t, regs, returned)
}

// tellExited is exited's telling, apart so that the Break's registers
// are allocated only when there is a watcher to tell: exited runs at
// every system call's exit.
func (k *Kernel) tellExited(t *thread, regs kvm.Regs, returned bool) error {
	armed := k.bp.stepping[t.tid] // armed before: by the int3 after its system call
	news, ended := t.news, k.bp.ended
	t.news, k.bp.ended = procNews{}, nil
	b := &Break{TID: t.tid, PID: t.proc.pid, Image: t.proc.execs, Regs: &regs, Forked: news.forked, Execed: news.execed, Ended: ended,
		Syscall: t.call.nr, Returned: returned, k: k, proc: t.proc}
	if news.returned != nil {
		// The call's return, then its handler, as Linux's syscall-exit
		// stop comes before the signal's delivery: one exit, two Breaks.
		ret := &Break{TID: t.tid, PID: t.proc.pid, Image: t.proc.execs, Regs: news.returned, Syscall: t.call.nr,
			Returned: true, BeforeHandler: true, k: k, proc: t.proc}
		if err := k.bp.exits.Exited(ret); err != nil {
			return err
		}
	}
	if err := k.bp.exits.Exited(b); err != nil {
		return err
	}
	if armed || !k.bp.stepping[t.tid] {
		return nil
	}
	return k.armResumed(regs.RIP)
}

// armResumed arms a step asked for at an exit for the thread about to
// resume at rip: in its flags as the vCPU holds them, or, in a trap stub,
// in the frame the stub's IRETQ pops.
func (k *Kernel) armResumed(rip uint64) error {
	t := k.current()
	tf, err := k.armStep(t, rip)
	if err != nil || !tf {
		return err
	}
	c := k.m.VCPU()
	regs := c.SyncedRegs()
	if regs.RIP == rip {
		regs.RFLAGS |= rflagsTF
		c.MarkRegsDirty()
		return nil
	}
	ram := k.m.RAM()
	flags, err := ram.Uint64(regs.RSP + frameRFLAGS)
	if err != nil {
		return err
	}
	if flags&rflagsTF == 0 {
		k.bp.stepFlags = &trapFlags{regs.RSP + frameRFLAGS, flags}
	}
	return ram.PutUint64(regs.RSP+frameRFLAGS, flags|rflagsTF)
}

// trapFlags is a trap frame's flags slot, at addr, that holds a
// debugger's trap flag — the CPU pushed it with a stepped thread's
// flags, or a step asked at an exit was armed in it — and the flags the
// recording has there. The stub's IRETQ pops the frame, but RAM keeps it
// until the next trap: without this, a debugged replay's RAM differed
// from the recording's by that bit, at the end and at checkpoints.
type trapFlags struct{ addr, recorded uint64 }

// noteTrapFlags notes, for a trap of thread t whose frame's flags slot
// at addr holds flags, whether the trap flag in it is a debugger's.
func (bp *breakpoints) noteTrapFlags(t *thread, addr, flags uint64) {
	if bp == nil {
		return
	}
	bp.stepFlags = nil
	own := bp.step != nil && bp.step.tid == t.tid && bp.step.tf
	if flags&rflagsTF != 0 && !own && (bp.steps(t) || bp.step != nil && bp.step.tid == t.tid) {
		bp.stepFlags = &trapFlags{addr, flags &^ rflagsTF}
	}
}

// showRecordedFlags puts the recording's flags in the trap frame slot a
// debugger's trap flag is in, if one is, and returns how to put it back.
func (k *Kernel) showRecordedFlags() (restore func(), err error) {
	sf := k.bp.stepFlags
	if sf == nil || sf.addr >= abi.IST1Top && sf.addr < abi.IST2Top {
		return func() {}, nil // the debug traps' stack is put back whole
	}
	ram := k.m.RAM()
	now, err := ram.Uint64(sf.addr)
	if err != nil {
		return nil, err
	}
	if err := ram.PutUint64(sf.addr, sf.recorded); err != nil {
		return nil, err
	}
	return func() { _ = ram.PutUint64(sf.addr, now) }, nil
}

// Stepping reports whether a thread is being single-stepped — over an
// int3, or for a debugger — so that the trap flag, or an int3 of the
// step's, stands in its registers or its frame: no checkpoint is taken
// then.
func (k *Kernel) Stepping() bool {
	bp := k.bp
	return bp != nil && (bp.step != nil || len(bp.stepping) > 0 || len(bp.afterSyscall) > 0)
}

// CurrentThread is the running thread's id.
func (k *Kernel) CurrentThread() int { return k.current().tid }

// FileAt is the file mapping of the running process that holds va, nil
// if none does.
func (k *Kernel) FileAt(va uint64) *Mapping { return k.proc().as.FileAt(va) }

// UserRegs are the program's registers where the vCPU, stopped with
// regs, left it: in the SYSCALL stub, at the instruction after its
// SYSCALL; in an exception stub, where the exception interrupted it (the
// CPU's frame at the top of the stub's stack: the debug traps' own, or
// RSP0's).
func (k *Kernel) UserRegs(regs kvm.Regs) kvm.Regs {
	switch {
	case regs.RIP >= stubPage && regs.RIP < stubPage+pageSize:
		regs.RIP = regs.RCX
	case regs.RIP >= vectorsPage && regs.RIP < vectorsPage+pageSize:
		top := uint64(abi.BootStackTop)
		if regs.RSP > abi.IST1Top && regs.RSP <= abi.IST2Top {
			top = abi.IST2Top
		}
		ram := k.m.RAM()
		rip, err1 := ram.Uint64(top - 40)
		rsp, err2 := ram.Uint64(top - 16)
		if err1 == nil && err2 == nil {
			regs.RIP, regs.RSP = rip, rsp
		}
	}
	return regs
}

// replaceBreakpoints places a replay's breakpoints again in a restored
// program: the restored RAM has none.
func (k *Kernel) replaceBreakpoints() error {
	if k.bp == nil {
		return nil
	}
	k.SetBreakpoints(k.bp.on)
	k.bp.keepDebugStack(k.m.RAM())
	k.bp.stepFlags = nil // restored RAM is the recording's
	for _, p := range k.liveProcesses() {
		if err := k.placeAll(p.pid, p.execs, p.as, true); err != nil {
			return err
		}
	}
	for _, t := range k.threads {
		if t.state == exited {
			continue
		}
		regs, running := t.regs, t == k.current() && t.state == runnable
		if t == k.current() {
			r, err := k.m.VCPU().Regs()
			if err != nil {
				return err
			}
			regs = k.UserRegs(r)
		}
		if err := k.bp.on.Resumed(&Break{TID: t.tid, PID: t.proc.pid, Image: t.proc.execs, Regs: &regs, Running: running, k: k, proc: t.proc}); err != nil {
			return err
		}
	}
	return nil
}
