package linux

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// Exception-less system calls (FlexSC, OSDI '10): on PVM
// hosts a program's SYSCALL stays at CPL3 and lands on the stub without an
// exit, and an exit is most of what a call costs (~60–80 µs against ~1 µs
// of serving). With them on (Program.FastCalls), the stub posts the call in
// the call page and spins; a host thread of the VMM beside the vCPU (a
// vmm.Companion, on the other host CPU) serves it and answers there, and
// the program goes on without having left the guest. The stub exits as
// before when the call is refused, when its spin runs out before the call
// is claimed, and when the call, served, needs the vCPU to end (it blocked,
// switched threads, changed the page tables, made a signal deliverable):
// the exit then finishes it as the ordinary path would have.
//
// A call served beside counts as the exit it did not make
// (vmm.Machine.ServeBeside), with the registers that exit would have
// shown, and only where the engine has nothing to do at it (no interrupt
// to place, no event of the tape's): so positions stay those of the
// ordinary path, and a recording replays whichever way each of its calls
// went in either run.
//
// The call page, at callPage (user read-write in every address space):
const (
	callPage   = mm.CallPage
	cpState    = callPage + 0   // uint32, one of the call states
	cpNR       = callPage + 8   // the call's number (rax)
	cpArgs     = callPage + 16  // its six arguments (rdi, rsi, rdx, r10, r8, r9)
	cpRIP      = callPage + 64  // where it returns (rcx)
	cpFlags    = callPage + 72  // the flags it returns with (r11)
	cpRet      = callPage + 80  // the answer
	cpSavedRSP = callPage + 88  // the program's stack pointer, while the stub restores the flags
	cpRegs     = callPage + 96  // the other registers (rbx, rbp, rsp, r12–r15): a recorded event's digest
	cpStackTop = callPage + 160 // the stub's own stack: one word, for POPFQ
	// spinBudget is how many PAUSEs the stub waits for a claim before
	// it exits: with 1 000, a quarter of a busybox loop's calls ran out
	// on a two-CPU PVM host, with 10 000 almost none.
	spinBudget  = 10000
	quietPeriod = time.Millisecond
)

// The call states. The stub posts, the companion claims (a CAS from
// posted) and answers; a stub whose spin ran out takes the call back with
// an XCHG to abandoned (the companion's CAS then fails), or, if it was
// claimed, waits for the answer.
const (
	callIdle      = 0
	callPosted    = 1
	callClaimed   = 2
	callAnswered  = 3 // the answer is at cpRet
	callRefused   = 4 // exit: the VMM serves it as any call
	callFinish    = 5 // exit: the VMM finishes the call it served (fastCalls.finish)
	callAbandoned = 6
)

// fastSyscallStub is the SYSCALL stub with exception-less calls, laid out
// at stubPage with the call page the next page up (the RIP-relative
// displacements). At CPL0 (VMX hosts, where exits are cheap) and with the
// trap flag set it exits at once. Its exit, "slow", is the ordinary
// stub's OUT with RAX the call's number again; rcx and r11 are as SYSCALL
// left them on every path, and so are the other registers.
var fastSyscallStub = []byte{
	0x48, 0x89, 0x05, 0x01, 0x10, 0x00, 0x00, // 0x00 mov %rax, NR(%rip)
	0x48, 0x89, 0x3D, 0x02, 0x10, 0x00, 0x00, // 0x07 mov %rdi, ARGS(%rip)
	0x48, 0x89, 0x35, 0x03, 0x10, 0x00, 0x00, // 0x0e mov %rsi, ARGS+8(%rip)
	0x48, 0x89, 0x15, 0x04, 0x10, 0x00, 0x00, // 0x15 mov %rdx, ARGS+16(%rip)
	0x4C, 0x89, 0x15, 0x05, 0x10, 0x00, 0x00, // 0x1c mov %r10, ARGS+24(%rip)
	0x4C, 0x89, 0x05, 0x06, 0x10, 0x00, 0x00, // 0x23 mov %r8, ARGS+32(%rip)
	0x4C, 0x89, 0x0D, 0x07, 0x10, 0x00, 0x00, // 0x2a mov %r9, ARGS+40(%rip)
	0x48, 0x89, 0x0D, 0x08, 0x10, 0x00, 0x00, // 0x31 mov %rcx, RIP(%rip)
	0x4C, 0x89, 0x1D, 0x09, 0x10, 0x00, 0x00, // 0x38 mov %r11, FLAGS(%rip)
	0x48, 0x89, 0x1D, 0x1A, 0x10, 0x00, 0x00, // 0x3f mov %rbx, REGS(%rip)
	0x48, 0x89, 0x2D, 0x1B, 0x10, 0x00, 0x00, // 0x46 mov %rbp, REGS+8(%rip)
	0x48, 0x89, 0x25, 0x1C, 0x10, 0x00, 0x00, // 0x4d mov %rsp, REGS+16(%rip)
	0x4C, 0x89, 0x25, 0x1D, 0x10, 0x00, 0x00, // 0x54 mov %r12, REGS+24(%rip)
	0x4C, 0x89, 0x2D, 0x1E, 0x10, 0x00, 0x00, // 0x5b mov %r13, REGS+32(%rip)
	0x4C, 0x89, 0x35, 0x1F, 0x10, 0x00, 0x00, // 0x62 mov %r14, REGS+40(%rip)
	0x4C, 0x89, 0x3D, 0x20, 0x10, 0x00, 0x00, // 0x69 mov %r15, REGS+48(%rip)
	0x8C, 0xC8, // 0x70 mov %cs, %eax
	0xA8, 0x03, // 0x72 test $3, %al
	0x0F, 0x84, 0x8F, 0x00, 0x00, 0x00, // 0x74 je slow: CPL0
	0x41, 0xF7, 0xC3, 0x00, 0x01, 0x00, 0x00, // 0x7a test $0x100, %r11d
	0x0F, 0x85, 0x82, 0x00, 0x00, 0x00, // 0x81 jne slow: TF
	0xC7, 0x05, 0x6F, 0x0F, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // 0x87 movl $posted, STATE(%rip)
	0xB9, 0x10, 0x27, 0x00, 0x00, // 0x91 mov $spinBudget, %ecx (rcx and r11 are in the page)
	// spin: the state is read once a round, into eax
	0xF3, 0x90, // 0x96 pause
	0x8B, 0x05, 0x62, 0x0F, 0x00, 0x00, // 0x98 mov STATE(%rip), %eax
	0x83, 0xF8, 0x01, // 0x9e cmp $posted, %eax
	0x75, 0x14, // 0xa1 jne wait
	0xFF, 0xC9, // 0xa3 dec %ecx
	0x75, 0xEF, // 0xa5 jne spin
	0xB8, 0x06, 0x00, 0x00, 0x00, // 0xa7 mov $abandoned, %eax
	0x87, 0x05, 0x4E, 0x0F, 0x00, 0x00, // 0xac xchg %eax, STATE(%rip)
	0x83, 0xF8, 0x01, // 0xb2 cmp $posted, %eax
	0x74, 0x52, // 0xb5 je slow: taken back before a claim
	// wait: claimed (then abandoned, if the spin ran out): the answer comes
	0x83, 0xF8, 0x02, // 0xb7 cmp $claimed, %eax
	0x74, 0x05, // 0xba je again
	0x83, 0xF8, 0x06, // 0xbc cmp $abandoned, %eax
	0x75, 0x0A, // 0xbf jne decided
	// again:
	0xF3, 0x90, // 0xc1 pause
	0x8B, 0x05, 0x37, 0x0F, 0x00, 0x00, // 0xc3 mov STATE(%rip), %eax
	0xEB, 0xEC, // 0xc9 jmp wait
	// decided:
	0x83, 0xF8, 0x03, // 0xcb cmp $answered, %eax
	0x75, 0x39, // 0xce jne slow: refused or finish
	0xC7, 0x05, 0x26, 0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 0xd0 movl $idle, STATE(%rip): answered, return as SYSRET would, the program's stack untouched
	0x48, 0x8B, 0x0D, 0x5F, 0x0F, 0x00, 0x00, // 0xda mov RIP(%rip), %rcx
	0x4C, 0x8B, 0x1D, 0x60, 0x0F, 0x00, 0x00, // 0xe1 mov FLAGS(%rip), %r11
	0x48, 0x8B, 0x05, 0x61, 0x0F, 0x00, 0x00, // 0xe8 mov RET(%rip), %rax
	0x48, 0x89, 0x25, 0x62, 0x0F, 0x00, 0x00, // 0xef mov %rsp, SAVEDRSP(%rip)
	0x48, 0x8D, 0x25, 0xA3, 0x0F, 0x00, 0x00, // 0xf6 lea STACKTOP(%rip), %rsp
	0x41, 0x53, // 0xfd push %r11
	0x9D,                                     // 0xff popfq
	0x48, 0x8B, 0x25, 0x51, 0x0F, 0x00, 0x00, // 0x100 mov SAVEDRSP(%rip), %rsp
	0xFF, 0xE1, // 0x107 jmp *%rcx
	// slow: flags set as on every path here (xor), rax the number again
	0xC7, 0x05, 0xED, 0x0E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 0x109 movl $idle, STATE(%rip)
	0x48, 0x8B, 0x0D, 0x26, 0x0F, 0x00, 0x00, // 0x113 mov RIP(%rip), %rcx
	0x4C, 0x8B, 0x1D, 0x27, 0x0F, 0x00, 0x00, // 0x11a mov FLAGS(%rip), %r11
	0x31, 0xC0, // 0x121 xor %eax, %eax
	0x48, 0x8B, 0x05, 0xDE, 0x0E, 0x00, 0x00, // 0x123 mov NR(%rip), %rax
	0xE6, 0xE6, // 0x12a out %al, $PortSyscall
}

// fastCall says which calls may be served beside the vCPU: those whose
// handlers use the kernel's state and guest memory but never the vCPU
// (its registers, its extended state); the engine's inputs they take (the
// clock, randomness, the host's files) are logged or replayed at the exit
// they count as. Whatever else one of them does that needs the vCPU is
// found after it ran (serveCounted) and finished by an exit.
var fastCall = func() (fast [tableSize]bool) {
	for _, nr := range []uint64{
		unix.SYS_READ, unix.SYS_WRITE, unix.SYS_OPEN, unix.SYS_CLOSE, unix.SYS_STAT, unix.SYS_FSTAT,
		unix.SYS_LSTAT, unix.SYS_POLL, unix.SYS_LSEEK, unix.SYS_IOCTL, unix.SYS_PREAD64, unix.SYS_PWRITE64,
		unix.SYS_READV, unix.SYS_WRITEV, unix.SYS_ACCESS, unix.SYS_PIPE, unix.SYS_DUP, unix.SYS_DUP2,
		unix.SYS_GETPID, unix.SYS_UNAME, unix.SYS_FCNTL, unix.SYS_FTRUNCATE, unix.SYS_GETCWD, unix.SYS_UMASK,
		unix.SYS_GETTIMEOFDAY, unix.SYS_GETUID, unix.SYS_GETGID, unix.SYS_GETEUID, unix.SYS_GETEGID,
		unix.SYS_GETPPID, unix.SYS_GETTID, unix.SYS_TIME, unix.SYS_GETDENTS64, unix.SYS_CLOCK_GETTIME,
		unix.SYS_OPENAT, unix.SYS_NEWFSTATAT, unix.SYS_READLINKAT, unix.SYS_FACCESSAT, unix.SYS_DUP3,
		unix.SYS_PIPE2, unix.SYS_GETRANDOM, unix.SYS_STATX, unix.SYS_FACCESSAT2,
	} {
		fast[nr] = true
	}
	return fast
}()

// fastCalls is the kernel's side of exception-less calls.
type fastCalls struct {
	state *atomic.Uint32 // the call page's state word
	// finish is a call served beside whose end needs the vCPU: the
	// stub's next exit finishes it (finishCall). nil: none.
	finish *servedCall
	// answered counts the calls answered beside, finished those that
	// an exit finished, refused those the companion left to an exit,
	// exited all that exited unserved (refused, or their spin ran out),
	// kernelMode those made at CPL0 (VMX hosts), which the stub does not
	// post.
	answered, finished, refused, exited, kernelMode uint64
}

// servedCall is what a call served beside returned.
type servedCall struct {
	ret uint64
	err error
}

// bootFastCalls lays out the stub that posts calls and starts the
// companion that serves them.
func (k *Kernel) bootFastCalls() error {
	ram := k.m.RAM()
	if err := ram.Write(stubPage, fastSyscallStub); err != nil {
		return err
	}
	state, err := ram.Word32(cpState)
	if err != nil {
		return err
	}
	k.fast.state = state
	k.m.SetCompanion(k.serveCalls)
	return nil
}

// newSpace is a new address space, with the call page open to the
// program when calls are exception-less.
func (k *Kernel) newSpace() (*mm.Space, error) {
	as, err := mm.New(k.fr)
	if err != nil || k.fast == nil {
		return as, err
	}
	if err := as.OpenCallPage(); err != nil {
		as.Release()
		return nil, err
	}
	return as, nil
}

// serveCalls is the companion: it polls the call page while the guest
// runs, and parks when no call came for a while, until the vCPU next
// enters the guest (a call posted meanwhile exits when its spin runs out,
// and that exit's return wakes it).
func (k *Kernel) serveCalls(b *vmm.Beside) {
	st := k.fast.state
	quiet := time.Now()
	for polls := 0; !b.Done(); polls++ {
		if st.Load() != callPosted || !st.CompareAndSwap(callPosted, callClaimed) {
			if polls%4096 == 0 && time.Since(quiet) > quietPeriod {
				b.Park()
				quiet = time.Now()
			}
			continue
		}
		answer := uint32(callRefused)
		b.Hold(func() { answer = k.serveFast() })
		if b.Done() {
			return // the run's end is measured: its RAM stays as it ended
		}
		st.Store(answer)
		quiet = time.Now()
	}
}

// serveFast serves the posted call, if it may be served beside, and
// says how the stub goes on. It runs while the vCPU loop waits
// (vmm.Beside.Hold).
func (k *Kernel) serveFast() uint32 {
	t := k.current()
	regs, err := k.postedRegs()
	if err != nil || regs.RAX >= tableSize || !fastCall[regs.RAX] || k.fast.finish != nil ||
		k.debugging() || !k.started || t.state != runnable {
		k.fast.refused++
		return callRefused
	}
	answer := uint32(callRefused)
	served, err := k.m.ServeBeside(abi.PortSyscall, &regs, func() { answer = k.serveCounted(t, regs) })
	switch {
	case err != nil:
		k.fast.finish = &servedCall{err: err}
		return callFinish
	case !served:
		k.fast.refused++
	}
	return answer
}

// serveCounted serves the call regs hold for thread t at the exit
// ServeBeside counted: answered if nothing else is left to do, else
// finished by the stub's exit.
func (k *Kernel) serveCounted(t *thread, regs kvm.Regs) uint32 {
	t0 := time.Now()
	nr := regs.RAX
	k.noteRunning()
	t.retryAt = 0
	k.retried()
	root := k.proc().as.CR3()
	ret, err := k.call(t, &regs)
	k.counts.serve(nr, time.Since(t0))
	if err == nil && !k.restart && !k.returned && !k.resched && t.state == runnable &&
		t.pending&^t.sigmask == 0 && k.proc().as.CR3() == root && !k.fs.HasOutbox() && k.m.QuietAfter() {
		if err := k.m.RAM().PutUint64(cpRet, ret); err == nil {
			t.inCall = false // it returned (exited)
			k.fast.answered++
			return callAnswered
		}
	}
	k.fast.finish = &servedCall{ret, err}
	return callFinish
}

// postedRegs are the registers the stub's exit would have shown for the
// call posted in the call page: the program's, but for RAX (the call's
// number), RIP (past the stub's OUT, as PVM shows it) and the flags (as
// the stub leaves them there: SYSCALL's mask applied, its XOR's).
func (k *Kernel) postedRegs() (kvm.Regs, error) {
	var w [cpStackTop/8 - cpNR/8]uint64
	ram := k.m.RAM()
	for i := range w {
		v, err := ram.Uint64(cpNR + 8*uint64(i))
		if err != nil {
			return kvm.Regs{}, err
		}
		w[i] = v
	}
	at := func(field uint64) uint64 { return w[(field-cpNR)/8] }
	arg := func(i uint64) uint64 { return at(cpArgs + 8*i) }
	reg := func(i uint64) uint64 { return at(cpRegs + 8*i) }
	r11 := at(cpFlags)
	return kvm.Regs{
		RAX: at(cpNR), RBX: reg(0), RCX: at(cpRIP), RDX: arg(2), RSI: arg(1), RDI: arg(0), RSP: reg(2), RBP: reg(1),
		R8: arg(4), R9: arg(5), R10: arg(3), R11: r11, R12: reg(3), R13: reg(4), R14: reg(5), R15: reg(6),
		RIP:    stubPage + uint64(len(fastSyscallStub)),
		RFLAGS: r11&^(k.sfmask()|x86.RFLAGSArith) | x86.RFLAGSZF | x86.RFLAGSPF | x86.RFLAGSReserved,
	}, nil
}

// debugging reports whether a debugger watches the program's calls, or
// a breakpoint's step is under way: every call then takes its exit, where
// they look. (A replay's probes are int3s a call never meets.)
func (k *Kernel) debugging() bool {
	return k.watchesExits() || k.bp != nil && (k.bp.step != nil || k.bp.retry != nil)
}

// FinishesBeside reports whether the program's exit at port is the
// stub's, come to finish a call served beside (vmm.FinishingKernel).
func (k *Kernel) FinishesBeside(port uint16) bool {
	return port == abi.PortSyscall && k.fast != nil && k.fast.finish != nil
}

// finishCall takes the call served beside that the stub's exit comes to
// finish, if there is one.
func (k *Kernel) finishCall() (*servedCall, bool) {
	if k.fast == nil {
		return nil, false
	}
	if k.fast.finish == nil {
		k.fast.exited++
		if k.m.VCPU().SyncedSregs().CS.Selector&3 == 0 {
			k.fast.kernelMode++
		}
		return nil, false
	}
	f := k.fast.finish
	k.fast.finish = nil
	k.fast.finished++
	return f, true
}

// settleCallPage clears what of the call page only an answered call
// writes, at every exit: RAM is then the same whichever way each call
// went, as a replay that serves them otherwise than its recording must
// find it.
func (k *Kernel) settleCallPage() error {
	if k.fast == nil {
		return nil
	}
	ram := k.m.RAM()
	for _, w := range []uint64{cpRet, cpSavedRSP, cpStackTop - 8} {
		if err := ram.PutUint64(w, 0); err != nil {
			return err
		}
	}
	return nil
}

// inCallStub reports whether rip is in the exception-less stub, where the
// thread may be half-way through posting a call: no other thread may run
// (and post) before it leaves.
func (k *Kernel) inCallStub(rip uint64) bool {
	return k.fast != nil && rip >= stubPage && rip < stubPage+uint64(len(fastSyscallStub))
}
