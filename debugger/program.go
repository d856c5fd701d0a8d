package debugger

import (
	"errors"
	"time"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

// Trap is the program stopped for the session: the thread that stopped,
// its registers, why, and the Program to ask about the rest. It is valid
// only during the call that hands it over, on the machine's goroutine.
type Trap struct {
	TID, PID int
	// Image is which of the process's images runs: the count of its
	// execs. A breakpoint is set in one image, and goes with it.
	Image uint64
	// Regs are the thread's registers (RIP where it stopped); the session
	// must not change them.
	Regs *kvm.Regs
	// Start: before the program's first instruction. Stepped: a single
	// step the session asked for, done. Retry: a breakpoint met again
	// because its instruction faulted before it ran (the same execution of
	// it, not another hit). Return: a return the session did not ask for.
	// Resumed: a kit thread a step was asked of when it was not running
	// resumed, where it stood. Interrupted: a kit thread stopped for
	// gdb's interrupt where it stood at exit Since.
	Start, Stepped, Retry, Return, Resumed, Interrupted bool
	Since                                               uint64
	// Forked and Execed are news of the system call the thread resumes
	// from (Session.exited): it made process Forked, or exec replaced
	// the thread's image.
	Forked int
	Execed bool
	// Syscall is a system call the thread makes (Session.Entering: before
	// the kernel serves it) or, if Returned, returns from.
	Syscall  uint64
	Returned bool
	// BeforeHandler: Returned at the exit where a signal's handler is
	// entered next (linux.Break.BeforeHandler).
	BeforeHandler bool
	// Ended are the processes (but the program's first) that ended since
	// the last exit.
	Ended []ProcessEnd
	// Kit: a kit guest's stop (one process, 1; threads the kernel
	// switches with no exit; a step's landing its only trap there).
	Kit bool
	Program
}

// Program is what the session asks of a stopped program and the machine
// replaying it. Nothing in it changes what the program computes: a
// breakpoint is an int3 the replay steps over, a step the trap flag for
// one instruction.
type Program interface {
	// Threads lists the live threads, in creation order.
	Threads() []ThreadInfo
	// State is live thread tid's state; ok is false if there is none.
	State(tid int) (s ThreadState, ok bool, err error)
	// ReadMemory reads process pid's memory as the program has it: the
	// bytes breakpoints replaced show as they were.
	ReadMemory(pid int, va uint64, p []byte) error
	// ImageOf is which image live process pid runs; ok is false if there
	// is no such process.
	ImageOf(pid int) (image uint64, ok bool)
	// SetBreakpoint holds a breakpoint at va in image of process pid (the
	// one it runs) until a ClearBreakpoint, or until the image goes;
	// ClearBreakpoint lets one hold go.
	SetBreakpoint(pid int, image, va uint64) error
	ClearBreakpoint(pid int, image, va uint64) error
	// Step has thread tid run one instruction when the program resumes,
	// then trap with Stepped set.
	Step(tid int) error
	// Position is where the replay stands; RecordTime the recording's
	// time there.
	Position() vmm.Position
	RecordTime() time.Duration
	// SignalEntry is the last signal delivery that entered a handler in
	// live thread tid: the exit it came at, the handler's address and the
	// place the signal interrupted. ok is false if there is none.
	SignalEntry(tid int) (exit, handler, from uint64, ok bool)
	// Emulated is the last instruction the replay's kernel emulated for
	// live thread tid (an RDTSC): the exit it came at and its address. ok
	// is false if there is none.
	Emulated(tid int) (exit, at uint64, ok bool)
	// Auxv is process pid's auxiliary vector (nil if it has none), Exe the
	// path of its executable.
	Auxv(pid int) ([]byte, error)
	Exe(pid int) string
	// ProcFile is what /proc/PID/name reads for live process pid (maps,
	// cmdline, exe, …: linux.Break.ProcFile); ok is false if the program
	// has no such file.
	ProcFile(pid int, name string) (data []byte, ok bool)
	// MappedFile is the contents of a file live process pid maps, as
	// mapped; ok is false if it maps none at path.
	MappedFile(pid int, path string) (data []byte, ok bool)
	// Birth is where live thread tid ran its first instruction, if the
	// program says (a kit guest's).
	Birth(tid int) (addr uint64, ok bool)
}

// ProcessEnd is a process's end: it exited with Code, or Signal (Linux's
// number) killed it.
type ProcessEnd struct {
	PID    int
	Code   uint8
	Signal int
}

// ThreadInfo names a live thread.
type ThreadInfo struct {
	TID, PID int
	Name     string
}

// ThreadState is a thread's user state: its general registers, thread
// pointer and XSAVE image (x87, SSE, AVX), and the system call it is in
// (Linux's orig_rax: -1 if none).
type ThreadState struct {
	Regs    kvm.Regs
	FSBase  uint64
	XSave   kvm.XSave
	OrigRAX uint64
}

// linuxProgram is a Linux program stopped in the Go kernel's Break.
type linuxProgram struct{ *linux.Break }

func (p linuxProgram) Threads() []ThreadInfo {
	var out []ThreadInfo
	for _, t := range p.Break.Threads() {
		out = append(out, ThreadInfo(t))
	}
	return out
}

func (p linuxProgram) State(tid int) (ThreadState, bool, error) {
	s, ok, err := p.Break.State(tid)
	return ThreadState(s), ok, err
}

// Birth is unknown in a Linux program: a reverse step never needs it.
func (linuxProgram) Birth(int) (uint64, bool) { return 0, false }

// linuxTrap is b as the session sees it.
func linuxTrap(b *linux.Break) *Trap {
	return &Trap{TID: b.TID, PID: b.PID, Image: b.Image, Regs: b.Regs, Start: b.Start, Stepped: b.Stepped, Retry: b.Retry, Return: b.Return,
		Forked: b.Forked, Execed: b.Execed, Ended: processEnds(b.Ended), Syscall: b.Syscall, Returned: b.Returned, BeforeHandler: b.BeforeHandler, Program: linuxProgram{b}}
}

// processEnds are the ends of Linux processes, from their wait statuses.
func processEnds(ends []linux.ProcessEnd) []ProcessEnd {
	var out []ProcessEnd
	for _, e := range ends {
		out = append(out, ProcessEnd{PID: e.PID, Code: uint8(e.Status >> 8), Signal: int(e.Status & 0x7f)})
	}
	return out
}

// kitPID is a kit guest's one process, as gdb sees it.
const kitPID = 1

// kitProgram is a kit guest stopped in the replayer's KitBreak: one
// process, one image.
type kitProgram struct{ *replayer.KitBreak }

// kitTrap is b as the session sees it.
func kitTrap(b *replayer.KitBreak) *Trap {
	return &Trap{TID: b.TID, PID: kitPID, Regs: b.Regs, Start: b.Start, Stepped: b.Stepped, Resumed: b.Resumed,
		Interrupted: b.Interrupted, Since: b.Since, Kit: true, Program: kitProgram{b}}
}

var errNoKitProcess = errors.New("debugger: a kit guest is one process, 1")

func (p kitProgram) Threads() []ThreadInfo {
	var out []ThreadInfo
	for _, t := range p.KitBreak.Threads() {
		out = append(out, ThreadInfo{TID: t.TID, PID: kitPID})
	}
	return out
}

func (p kitProgram) State(tid int) (ThreadState, bool, error) {
	regs, xsave, ok, err := p.KitBreak.State(tid)
	return ThreadState{Regs: regs, XSave: xsave, OrigRAX: ^uint64(0)}, ok, err
}

func (p kitProgram) ReadMemory(pid int, va uint64, b []byte) error {
	if pid != kitPID {
		return errNoKitProcess
	}
	return p.KitBreak.ReadMemory(va, b)
}

func (p kitProgram) ImageOf(pid int) (uint64, bool) { return 0, pid == kitPID }

func (p kitProgram) SetBreakpoint(pid int, image, va uint64) error {
	if pid != kitPID || image != 0 {
		return errNoKitProcess
	}
	return p.KitBreak.SetBreakpoint(va)
}

func (p kitProgram) ClearBreakpoint(pid int, image, va uint64) error {
	if pid != kitPID || image != 0 {
		return nil
	}
	return p.KitBreak.ClearBreakpoint(va)
}

// A kit guest has no signals, emulated instructions, auxiliary vector,
// executable path (gdb reads the image's file) or /proc.
func (kitProgram) SignalEntry(int) (exit, handler, from uint64, ok bool) { return 0, 0, 0, false }
func (kitProgram) Emulated(int) (exit, at uint64, ok bool)               { return 0, 0, false }
func (kitProgram) Auxv(int) ([]byte, error)                              { return nil, nil }
func (kitProgram) Exe(int) string                                        { return "" }
func (kitProgram) ProcFile(int, string) ([]byte, bool)                   { return nil, false }
func (kitProgram) MappedFile(int, string) ([]byte, bool)                 { return nil, false }

func (p kitProgram) Birth(tid int) (uint64, bool) { return p.KitBreak.Birth(tid), true }
