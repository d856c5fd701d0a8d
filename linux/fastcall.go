package linux

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/vmm"
)

// Exception-less system calls (FlexSC, OSDI '10), for live runs: on PVM
// hosts a program's SYSCALL stays at CPL3 and lands on the stub without an
// exit, and an exit is most of what a call costs (~60–80 µs against ~1 µs
// of serving). With them on (EnableFastCalls), the stub posts the call in
// the call page and spins; a host thread of the VMM beside the vCPU (a
// vmm.Companion, on the other host CPU) serves it and answers there, and
// the program goes on without having left the guest. The stub exits as
// before when the call is refused, when its spin runs out before the call
// is claimed, and when the call, served, needs the vCPU to end (it blocked,
// switched threads, changed the page tables, made a signal deliverable):
// the exit then finishes it as the ordinary path would have.
//
// Only a live run takes them: a call served beside makes no exit, and a
// recording's positions count exits.
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
	cpStackTop = callPage + 128 // the stub's own stack: one word, for POPFQ
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
	0x8C, 0xC8, // 0x3f mov %cs, %eax
	0xA8, 0x03, // 0x41 test $3, %al
	0x0F, 0x84, 0x8F, 0x00, 0x00, 0x00, // 0x43 je slow: CPL0
	0x41, 0xF7, 0xC3, 0x00, 0x01, 0x00, 0x00, // 0x49 test $0x100, %r11d
	0x0F, 0x85, 0x82, 0x00, 0x00, 0x00, // 0x50 jne slow: TF
	0xC7, 0x05, 0xA0, 0x0F, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // 0x56 movl $posted, STATE(%rip)
	0xB9, 0x10, 0x27, 0x00, 0x00, // 0x60 mov $spinBudget, %ecx (rcx and r11 are in the page)
	// spin: the state is read once a round, into eax
	0xF3, 0x90, // 0x65 pause
	0x8B, 0x05, 0x93, 0x0F, 0x00, 0x00, // 0x67 mov STATE(%rip), %eax
	0x83, 0xF8, 0x01, // 0x6d cmp $posted, %eax
	0x75, 0x14, // 0x70 jne wait
	0xFF, 0xC9, // 0x72 dec %ecx
	0x75, 0xEF, // 0x74 jne spin
	0xB8, 0x06, 0x00, 0x00, 0x00, // 0x76 mov $abandoned, %eax
	0x87, 0x05, 0x7F, 0x0F, 0x00, 0x00, // 0x7b xchg %eax, STATE(%rip)
	0x83, 0xF8, 0x01, // 0x81 cmp $posted, %eax
	0x74, 0x52, // 0x84 je slow: taken back before a claim
	// wait: claimed (then abandoned, if the spin ran out): the answer comes
	0x83, 0xF8, 0x02, // 0x86 cmp $claimed, %eax
	0x74, 0x05, // 0x89 je again
	0x83, 0xF8, 0x06, // 0x8b cmp $abandoned, %eax
	0x75, 0x0A, // 0x8e jne decided
	// again:
	0xF3, 0x90, // 0x90 pause
	0x8B, 0x05, 0x68, 0x0F, 0x00, 0x00, // 0x92 mov STATE(%rip), %eax
	0xEB, 0xEC, // 0x98 jmp wait
	// decided:
	0x83, 0xF8, 0x03, // 0x9a cmp $answered, %eax
	0x75, 0x39, // 0x9d jne slow: refused or finish
	// answered: return as SYSRET would, without touching the program's stack
	0xC7, 0x05, 0x57, 0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 0x9f movl $idle, STATE(%rip)
	0x48, 0x8B, 0x0D, 0x90, 0x0F, 0x00, 0x00, // 0xa9 mov RIP(%rip), %rcx
	0x4C, 0x8B, 0x1D, 0x91, 0x0F, 0x00, 0x00, // 0xb0 mov FLAGS(%rip), %r11
	0x48, 0x8B, 0x05, 0x92, 0x0F, 0x00, 0x00, // 0xb7 mov RET(%rip), %rax
	0x48, 0x89, 0x25, 0x93, 0x0F, 0x00, 0x00, // 0xbe mov %rsp, SAVEDRSP(%rip)
	0x48, 0x8D, 0x25, 0xB4, 0x0F, 0x00, 0x00, // 0xc5 lea STACKTOP(%rip), %rsp
	0x41, 0x53, // 0xcc push %r11
	0x9D,                                     // 0xce popfq
	0x48, 0x8B, 0x25, 0x82, 0x0F, 0x00, 0x00, // 0xcf mov SAVEDRSP(%rip), %rsp
	0xFF, 0xE1, // 0xd6 jmp *%rcx
	// slow:
	0xC7, 0x05, 0x1E, 0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 0xd8 movl $idle, STATE(%rip)
	0x48, 0x8B, 0x0D, 0x57, 0x0F, 0x00, 0x00, // 0xe2 mov RIP(%rip), %rcx
	0x4C, 0x8B, 0x1D, 0x58, 0x0F, 0x00, 0x00, // 0xe9 mov FLAGS(%rip), %r11
	0x48, 0x8B, 0x05, 0x11, 0x0F, 0x00, 0x00, // 0xf0 mov NR(%rip), %rax
	0xE6, 0xE6, // 0xf7 out %al, $PortSyscall
}

// fastCall says which calls may be served beside the vCPU: those whose
// handlers use the kernel's state and guest memory but never the vCPU
// (its registers, its extended state) nor the engine's inputs beyond the
// live clock and randomness. Whatever else one of them does that needs
// the vCPU is found after it ran (fastCalls.serve) and finished by an
// exit.
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
	// exited all that exited unserved (refused, or their spin ran out).
	answered, finished, refused, exited uint64
}

// servedCall is what a call served beside returned.
type servedCall struct {
	ret uint64
	err error
}

// EnableFastCalls makes the program's system calls exception-less where
// they can be (fastcall.go): call it before the machine boots. A live
// run only.
func (k *Kernel) EnableFastCalls() { k.fast = &fastCalls{} }

// bootFastCalls lays out the call page and starts the companion that
// serves it.
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
	if err := k.m.SetCompanion(k.serveCalls); err != nil {
		return fmt.Errorf("linux: exception-less system calls: %w", err)
	}
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
		st.Store(answer)
		quiet = time.Now()
	}
}

// serveFast serves the posted call, if it may be served beside, and
// says how the stub goes on. It runs while the vCPU loop waits
// (vmm.Beside.Hold).
func (k *Kernel) serveFast() uint32 {
	ram := k.m.RAM()
	nr, err := ram.Uint64(cpNR)
	t := k.current()
	if err != nil || nr >= tableSize || !fastCall[nr] || k.fast.finish != nil ||
		k.m.InterruptPending() || k.m.Stopping() || k.bp != nil || !k.started || t.state != runnable {
		k.fast.refused++
		return callRefused
	}
	var page [8]uint64 // the arguments, rip, flags
	for i := range page {
		if page[i], err = ram.Uint64(cpArgs + 8*uint64(i)); err != nil {
			k.fast.refused++
			return callRefused
		}
	}
	regs := kvm.Regs{RAX: nr, RDI: page[0], RSI: page[1], RDX: page[2], R10: page[3], R8: page[4], R9: page[5],
		RCX: page[6], R11: page[7]}
	t0 := time.Now()
	k.noteRunning()
	t.retryAt, k.stale = 0, staleAt{}
	root := k.proc().as.CR3()
	ret, err := k.call(t, &regs)
	k.counts.serve(nr, time.Since(t0))
	if err == nil && !k.restart && !k.returned && !k.resched && t.state == runnable &&
		t.pending&^t.sigmask == 0 && k.proc().as.CR3() == root && !k.fs.HasOutbox() {
		if err := ram.PutUint64(cpRet, ret); err == nil {
			t.inCall = false // it returned (exited)
			k.fast.answered++
			return callAnswered
		}
	}
	k.fast.finish = &servedCall{ret, err}
	return callFinish
}

// finishCall takes the call served beside that the stub's exit comes to
// finish, if there is one.
func (k *Kernel) finishCall() (*servedCall, bool) {
	if k.fast == nil {
		return nil, false
	}
	if k.fast.finish == nil {
		k.fast.exited++
		return nil, false
	}
	f := k.fast.finish
	k.fast.finish = nil
	k.fast.finished++
	return f, true
}

// inCallStub reports whether rip is in the exception-less stub, where the
// thread may be half-way through posting a call: no other thread may run
// (and post) before it leaves.
func (k *Kernel) inCallStub(rip uint64) bool {
	return k.fast != nil && rip >= stubPage && rip < stubPage+uint64(len(fastSyscallStub))
}
