package replayer

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// A debugger on a kit guest's replay (Options.KitDebugger). Its
// breakpoints are int3s in the user code, which the kernel forwards to the
// VMM as probes' are; a thread that hits one goes on through the
// instruction's out-of-line copy in the probe area, or — for the few an
// int3 cannot copy — past the branch counter's load, done by the VMM
// (counterLoad), or in place (the kit's ud2 system call, an indirect
// call, the counter load at its target), the int3 out until the thread
// is past it (a thread passing there meanwhile is not seen). A single step is
// software's (kitstep.go): int3s where the instruction can go, for that
// thread only. So nothing the program computes changes; the bytes the
// int3s replaced, the copies and the kernel's #BP stack are restored
// before the end's RAM hash, as probes' are.

// KitDebugger is a debugger of a kit guest's replay (package debugger).
type KitDebugger interface {
	// Mapped is told of the kit's user code as the replay begins, one
	// mapping of process 1, and returns the addresses to break at there.
	Mapped(m linux.Mapping, file []byte) ([]uint64, error)
	// KitBreak is called where the program stops for the debugger: its
	// first instruction, a breakpoint, a step done.
	KitBreak(b *KitBreak) error
	// Interrupted reports, at exit (made at record time recordTime),
	// whether the debugger asks the running program to stop where it can
	// (gdb's interrupt, a seek to an exit or a time). It is asked at the
	// exits the kernel makes; then every live thread traps where it
	// resumes, and the first stops.
	Interrupted(exit uint64, recordTime func() time.Duration) bool
}

// KitBreak is a kit program stopped for the debugger: the thread that
// stopped, its registers (RIP where it stopped) and why. Its methods are
// valid only during the KitBreak call, on the machine's goroutine.
type KitBreak struct {
	TID  int
	Regs *kvm.Regs
	// Start: before the program's first instruction. Stepped: a step
	// Step asked for, done. Resumed: a thread Step was asked of when it
	// was not running resumed, where it stood — one instruction before
	// the step's landing. Interrupted: the first thread to resume after
	// exit Since, where it stood then, stopped for Interrupted.
	Start, Stepped, Resumed, Interrupted bool
	Since                                uint64
	d                                    *kitDebug
}

// KitThread names a live thread of a kit program.
type KitThread struct{ TID int }

// maxKitSites bounds the int3s a debugger places (breakpoints, and the
// places steps may land): one out-of-line slot each in the probe area.
const maxKitSites = abi.ProbeAreaSize / trampolineSlot

// kitDebug is the debugger's machinery in one replay.
type kitDebug struct {
	m          *vmm.Machine
	on         KitDebugger
	img        *elffile.Image
	recordTime func(vmm.Position) time.Duration

	// The kernel's and the user library's symbols it reads and breaks at.
	currentTID, threads, userStart, threadEntry, userEnd uint64

	atStart bool
	mainTID int
	r15     bool // the image counts branches in r15
	sites   map[uint64]*kitSite
	slots   []uint64 // free out-of-line slots
	steps   map[int]*kitStep
	// interrupting: the live threads wait where they resume, since exit
	// since, for an interrupt.
	interrupting bool
	since        uint64
}

// kitSite is an int3 the debugger placed: for its breakpoints (held), the
// steps that trap there (refs), or the program's start.
type kitSite struct {
	inst  x86asm.Inst
	orig  byte   // the byte the int3 replaced
	copy  uint64 // the out-of-line copy; 0: the instruction runs in place
	held  int
	refs  int
	start bool
	out   bool // the int3 is out while a thread runs the instruction in place
}

// kitStep is a thread's step: its next instruction, after which it traps
// where that instruction went — for a step the debugger asked for
// (report), or to put back an int3 the thread ran past in place (putBack).
type kitStep struct {
	// arm, until the thread resumes, is where it will (a thread not
	// running): it traps there first, and the step begins.
	arm     uint64
	to      []uint64
	report  bool
	putBack uint64
	// interrupt: the arm is an interrupt's, the thread stopping there
	// with no step.
	interrupt bool
}

// newKitDebug readies a debugger's machinery for a replay of img; started
// says the replay starts at boot, so it stops at the program's first
// instruction.
func newKitDebug(on KitDebugger, img *elffile.Image, recordTime func(vmm.Position) time.Duration, started bool) (*kitDebug, error) {
	d := &kitDebug{on: on, img: img, recordTime: recordTime, atStart: started, mainTID: 1, sites: map[uint64]*kitSite{}, steps: map[int]*kitStep{}}
	for _, s := range []struct {
		name string
		addr *uint64
	}{{abi.CurrentTIDSymbol, &d.currentTID}, {abi.ThreadsSymbol, &d.threads}, {abi.UserStartSymbol, &d.userStart},
		{abi.ThreadEntrySymbol, &d.threadEntry}, {abi.UserEndSymbol, &d.userEnd}} {
		sym, ok := img.Lookup(s.name)
		if !ok {
			return nil, fmt.Errorf("replayer: the guest image has no %s: only a kit image from this version of reprise can be debugged", s.name)
		}
		*s.addr = sym.Addr
	}
	d.r15 = vmm.BranchCounterOf(img) == vmm.CounterRegister
	for i := maxKitSites - 1; i >= 0; i-- {
		d.slots = append(d.slots, abi.ProbeArea+uint64(i)*trampolineSlot)
	}
	return d, nil
}

// attach places the debugger's breakpoints and the start's int3 in m.
func (d *kitDebug) attach(m *vmm.Machine) error {
	d.m = m
	if d.atStart {
		s, err := d.place(d.userStart)
		if err != nil {
			return err
		}
		s.start = true
	}
	addrs, err := d.on.Mapped(linux.Mapping{PID: 1, Path: d.img.Path, Start: abi.UserBase, End: d.userEnd, Exec: true}, nil)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		s, err := d.place(a)
		if err != nil {
			return err
		}
		s.held++
	}
	return nil
}

// place returns the site at addr, placing its int3 if there is none yet.
func (d *kitDebug) place(addr uint64) (*kitSite, error) {
	if s := d.sites[addr]; s != nil {
		return s, nil
	}
	seg, ok := d.img.ExecSegment(addr)
	if !ok || addr < abi.UserBase || addr >= d.userEnd {
		return nil, fmt.Errorf("replayer: %s is not in the kit's user code: only user code takes breakpoints", d.img.Describe(addr))
	}
	if len(d.slots) == 0 {
		return nil, fmt.Errorf("replayer: at most %d breakpoints and places steps may land on", maxKitSites)
	}
	code := seg.Data[addr-seg.Addr : min(addr-seg.Addr+15, uint64(len(seg.Data)))]
	inst, err := x86asm.Decode(code, 64)
	if err != nil {
		return nil, fmt.Errorf("replayer: %s: cannot decode the instruction (% x): %v", d.img.Describe(addr), code[:min(len(code), 8)], err)
	}
	s := &kitSite{inst: inst, orig: code[0]}
	if site, err := probes.DecodeSite(d.img, addr); err == nil {
		slot := d.slots[len(d.slots)-1]
		p := &patch{site: &site, tramp: slot, how: probes.PatchInt3}
		if c, err := p.outOfLine(); err == nil {
			if err := d.m.RAM().Write(slot, c); err != nil {
				return nil, err
			}
			s.copy, d.slots = slot, d.slots[:len(d.slots)-1]
		}
	}
	if err := d.m.RAM().Write(addr, []byte{0xCC}); err != nil {
		return nil, err
	}
	d.sites[addr] = s
	return s, nil
}

// drop removes the site at addr once nothing needs it.
func (d *kitDebug) drop(addr uint64) error {
	s := d.sites[addr]
	if s == nil || s.held > 0 || s.refs > 0 || s.start {
		return nil
	}
	delete(d.sites, addr)
	if s.copy != 0 {
		d.slots = append(d.slots, s.copy)
	}
	return d.m.RAM().Write(addr, []byte{s.orig})
}

// hit serves an int3 the kernel forwarded, regs the trapped thread's (RIP
// past the int3): a stop for the debugger if it is one, and where the
// thread resumes. An int3 not the debugger's is the guest's own.
func (d *kitDebug) hit(regs *kvm.Regs) (uint64, bool, error) {
	at := regs.RIP - 1
	s := d.sites[at]
	if s == nil || s.out {
		return 0, false, nil
	}
	regs.RIP = at
	tid, err := d.current()
	if err != nil {
		return 0, true, err
	}
	b := &KitBreak{TID: tid, Regs: regs, d: d}
	if st := d.steps[tid]; st != nil {
		switch {
		case st.arm == at && st.interrupt:
			b.Interrupted, b.Since = true, d.since
			if err := d.endInterrupt(); err != nil {
				return 0, true, err
			}
		case st.arm == at: // resumed: the step's instruction is this one
			b.Resumed = st.report
			if err := d.aim(st, at, regs); err != nil {
				return 0, true, err
			}
		case st.arm == 0: // landed, or (the step's guess was wrong) elsewhere: it ends either way
			b.Stepped = st.report && slices.Contains(st.to, at)
			if err := d.end(tid); err != nil {
				return 0, true, err
			}
		}
	}
	if s.start && d.atStart {
		b.Start, d.atStart, d.mainTID, s.start = true, false, tid, false
	}
	if b.Start || b.Stepped || b.Resumed || b.Interrupted || s.held > 0 {
		if err := d.on.KitBreak(b); err != nil {
			return 0, true, err
		}
	}
	if st := d.steps[tid]; st != nil && st.arm == at { // stepped again from here
		if err := d.aim(st, at, regs); err != nil {
			return 0, true, err
		}
	}
	resume, err := d.resume(tid, at, regs)
	if err != nil {
		return 0, true, err
	}
	return resume, true, d.drop(at)
}

// at arms an interrupt the debugger asks for at an exit the kernel made
// (at CPL0: an exit from user code may stand inside an instruction the
// VMM completes on entry): each live thread without a step waits where
// its saved frame resumes it.
func (d *kitDebug) at(stop vmm.Stop) error {
	if stop != vmm.StopGuestExit || d.interrupting || d.m.VCPU().SyncedSregs().CS.Selector&3 != 0 {
		return nil
	}
	pos := d.m.Position()
	if !d.on.Interrupted(pos.Exit, func() time.Duration { return d.recordTime(pos) }) {
		return nil
	}
	for slot := 1; slot < abi.MaxThreads; slot++ {
		tid, frame, live := d.thread(slot)
		if !live || frame == 0 || d.steps[tid] != nil {
			continue
		}
		var rip [8]byte
		if err := d.m.RAM().Read(frame+abi.FrameRIP, rip[:]); err != nil {
			return fmt.Errorf("replayer: thread %d's saved frame: %w", tid, err)
		}
		at := binary.LittleEndian.Uint64(rip[:])
		if _, ok := d.img.ExecSegment(at); !ok || at < abi.UserBase || at >= d.userEnd {
			continue
		}
		s, err := d.place(at)
		if err != nil {
			return err
		}
		s.refs++
		d.steps[tid] = &kitStep{arm: at, interrupt: true}
		d.interrupting, d.since = true, pos.Exit // none armed: asked again at the next exit
	}
	return nil
}

// endInterrupt lets the other threads' interrupt arms go: one stopped.
func (d *kitDebug) endInterrupt() error {
	var errs []error
	for tid, st := range d.steps {
		if st.interrupt {
			errs = append(errs, d.end(tid))
		}
	}
	d.interrupting = false
	return errors.Join(errs...)
}

// resume is where thread tid, trapped at at, goes on: the instruction's
// copy; past the branch counter's load, done here; or the instruction in
// place, its int3 out until the thread is past it; or at itself if the
// int3 is gone.
func (d *kitDebug) resume(tid int, at uint64, regs *kvm.Regs) (uint64, error) {
	s := d.sites[at]
	switch {
	case s == nil:
		return at, nil
	case s.copy != 0:
		return s.copy, nil
	}
	if next, done, err := d.counterLoad(s, at); done || err != nil {
		return next, err
	}
	st := d.steps[tid]
	if st == nil {
		st = &kitStep{}
		d.steps[tid] = st
		if err := d.aim(st, at, regs); err != nil {
			return 0, err
		}
	}
	st.putBack, s.out = at, true
	return at, d.m.RAM().Write(at, []byte{s.orig})
}

// counterLoad does the r15 counter's load (movzbl (%r15),%r14d) at at for
// the trapped thread, unless it is the one that reaches the guard page (an
// exit at a count target, run in place), and returns the address after
// it. The load is where the kernel preempts threads — its guard exit, then
// an interrupt — so run in place its int3 would be out while other threads
// pass (a place a replay could not find again). Below the guard it loads a
// zero of the countdown region; r14 and r15 are the vCPU's, which the
// kernel's #BP path leaves alone. r15 does not move before the entry: a
// target that came into reach is placed already (the count is at this
// load's lea).
func (d *kitDebug) counterLoad(s *kitSite, at uint64) (next uint64, done bool, err error) {
	if !d.r15 || !isCounterLoad(s.inst) {
		return 0, false, nil
	}
	regs := d.m.VCPU().SyncedRegs()
	if regs.R15 <= abi.CounterGuardTop {
		return 0, false, nil
	}
	var b [1]byte
	if err := d.m.ReadVirt(regs.R15, b[:]); err != nil {
		return 0, true, fmt.Errorf("replayer: the branch counter's load at %#x: %w", at, err)
	}
	regs.R14 = uint64(b[0])
	d.m.VCPU().MarkRegsDirty()
	return at + uint64(s.inst.Len), true, nil
}

// isCounterLoad reports whether inst is the r15 counter's load.
func isCounterLoad(inst x86asm.Inst) bool {
	m, ok := inst.Args[1].(x86asm.Mem)
	return inst.Op == x86asm.MOVZX && inst.Args[0] == x86asm.R14L && ok && m.Base == x86asm.R15 && m.Index == 0 && m.Disp == 0
}

// aim makes st, the step of a thread about to run the instruction at at
// with registers regs, wait where that instruction goes.
func (d *kitDebug) aim(st *kitStep, at uint64, regs *kvm.Regs) error {
	if st.arm != 0 {
		st.arm = 0
		if s := d.sites[at]; s != nil {
			s.refs--
		}
	}
	to, err := successors(d.sites[at].inst, at, regs, d.m.ReadVirt)
	if err != nil {
		return fmt.Errorf("replayer: stepping %s: %w", d.img.Describe(at), err)
	}
	for _, a := range to {
		if _, ok := d.img.ExecSegment(a); !ok || a < abi.UserBase || a >= d.userEnd {
			continue // out of the user code: the step does not end (the program faults)
		}
		s, err := d.place(a)
		if err != nil {
			return err
		}
		s.refs++
		st.to = append(st.to, a)
	}
	return nil
}

// end ends thread tid's step: its int3s go unless needed, and one it ran
// past in place is back.
func (d *kitDebug) end(tid int) error {
	st := d.steps[tid]
	delete(d.steps, tid)
	var errs []error
	if st.arm != 0 {
		st.to = append(st.to, st.arm)
	}
	for _, a := range st.to {
		if s := d.sites[a]; s != nil {
			s.refs--
		}
		errs = append(errs, d.drop(a))
	}
	if s := d.sites[st.putBack]; st.putBack != 0 && s != nil && s.out {
		s.out = false
		errs = append(errs, d.m.RAM().Write(st.putBack, []byte{0xCC}))
		errs = append(errs, d.drop(st.putBack))
	}
	return errors.Join(errs...)
}

// current is the running thread's id.
func (d *kitDebug) current() (int, error) {
	var b [4]byte
	if err := d.m.RAM().Read(d.currentTID, b[:]); err != nil {
		return 0, fmt.Errorf("replayer: the kernel's current thread: %w", err)
	}
	return int(binary.LittleEndian.Uint32(b[:])), nil
}

// remove puts back every byte the debugger changed, as probes' remove
// does.
func (d *kitDebug) remove(ram *memory.RAM) error {
	for addr, s := range d.sites {
		if err := ram.Write(addr, []byte{s.orig}); err != nil {
			return err
		}
	}
	clear(d.sites)
	return clearProbeAreas(ram)
}

// Threads lists the program's live threads, by id.
func (b *KitBreak) Threads() []KitThread {
	var out []KitThread
	for slot := 1; slot < abi.MaxThreads; slot++ {
		if tid, frame, ok := b.d.thread(slot); ok && frame != 0 {
			out = append(out, KitThread{TID: tid})
		}
	}
	slices.SortFunc(out, func(x, y KitThread) int { return cmp.Compare(x.TID, y.TID) })
	return out
}

// thread reads slot's entry of the kernel's thread table: its thread's id
// and frame, ok if it is live (runnable or blocked).
func (d *kitDebug) thread(slot int) (tid int, frame uint64, ok bool) {
	var e [abi.ThreadSize]byte
	if d.m.RAM().Read(d.threads+uint64(slot)*abi.ThreadSize, e[:]) != nil {
		return 0, 0, false
	}
	state := binary.LittleEndian.Uint32(e[abi.ThreadState:])
	return int(binary.LittleEndian.Uint32(e[abi.ThreadTID:])), binary.LittleEndian.Uint64(e[abi.ThreadFrame:]),
		state == abi.ThreadRunnable || state == abi.ThreadBlocked
}

// State is live thread tid's registers, ok false if there is none: the
// stopped thread's are the trap's, another's those the kernel saved when
// it last left user code. (In the r15 kit, r14 and r15 belong to the
// branch counter: the kernel saves them as 0.) The XSAVE image is the
// vCPU's, which every thread shares: kit code uses no x87 or SSE state.
func (b *KitBreak) State(tid int) (regs kvm.Regs, xsave kvm.XSave, ok bool, err error) {
	if tid <= 0 {
		return regs, xsave, false, nil
	}
	got, frame, live := b.d.thread(tid % abi.MaxThreads)
	if !live || got != tid {
		return regs, xsave, false, nil
	}
	if xsave, err = b.d.m.VCPU().XSave(); err != nil {
		return regs, xsave, false, err
	}
	if tid == b.TID {
		return *b.Regs, xsave, true, nil
	}
	raw := make([]byte, abi.FrameSize)
	if err := b.d.m.RAM().Read(frame, raw); err != nil {
		return regs, xsave, false, fmt.Errorf("replayer: thread %d's saved registers: %w", tid, err)
	}
	return vmm.FrameRegs(raw), xsave, true, nil
}

// ReadMemory reads the guest's memory at va (GVA) into p, as the program
// has it: the bytes int3s replaced show as they were.
func (b *KitBreak) ReadMemory(va uint64, p []byte) error {
	if err := b.d.m.ReadVirt(va, p); err != nil {
		return err
	}
	for addr, s := range b.d.sites {
		if addr >= va && addr-va < uint64(len(p)) && !s.out {
			p[addr-va] = s.orig
		}
	}
	return nil
}

// SetBreakpoint holds a breakpoint at va, in the user code, until a
// ClearBreakpoint.
func (b *KitBreak) SetBreakpoint(va uint64) error {
	s, err := b.d.place(va)
	if err != nil {
		return err
	}
	s.held++
	return nil
}

// ClearBreakpoint lets one hold of SetBreakpoint's go.
func (b *KitBreak) ClearBreakpoint(va uint64) error {
	s := b.d.sites[va]
	if s == nil || s.held == 0 {
		return nil
	}
	s.held--
	return b.d.drop(va)
}

// Step has thread tid run one instruction when the program resumes, then
// stop with a KitBreak whose Stepped is set.
func (b *KitBreak) Step(tid int) error {
	d := b.d
	if d.steps[tid] != nil {
		if err := d.end(tid); err != nil {
			return err
		}
	}
	rip := b.Regs.RIP
	if tid != b.TID {
		regs, _, ok, err := b.State(tid)
		if err != nil || !ok {
			return cmp.Or(err, fmt.Errorf("replayer: no thread %d", tid))
		}
		rip = regs.RIP
	}
	s, err := d.place(rip)
	if err != nil {
		return err
	}
	s.refs++
	d.steps[tid] = &kitStep{arm: rip, report: true}
	return nil
}

// Birth is where thread tid began: the program's first instruction for
// its first thread, the library's thread entry for the rest.
func (b *KitBreak) Birth(tid int) uint64 {
	if tid == b.d.mainTID {
		return b.d.userStart
	}
	return b.d.threadEntry
}

// Position is where the replay is; RecordTime the recording's time there.
func (b *KitBreak) Position() vmm.Position { return b.d.m.Position() }

func (b *KitBreak) RecordTime() time.Duration { return b.d.recordTime(b.Position()) }
