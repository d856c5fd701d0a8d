package linux

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/vmm"
)

// A debugger's view of a program a Break holds stopped: its threads, their
// registers, its memory as the program has it, and the breakpoints and
// single steps the debugger asks for. The methods are valid only during
// the Break call, on the machine's goroutine. Nothing here changes what
// the program computes: a breakpoint is an int3 the replay steps over, a
// single step the trap flag for one instruction.

// ThreadInfo names a live thread.
type ThreadInfo struct {
	TID, PID int
	Name     string
}

// Threads lists the live threads, in creation order.
func (b *Break) Threads() []ThreadInfo {
	var out []ThreadInfo
	for _, t := range b.k.threads {
		if t.state != exited {
			out = append(out, ThreadInfo{TID: t.tid, PID: t.proc.pid, Name: t.comm})
		}
	}
	return out
}

// ThreadState is a thread's user state: its general registers, thread
// pointer and XSAVE image (x87, SSE, AVX).
type ThreadState struct {
	Regs   kvm.Regs
	FSBase uint64
	XSave  kvm.XSave
	// OrigRAX is the number of the system call the thread is in (from its
	// entry until it runs again), -1 if none: Linux's orig_rax.
	OrigRAX uint64
}

// State is live thread tid's state; ok is false if there is none. The
// stopped thread's general registers are b.Regs.
func (b *Break) State(tid int) (s ThreadState, ok bool, err error) {
	t := b.k.thread(tid)
	if t == nil {
		return s, false, nil
	}
	if t != b.k.current() {
		return ThreadState{Regs: t.regs, FSBase: t.fsBase, XSave: t.xsave, OrigRAX: t.origRAX()}, true, nil
	}
	x, err := b.k.m.VCPU().XSave()
	if err != nil {
		return s, false, err
	}
	return ThreadState{Regs: *b.Regs, FSBase: t.fsBase, XSave: x, OrigRAX: t.origRAX()}, true, nil
}

// thread is live thread tid, nil if none.
func (k *Kernel) thread(tid int) *thread {
	for _, t := range k.threads {
		if t.tid == tid && t.state != exited {
			return t
		}
	}
	return nil
}

// liveProcess is live process pid, nil if none.
func (k *Kernel) liveProcess(pid int) *process {
	for _, p := range k.liveProcesses() {
		if p.pid == pid {
			return p
		}
	}
	return nil
}

// space is live process pid's address space, nil if none.
func (k *Kernel) space(pid int) *mm.Space {
	if p := k.liveProcess(pid); p != nil {
		return p.as
	}
	return nil
}

// ReadMemory reads process pid's memory at va into p as the program has
// it: the bytes breakpoints replaced show as they were. An address the
// process cannot read is mm.ErrFault.
func (b *Break) ReadMemory(pid int, va uint64, p []byte) error {
	as := b.k.space(pid)
	if as == nil {
		return fmt.Errorf("linux: no process %d", pid)
	}
	return b.k.readOriginal(as, va, p)
}

// readOriginal reads as's memory at va into p, the int3s shown as the
// bytes they replaced.
func (k *Kernel) readOriginal(as *mm.Space, va uint64, p []byte) error {
	for len(p) > 0 {
		n := min(uint64(len(p)), pageSize-va&pageMask)
		if err := as.Read(va, p[:n]); err != nil {
			return err
		}
		if pa, ok := as.Frame(va &^ pageMask); ok {
			k.fr.Originals(pa+va&pageMask, p[:n])
		}
		p, va = p[n:], va+n
	}
	return nil
}

// ImageOf is which of live process pid's images runs now: the count of its
// execs (Mapping.Image). ok is false if there is no such process.
func (b *Break) ImageOf(pid int) (execs uint64, ok bool) {
	if p := b.k.liveProcess(pid); p != nil {
		return p.execs, true
	}
	return 0, false
}

// SetBreakpoint puts a breakpoint at va in image execs of process pid,
// which must be the one it runs: a Break when a thread reaches it — in
// any process whose mapping shares the page, so the caller looks at
// Break.PID and Image. Each call holds it until a ClearBreakpoint, or
// until the image goes (exec replaces it, or its process ends).
func (b *Break) SetBreakpoint(pid int, execs, va uint64) error {
	pa, err := b.k.codeFrame(pid, execs, va)
	if err != nil {
		return err
	}
	return b.k.bp.hold(b.k, image{pid, execs}, pa)
}

// ClearBreakpoint drops a hold SetBreakpoint took; the int3 goes with the
// last, unless a return watch still needs it. Nothing is left to drop in
// an image that is gone.
func (b *Break) ClearBreakpoint(pid int, execs, va uint64) error {
	img := image{pid, execs}
	if len(b.k.bp.held[img]) == 0 {
		return nil
	}
	pa, err := b.k.codeFrame(pid, execs, va)
	if err != nil {
		return err
	}
	return b.k.bp.release(b.k, img, pa, 1)
}

// codeFrame is where va of image execs of process pid is in RAM.
func (k *Kernel) codeFrame(pid int, execs, va uint64) (uint64, error) {
	p := k.liveProcess(pid)
	if p == nil {
		return 0, fmt.Errorf("linux: no process %d", pid)
	}
	if p.execs != execs {
		return 0, fmt.Errorf("linux: process %d runs image %d, not %d", pid, p.execs, execs)
	}
	pa, ok := p.as.Frame(va &^ pageMask)
	if !ok {
		return 0, fmt.Errorf("linux: %#x is not mapped in process %d", va, pid)
	}
	return pa + va&pageMask, nil
}

// Step has thread tid run one instruction and stop again, with a Break
// whose Stepped is set. (A step over a SYSCALL stops at the instruction
// after it, by an int3 there: see armStep.)
func (b *Break) Step(tid int) error {
	t := b.k.thread(tid)
	if t == nil {
		return fmt.Errorf("linux: no thread %d", tid)
	}
	bp := b.k.bp
	bp.stepping[tid] = true
	if _, inCall := bp.afterSyscall[tid]; inCall || t == b.k.current() {
		// Armed already: in a system call, its step ends at the int3
		// after it; the stopped thread is armed as it resumes
		// (debugTrap, startBreak).
		return nil
	}
	tf, err := b.k.armStep(t, t.regs.RIP)
	t.regs.RFLAGS &^= rflagsTF // a step armed before, by the flag, is this one's now
	if tf {
		t.regs.RFLAGS |= rflagsTF
	}
	return err
}

// StopAtStart asks for a Break (Start set) before the program's first
// instruction.
func (k *Kernel) StopAtStart() { k.bp.atStart = true }

// startBreak is the Break StopAtStart asked for, the program's first
// thread at its entry with the registers it starts with.
func (k *Kernel) startBreak() error {
	bp := k.bp
	if bp == nil || !bp.atStart {
		return nil
	}
	bp.atStart = false
	regs := k.m.VCPU().SyncedRegs()
	b := &Break{TID: k.current().tid, PID: k.proc().pid, Image: k.proc().execs, Regs: regs, Mapping: k.proc().as.FileAt(regs.RIP), Start: true, k: k, proc: k.proc()}
	if err := bp.on.Break(b); err != nil {
		return err
	}
	if !bp.stepping[b.TID] {
		return nil
	}
	return k.armResumed(regs.RIP)
}

// maxAuxv bounds the auxiliary vector read: Linux's has some twenty pairs.
const maxAuxv = 64

// Auxv is process pid's auxiliary vector as its initial stack holds it,
// through its AT_NULL pair (as /proc/PID/auxv): where a debugger finds
// the executable's and loader's load addresses. Empty if unknown.
func (b *Break) Auxv(pid int) ([]byte, error) {
	p := b.k.liveProcess(pid)
	if p == nil || p.auxv == 0 {
		return nil, nil
	}
	var out []byte
	for i := range maxAuxv {
		pair := make([]byte, 16)
		if err := b.ReadMemory(pid, p.auxv+uint64(i)*16, pair); err != nil {
			return nil, err
		}
		out = append(out, pair...)
		if binary.LittleEndian.Uint64(pair) == atNull {
			break
		}
	}
	return out, nil
}

// Exe is the path process pid executes (/proc/PID/exe), "" if none.
// The stopped thread's own process is asked at every hit a debugger's
// scan records, so it is answered without a walk of the threads.
func (b *Break) Exe(pid int) string {
	if pid == b.PID && b.proc != nil {
		return b.proc.exe
	}
	if p := b.k.liveProcess(pid); p != nil {
		return p.exe
	}
	return ""
}

// ProcFile is what reading /proc/PID/name gives for live process pid —
// name one of maps, cmdline, environ, comm, stat, statm, status, or the
// links exe and cwd (where they point) — made from the kernel's state as
// the program's own read makes it, without a read's effects (no file is
// made, nothing is charged); ok is false for another name or no such
// process.
func (b *Break) ProcFile(pid int, name string) (data []byte, ok bool) {
	var t *thread
	for _, th := range b.k.threads {
		if th.state != exited && th.proc.pid == pid {
			t = th
			break
		}
	}
	if t == nil {
		return nil, false
	}
	if name == "exe" || name == "cwd" {
		link, ok, err := t.procReadlink("/proc/self/" + name)
		return []byte(link), ok && err == nil
	}
	if generate, ok := procFiles["/proc/self/"+name]; ok && debugProcFiles[name] {
		return generate(t), true
	}
	return nil, false
}

// MappedFile is the contents of the file at path that live process pid
// maps (its executable, a library), as they were when it was mapped; ok
// is false if the process maps no file of that path.
func (b *Break) MappedFile(pid int, path string) (data []byte, ok bool) {
	as := b.k.space(pid)
	if as == nil {
		return nil, false
	}
	for _, m := range as.Files() {
		if m.Path == path {
			return m.Data(), true
		}
	}
	return nil, false
}

// debugProcFiles are the /proc/PID files a debugger may read: those whose
// contents ask nothing of the recording (no clock).
var debugProcFiles = map[string]bool{"maps": true, "cmdline": true, "environ": true, "comm": true, "stat": true, "statm": true, "status": true}

// SignalEntry is the last signal delivery that entered a handler in live
// thread tid: the exit it came at, the handler's address and the place
// the signal interrupted (the RIP its frame keeps: after a SYSCALL, or an
// instruction that faulted). ok is false if there is none.
func (b *Break) SignalEntry(tid int) (exit, handler, from uint64, ok bool) {
	t := b.k.thread(tid)
	if t == nil || t.entered.handler == 0 {
		return 0, 0, 0, false
	}
	return t.entered.exit, t.entered.handler, t.entered.from, true
}

// Emulated is the last instruction the kernel emulated for live thread
// tid (an RDTSC, which the thread resumed after): the exit it came at and
// its address. ok is false if there is none.
func (b *Break) Emulated(tid int) (exit, at uint64, ok bool) {
	t := b.k.thread(tid)
	if t == nil || t.emulated == (emulation{}) {
		return 0, 0, false
	}
	return t.emulated.exit, t.emulated.at, true
}

// Position is where the replay is: the machine's position.
func (b *Break) Position() vmm.Position { return b.k.m.Position() }

// SetRecordClock gives a replay's kernel the recording's time at a
// position, which a Break reports.
func (k *Kernel) SetRecordClock(c func(vmm.Position) time.Duration) { k.recordClock = c }

// RecordTime is the recording's time where the replay is: how long after
// its start the recorded run was here (0 if the kernel has no record
// clock).
func (b *Break) RecordTime() time.Duration {
	if b.k.recordClock == nil {
		return 0
	}
	return b.k.recordClock(b.Position())
}
