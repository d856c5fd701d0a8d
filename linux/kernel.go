package linux

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/devices"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// Program is what a Kernel runs: a Linux executable and how it starts.
// Everything in it is part of a recording (the tape's header), so a replay
// starts the same program the same way.
type Program struct {
	Path  string // the executable's path in the guest (AT_EXECFN, /proc/self/exe)
	Image []byte // its ELF file
	Argv  []string
	Env   []string
	// Random is AT_RANDOM, the bytes the C library seeds its stack
	// protector and pointer guard from.
	Random [randomBytes]byte
	// Epoch is the wall-clock time the program's clock starts at
	// (CLOCK_REALTIME = Epoch + the machine's clock).
	Epoch time.Time
	// Root is the host directory the program sees as its root, read as
	// it looks (hostview.go); "" is the host's own.
	Root string
	// Mounts are host files or directories placed at guest paths, over
	// what the root has there.
	Mounts []Mount
	// Files are contents a replay's tape holds (packed): the program's
	// reads of them are served from here, not the host.
	Files []File
	// Stdin is the guest path of the file the program reads as its
	// standard input; "" leaves it empty.
	Stdin string
	// Cwd is the directory the program starts in, if the program's
	// files have it ("" or a path they have not: the root).
	Cwd string
	// User is who the program runs as: the user who runs reprise, as rr's
	// tracees are, so that the host files it sees are owned as they are
	// for that user's own programs.
	User User
	// FastCalls makes its system calls exception-less where they can be
	// (fastcall.go): a recording's replays serve them so too.
	FastCalls bool
	// Personality is the version of this personality the program runs
	// as, one Replays accepts: a replay's is its recording's; 0 is
	// Version.
	Personality int
}

// paging is how the program's memory is laid out by its version: since
// 12, entries start accessed and dirty and small forks copy; since 13,
// entries that widen go in place (mm.Policy).
func (p *Program) paging() mm.Policy {
	v := cmp.Or(p.Personality, Version)
	if v < 12 {
		return mm.Policy{}
	}
	return mm.Policy{PresetAccessed: true, CopyAtFork: copyAtFork, WidenInPlace: v >= 13}
}

// copyAtFork is how many writable private pages a fork copies at once
// (mm.Policy.CopyAtFork): 8 MiB, copied in about as long as a handful
// of copy-on-write faults' exits on a PVM host take.
const copyAtFork = 2048

// User is a program's identity: its user and group id.
type User struct {
	UID, GID uint32
	Groups   []uint32 // supplementary groups
}

// InvokingUser is the user running reprise, whom a recording's program
// runs as, with its supplementary groups (whoever may open /dev/kvm is
// mostly in the kvm group, and id says so).
func InvokingUser() User {
	u := User{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
	groups, _ := os.Getgroups()
	for _, g := range groups[:min(len(groups), tape.MaxGroups)] {
		u.Groups = append(u.Groups, uint32(g))
	}
	return u
}

// pid is the program's first process's.
const pid = 1

// Kernel is the Linux personality of one machine (vmm.Kernel).
type Kernel struct {
	prog Program
	exe  exeFacts
	m    *vmm.Machine
	fr   *mm.Frames
	fs   *vfs.FileSystem
	// stats are the counts as of boot or the last restore, counts those
	// since (Stats adds them).
	stats  Stats
	counts callCounts
	// io is the buffer reads and writes move data through (scratch).
	io []byte
	// serving is the number of the call the exit being served made, plus
	// one (0: it made none), for the count of its time.
	serving uint64
	// budget is what the program holds on the host (budget.go), the
	// file system's included.
	budget *budget
	// console is the standard streams' file.
	console *vfs.Console

	threads  []*thread // in creation order: tid order
	cur      int       // index of the running thread
	nextTID  int
	resched  bool   // switch threads at the next chance
	waitSeq  uint64 // counts blocking waits (thread.waitSeq)
	switches uint64
	restart  bool         // the call being served blocked and runs again when woken
	returned bool         // rt_sigreturn restored the registers: the call sets none
	stale    staleAt      // the fault last retried for a stale translation (stale.go)
	frame    programFrame // the program's last trap frame, put back after a stale retry
	trace    io.Writer    // if set, every system call is written here
	bp       *breakpoints
	fast     *fastCalls  // nil: every system call exits (fastcall.go)
	xsave    xsaveLayout // the guest CPU's XSAVE image (xstate.go)
	// timerfds are the program's open timerfds, in creation order
	// (sys_timerfd.go).
	timerfds []*openFile
	// signalfds are the program's open signalfds, in creation order
	// (sys_signalfd.go).
	signalfds []*openFile
	// shm are the shared objects of the files mapped shared (shm.go).
	shm map[*node]*mm.Object
	// imageSum is the executable's SHA-256 once asked for (imageHash):
	// a live run never needs it.
	imageSum *[32]byte
	// observer logs or replays what the host says of its files
	// (hostview.go); nil asks the host.
	observer Observer
	// recordClock is, in a replay, the recording's time at a position
	// (SetRecordClock): what a debugger's stop reports.
	recordClock func(vmm.Position) time.Duration
	// started says the start call ran (start.go).
	started bool
	// coarse is the latest clock reading the kernel was given (a tick's,
	// a clock call's): the time files are stamped with, as Linux stamps
	// them from its coarse, tick-granular clock. It costs no input of
	// its own, so every write need not log one.
	coarse time.Duration
	// tscSites are the RDTSCs found in each executable file the program
	// never wrote (tsc.go), so an image is decoded once, not at each exec.
	tscSites map[*node][]tscSite
	// hog is the thread that ran up to the last exit, how many others
	// could run then, and when the last tick was delivered (watchHog).
	hog struct {
		thread  *thread
		waiting int
		at      time.Duration
	}
}

// Trace writes every system call, its arguments and its result to w, as
// strace does (nil: none).
func (k *Kernel) Trace(w io.Writer) { k.trace = w }

// Check says whether p is a program the personality can start: an x86-64
// Linux executable, arguments and environment within Linux's bounds.
func Check(p *Program) error {
	_, err := inspect(p)
	return err
}

// inspect checks p (Check) and reads what the kernel needs of its
// executable besides loading it: the file is parsed once, here.
func inspect(p *Program) (exeFacts, error) {
	if err := abi.CheckLinuxArgs(p.Argv, p.Env); err != nil {
		return exeFacts{}, fmt.Errorf("linux: %w", err)
	}
	if p.Path == "" || len(p.Path) > abi.LinuxMaxPath {
		return exeFacts{}, fmt.Errorf("linux: executable path of %d bytes (want 1 to %d)", len(p.Path), abi.LinuxMaxPath)
	}
	f, err := elf.NewFile(bytes.NewReader(p.Image))
	if err != nil {
		return exeFacts{}, fmt.Errorf("linux: %s is not an ELF executable: %w", p.Path, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || (f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN) {
		return exeFacts{}, fmt.Errorf("linux: %s is a %v %v %v file, not an x86-64 executable", p.Path, f.Class, f.Machine, f.Type)
	}
	return exeFacts{pie: f.Type == elf.ET_DYN, hook: branchHook(f)}, nil
}

// exeFacts are what the kernel knows of its executable before it loads it.
type exeFacts struct {
	pie  bool       // ET_DYN: loaded at pieBase
	hook hookSymbol // its software branch counter's hook, if it has one
}

// New checks a program and returns a kernel that runs it. Nothing is
// read from the host until the program looks.
func New(p Program) (*Kernel, error) {
	exe, err := inspect(&p)
	if err != nil {
		return nil, err
	}
	if len(p.Mounts) > tape.MaxMounts {
		return nil, fmt.Errorf("linux: %d files given, more than %d", len(p.Mounts), tape.MaxMounts)
	}
	p.Root = cmp.Or(p.Root, "/")
	return build(p, exe, nil)
}

// build makes the kernel of p, whose executable's hash is imageSum (nil:
// not taken yet).
func build(p Program, facts exeFacts, imageSum *[32]byte) (*Kernel, error) {
	b := &budget{}
	k := &Kernel{prog: p, exe: facts, imageSum: imageSum, budget: b, stats: Stats{Calls: map[string]uint64{}, Unsupported: map[string]uint64{}}}
	k.console = vfs.NewConsole(console{k})
	fs := vfs.New(b, k.remap)
	fs.SetClock(k.fileTime)
	if err := fs.AddSystem(entropy{k}, maxRandom, systemFiles); err != nil {
		return nil, fmt.Errorf("linux: %w", err)
	}
	if err := addProc(fs); err != nil {
		return nil, fmt.Errorf("linux: %w", err)
	}
	fs.SetMagic(k.procFDEntry)
	// The kernel's own files are root's, as on Linux; what the program
	// makes is its user's, and its user's rights are checked from now.
	fs.SetOwner(p.User.UID, p.User.GID)
	fs.SetGroups(slices.Clone(p.User.Groups))
	fs.MountHost(p.Root)
	fs.SetHost(hostView{k})
	limitHeap()
	k.fs = fs
	k.procListed(pid, true)
	if p.FastCalls {
		k.fast = &fastCalls{}
	}
	return k, nil
}

// Fresh is a kernel for another run of k's program, which has not booted
// (a split replay's segments each run one). Not safe to call concurrently.
func (k *Kernel) Fresh() (*Kernel, error) {
	if k.m != nil {
		return nil, errors.New("linux: a fresh kernel is made from one that has not booted")
	}
	k.imageHash() // taken once, before the kernels that share it run at once
	return build(k.prog, k.exe, k.imageSum)
}

// imageHash is the executable's SHA-256, taken when first asked for.
func (k *Kernel) imageHash() [32]byte {
	if k.imageSum == nil {
		sum := sha256.Sum256(k.prog.Image)
		k.imageSum = &sum
	}
	return *k.imageSum
}

// Program is the program the kernel runs: what a recording keeps.
func (k *Kernel) Program() Program { return k.prog }

// Stats are the system calls made so far.
func (k *Kernel) Stats() Stats {
	s := k.counts.add(k.stats)
	if k.fast != nil {
		s.FastAnswered, s.FastFinished = k.fast.answered, k.fast.finished
		s.FastRefused, s.FastAtCPL0 = k.fast.refused, k.fast.kernelMode
		s.FastLate = k.fast.exited - min(k.fast.exited, k.fast.refused+k.fast.kernelMode)
	}
	return s
}

// Boot builds the descriptor tables and stubs, the process's address space
// with the executable and its stack, and the vCPU's state at its entry.
func (k *Kernel) Boot(m *vmm.Machine) error {
	k.m = m
	k.fs.SetDoor(m.Networked())
	ram := m.RAM()
	// The system area's stacks are the guest's to write; above it, RAM is
	// populated as frames are handed out (mm.Frames).
	ram.Reach(mm.SystemTop)
	for _, build := range []func() error{
		func() error { return x86.BuildGDT(ram) },
		func() error { return x86.BuildTSS(ram) },
		func() error { return x86.BuildIDT(ram, vectorsPage) },
		// #DB shares #BP's stack, which only debug traps use: the stack a
		// replay's breakpoints write and the end puts back (breakpoints.go).
		func() error { return x86.SetGateIST(ram, 1, debugIST) },
		func() error { return writeStubs(ram) },
	} {
		if err := build(); err != nil {
			return fmt.Errorf("linux: %w", err)
		}
	}
	if k.fast != nil {
		if err := k.bootFastCalls(); err != nil {
			return err
		}
	}
	k.fr, k.shm = mm.NewFrames(ram, k.m.DropTranslations), map[*node]*mm.Object{}
	k.fr.SetPolicy(k.prog.paging())
	init := &process{pid: pid, pgid: pid, sid: pid, fds: vfs.NewFDTable(k.console), umask: 0o022, cred: credsOf(k.prog.User)}
	k.budget[processCount] = 1 // init
	if err := k.initXSave(); err != nil {
		return err
	}
	k.nextTID = pid - 1
	if _, err := k.spawn(init, kvm.Regs{}, k.xsave.initial(), 0); err != nil { // the main thread: tid = pid
		return err
	}
	// The program starts at the start call (start.go), where its files
	// can be asked of the host: an empty address space with the stub.
	as, err := k.newSpace()
	if err != nil {
		return fmt.Errorf("linux: address space: %w", err)
	}
	init.as = as
	if err := k.placeAll(init.pid, init.execs, as, false); err != nil {
		return err
	}
	return k.enter(stubPage, 0)
}

// initXSave learns the guest CPU's XSAVE layout, enables every component
// it has in XCR0, as Linux does, and gives the vCPU the state a program
// starts with.
func (k *Kernel) initXSave() error {
	c := k.m.VCPU()
	x, err := c.XSave()
	if err != nil {
		return fmt.Errorf("linux: a thread's AVX state cannot be switched without it: %w", err)
	}
	mxcsrMask := binary.LittleEndian.Uint32(x.Bytes()[offMXCSRMask:])
	k.xsave = newXSaveLayout(k.m.CPUID(), mxcsrMask)
	host, err := k.m.HostCPUID()
	if err != nil {
		return fmt.Errorf("linux: %w", err)
	}
	if missing := k.xsave.features &^ newXSaveLayout(host, mxcsrMask).features; missing != 0 {
		// A replay's CPUID is its recording's: a recording made on a CPU
		// with more than this one cannot run here as it ran.
		return fmt.Errorf("linux: the program's CPU has XSAVE state this host's KVM cannot give a guest (%s, XCR0 %#x of %#x): "+
			"replay the recording on a host whose CPU has them", xsaveNames(missing), missing, k.xsave.features)
	}
	xcrs := kvm.XCRs{N: 1, XCRs: [16]kvm.XCR{{Index: 0, Value: k.xsave.features}}}
	if err := c.SetXCRs(&xcrs); err != nil {
		return fmt.Errorf("linux: XCR0 = %#x: %w", k.xsave.features, err)
	}
	return k.resetXSave()
}

// resetXSave puts the running thread's extended state in the state a
// program starts with (execve).
func (k *Kernel) resetXSave() error {
	init := k.xsave.initial()
	return k.m.VCPU().SetXSave(&init)
}

// hwcap is AT_HWCAP: CPUID leaf 1's EDX, as Linux gives it.
func hwcap(m *vmm.Machine) uint64 {
	for _, e := range m.CPUID() {
		if e.Function == 1 {
			return uint64(e.EDX)
		}
	}
	return 0
}

// enter sets the vCPU at the program's entry point: CPL3 on the process's
// page tables, SYSCALL aimed at the stub.
func (k *Kernel) enter(entry, sp uint64) error {
	c := k.m.VCPU()
	s, err := c.Sregs()
	if err != nil {
		return err
	}
	s = x86.UserModeSregs(s)
	s.CR4 |= x86.CR4OSXSAVE // as Linux: XGETBV and the AVX state, and CPUID says so
	s.CR3 = k.proc().as.CR3()
	k.proc().as.Published()
	k.fr.Ran()
	if err := c.SetSregs(s); err != nil {
		return err
	}
	const (
		starKernel = uint64(abi.SelKernelCode) << 32
		starUser   = uint64(abi.SelKernelData) << 48 // SYSRET: CS = this+16, SS = this+8, RPL 3
	)
	if err := c.SetMSRs(
		kvm.MSREntry{Index: kvm.MSRSTAR, Data: starKernel | starUser},
		kvm.MSREntry{Index: kvm.MSRLSTAR, Data: stubPage},
		kvm.MSREntry{Index: kvm.MSRSFMASK, Data: k.sfmask()},
	); err != nil {
		return err
	}
	k.m.StartTimer()
	return c.SetRegs(kvm.Regs{RIP: entry, RSP: sp, RAX: startCall, RFLAGS: x86.RFLAGSReserved | x86.RFLAGSIF})
}

// sfmask is what SYSCALL clears in RFLAGS (the SFMASK MSR), as Linux:
// TF, IF, DF, IOPL, NT, AC — but for IF with exception-less calls: a
// call the stub returns from itself restores the flags with POPFQ, which
// at CPL3 leaves IF as it is, so SYSCALL must leave it set, as the
// program had it (the kernel takes no interrupts through the CPU's IF).
func (k *Kernel) sfmask() uint64 {
	const linux = 1<<8 | 1<<9 | 1<<10 | 3<<12 | 1<<14 | 1<<18
	if k.fast != nil {
		return linux &^ x86.RFLAGSIF
	}
	return linux
}

// Exit serves a system call or a trap.
func (k *Kernel) Exit(port uint16) error {
	k.serving = 0
	if err := k.settleCallPage(); err != nil {
		return err
	}
	host := k.HostTrap(port) // not the program's exit: no stretch begins
	err := k.exit(port)
	if ferr := k.flushDoor(); ferr != nil {
		return ferr
	}
	if err != nil || host {
		return err
	}
	err = k.exited()
	if k.serving != 0 {
		k.counts.serve(k.serving-1, k.m.SinceExit())
	}
	return err
}

func (k *Kernel) exit(port uint16) error {
	k.noteRunning()
	k.current().retryAt = 0 // it made the exit: the write it retried has run
	if port != abi.PortTrap {
		k.retried()
	}
	if port == abi.PortTrap {
		if err := k.trap(); err != nil {
			return err
		}
		return k.leaveStub()
	}
	c := k.m.VCPU()
	regs := c.SyncedRegs()
	caller := k.current()
	var ret uint64
	var err error
	switch f, finishing := k.finishCall(); {
	case finishing: // served beside the vCPU: only its end is left
		ret, err = f.ret, f.err
	case k.started:
		nr := regs.RAX // execve and rt_sigreturn replace the registers
		ret, err = k.call(caller, regs)
		k.serving = nr + 1
	default:
		err = k.start()
	}
	if err != nil {
		return err
	}
	// Return to the program after its SYSCALL, as SYSRET would: on PVM
	// hosts SYSCALL stayed at CPL3; on VMX it entered CPL0, which the
	// segments undo.
	if k.returned {
		k.returned = false
	} else {
		regs.RAX = ret
		regs.RIP, regs.RFLAGS = regs.RCX, regs.R11
		if k.restart {
			// Back onto the SYSCALL (two bytes), rax the call's number again.
			k.restart = false
			regs.RIP -= 2
			caller.reissue = true
		}
	}
	c.MarkRegsDirty()
	if sregs := c.SyncedSregs(); sregs.CS.Selector&3 != 3 {
		user := x86.UserModeSregs(*sregs)
		sregs.CS, sregs.SS = user.CS, user.SS
		c.MarkSregsDirty()
	}
	return k.resume()
}

// call serves the system call regs hold, made by thread t, the running
// one.
func (k *Kernel) call(t *thread, regs *kvm.Regs) (uint64, error) {
	if err := k.enterCall(t, regs); err != nil {
		return 0, err
	}
	return k.syscall(regs)
}

// resume switches threads if asked to and points the vCPU at the running
// thread's page tables and thread pointer.
func (k *Kernel) resume() error {
	for {
		if err := k.reschedule(); err != nil {
			return err
		}
		if _, err := k.deliver(k.m.VCPU().SyncedRegs()); err != nil {
			return err
		}
		// A signal that killed its process leaves the vCPU to another.
		if k.current().state != exited || !k.resched {
			break
		}
	}
	k.loadAddressSpace()
	return nil
}

// leaveStub ends a trap stub's visit to the VMM. The stub returns with its
// IRETQ to the thread that trapped; if that thread is gone — its process
// killed by the trap, or by a signal it could not take — the IRETQ takes
// the vCPU to the thread that runs next instead: its registers in the
// vCPU but for the stub's own RIP, RSP and flags, which the stub goes on
// with, and its RIP, flags and RSP in the frame the IRETQ pops. With
// nothing else to run, the machine idles in the stub until an interrupt
// brings a thread (Interrupt).
func (k *Kernel) leaveStub() error {
	if k.current().state != exited {
		return nil
	}
	c := k.m.VCPU()
	stub := *c.SyncedRegs()
	k.resched = true
	if err := k.resume(); err != nil {
		return err
	}
	next := *c.SyncedRegs()
	if k.current().state == exited {
		*c.SyncedRegs() = stub // nothing runnable: the dead thread's frame is never popped
		return nil
	}
	return k.iretTo(stub, &next)
}

// loadAddressSpace points the vCPU at the running thread's page tables and
// thread pointer, for its next entry.
func (k *Kernel) loadAddressSpace() {
	c := k.m.VCPU()
	sregs := c.SyncedSregs()
	as := k.proc().as
	if fs := k.current().fsBase; sregs.FS.Base != fs || sregs.CR3 != as.CR3() {
		sregs.CR3, sregs.FS.Base = as.CR3(), fs
		c.MarkSregsDirty()
	}
	as.Published()
	k.fr.Ran()
}

// trap ends the program on an exception, as the signal Linux would send
// for it ends a program that does not handle it.
func (k *Kernel) trap() error {
	c := k.m.VCPU()
	regs := c.SyncedRegs()
	var frame [7]uint64 // vector, error code, RIP, CS, RFLAGS, RSP, SS
	for i := range frame {
		v, err := k.m.RAM().Uint64(regs.RSP + uint64(i)*8)
		if err != nil {
			return fmt.Errorf("linux: trap frame at %#x: %w", regs.RSP, err)
		}
		frame[i] = v
	}
	vector := frame[0]
	if vector == 1 || vector == 3 {
		if handled, err := k.debugTrap(regs, vector, frame[2]); handled || err != nil {
			return err
		}
		defer k.bp.keepDebugStack(k.m.RAM()) // the program's own trap: its frame is the recording's too
	} else {
		k.bp.noteTrapFlags(k.current(), regs.RSP+frameRFLAGS, frame[4])
		if err := k.abortStep(regs, &frame[4]); err != nil {
			return err
		}
	}
	if n := k.proc().as.Site(frame[2]); vector == 6 && n != 0 {
		k.frame.keep(k.m.RAM())
		return k.emulateTSC(regs, frame[2], n)
	}
	if vector == 14 && k.staleFault() {
		return k.retryStale(frame[2], c.SyncedSregs().CR2)
	}
	if vector == 6 && k.staleOpcode() {
		return k.retryStale(frame[2], 0)
	}
	persisted := vector == 14 && k.stale == staleAt{frame[2], c.SyncedSregs().CR2}
	k.stale = staleAt{}
	k.frame.keep(k.m.RAM())
	// A user access to a page of a lazy range (the stack) that has no
	// frame yet: give it one; the stub's IRETQ runs the access again.
	if cr2 := c.SyncedSregs().CR2; vector == 14 && frame[1]&(pfPresent|pfUser) == pfUser {
		switch ok, err := k.proc().as.FaultIn(cr2 &^ pageMask); {
		case errors.Is(err, mm.ErrNoMemory):
			return k.killProcess(k.proc(), uint64(unix.SIGSEGV)) // no frame to give
		case err != nil:
			return err
		case ok:
			return nil
		}
	}
	// A user write to a present copy-on-write page: copy it, retry.
	if cr2 := c.SyncedSregs().CR2; vector == 14 && frame[1]&(pfPresent|pfWrite|pfUser) == pfPresent|pfWrite|pfUser {
		if as := k.proc().as; as.COW(cr2 &^ pageMask) {
			if err := as.BreakCOWFault(cr2 &^ pageMask); err != nil {
				return k.killProcess(k.proc(), uint64(unix.SIGSEGV)) // no frame to copy into
			}
			k.current().retryAt = frame[2]
			return nil // the stub's IRETQ retries the write
		}
	}
	faulting := *regs
	faulting.RIP, faulting.RFLAGS, faulting.RSP = frame[2], frame[4], frame[5]
	cr2 := c.SyncedSregs().CR2
	if handled, err := k.fault(&faulting, vector, cr2); handled || err != nil {
		return err
	}
	what := fmt.Sprintf("%s (error code %#x)", vmm.ExceptionName(vector), frame[1])
	if vector == 14 {
		what += fmt.Sprintf(" at address %#x", cr2)
	}
	if persisted {
		what += " (not what its page tables say: a stale host translation that dropping KVM's did not clear)"
	}
	return k.m.Trap(fmt.Sprintf("the program got %s: %s", signalFor(vector), what), int(vector), faulting, uint16(frame[3]), cr2)
}

// signalNumber is the signal Linux sends for an exception.
func signalNumber(vector uint64) uint64 {
	switch vector {
	case 0, 16, 19:
		return uint64(unix.SIGFPE)
	case 3, 1:
		return uint64(unix.SIGTRAP)
	case 6:
		return uint64(unix.SIGILL)
	case 17:
		return uint64(unix.SIGBUS)
	}
	return uint64(unix.SIGSEGV)
}

// signalFor names the signal Linux sends for an exception.
func signalFor(vector uint64) string { return unix.SignalName(unix.Signal(signalNumber(vector))) }

// Interrupt takes a tick (threads whose time has come wake) or the door's
// messages (Receive applied them; threads waiting on their sockets
// wake), and the running thread yields to the next runnable one; what
// the program sent through the door meanwhile goes out.
func (k *Kernel) Interrupt(vector uint8, clock time.Duration) error {
	err := k.takeInterrupt(vector, clock)
	if ferr := k.flushDoor(); ferr != nil {
		return ferr
	}
	if err != nil {
		return err
	}
	return k.exited()
}

func (k *Kernel) takeInterrupt(vector uint8, clock time.Duration) error {
	switch vector {
	case abi.IRQBase + abi.IRQTimer:
		k.tick(clock)
		if err := k.fireTimers(clock); err != nil {
			return err
		}
	case abi.IRQBase + abi.IRQNIC: // Receive applied the door's messages
	default:
		return nil
	}
	if k.m.VCPU().SyncedSregs().CS.Selector&3 == 0 {
		// Inside a trap stub (a tick delivered at its exit): its IRETQ
		// must run on this thread's stack, so a switch or a signal
		// waits for the program's next exit — unless the thread is gone.
		return k.leaveStub()
	}
	if k.inCallStub(k.m.VCPU().SyncedRegs().RIP) {
		// Half-way through posting a call, or spinning for its answer:
		// the switch or the signal waits for the stub's return or exit.
		return nil
	}
	if t := k.current(); t.retryAt != 0 {
		if k.m.VCPU().SyncedRegs().RIP == t.retryAt {
			// Back from a copy-on-write fault, the write not yet run
			// again: until it runs, the page's old translation stands
			// (breakCOWFault), so nothing else of the program may run
			// first.
			return nil
		}
		t.retryAt = 0
	}
	return k.resume()
}

// exitGroup ends the run with status, as the machine's exit port does.
func exitGroup(status uint64) error { return &devices.PowerOff{Status: uint32(status & 0xff)} }

// fault hands an exception of the program to its handler for the signal
// Linux sends for it, if it has one: the handler is entered through the
// trap stub's IRETQ, its frame built from the faulting context.
func (k *Kernel) fault(faulting *kvm.Regs, vector, cr2 uint64) (bool, error) {
	sig := signalNumber(vector)
	t := k.current()
	act := t.proc.sigactions[sig]
	if act.handler <= sigIGN || t.sigmask&sigbit(sig) != 0 {
		return false, nil
	}
	code, word := int32(1), faulting.RIP // SEGV_MAPERR, ILL_ILLOPC, FPE_INTDIV, ...: the faulting address
	if vector == 14 {
		word = cr2
	}
	t.pending |= sigbit(sig)
	if t.infos == nil {
		t.infos = map[uint64][128]byte{}
	}
	t.infos[sig] = k.siginfo(sig, code, word)
	handled, err := k.deliver(faulting)
	if !handled || err != nil {
		return handled, err
	}
	// Writing the frame may have broken copy-on-write (a new root); the
	// stub runs in the system area, the same in every root.
	k.loadAddressSpace()
	return true, k.iretTo(*k.m.VCPU().SyncedRegs(), faulting)
}

// iretTo makes the trap stub, whose registers are stub, return with its
// IRETQ to the user context next: the vCPU gets next's registers but for
// the stub's own RIP, RSP and flags, which it goes on with, and the frame
// the IRETQ pops (at the stub's RSP, past the vector and error code) gets
// next's RIP, flags and RSP.
func (k *Kernel) iretTo(stub kvm.Regs, next *kvm.Regs) error {
	ram := k.m.RAM()
	for _, w := range [][2]uint64{{16, next.RIP}, {32, next.RFLAGS}, {40, next.RSP}} {
		if err := ram.PutUint64(stub.RSP+w[0], w[1]); err != nil {
			return err
		}
	}
	c := k.m.VCPU()
	regs := c.SyncedRegs()
	*regs = *next
	regs.RIP, regs.RSP, regs.RFLAGS = stub.RIP, stub.RSP, stub.RFLAGS
	c.MarkRegsDirty()
	return nil
}
