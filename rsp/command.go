package rsp

// Command is one packet gdb sent, parsed. The set is closed: Parse
// returns one of this file's types, and Unknown for anything else.
type Command interface {
	command()
}

// Signal is a signal number in gdb's own numbering (GDB_SIGNAL_*), which
// matches Linux's for the classic signals.
type Signal uint8

// The signals a stop reply names most.
const (
	SigInt  Signal = 2 // stopped by an interrupt (0x03)
	SigTrap Signal = 5 // stopped by a breakpoint, watchpoint or step
)

// linuxSignals are gdb's numbers of Linux's x86-64 signals 1 to 31
// (gdb/signals.def), where they differ from the classic ones.
var linuxSignals = [32]Signal{
	1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 10, 8: 8, 9: 9, 10: 30, 11: 11, 12: 31, 13: 13, 14: 14, 15: 15,
	16: 143, // SIGSTKFLT: GDB_SIGNAL_UNKNOWN
	17: 20, 18: 19, 19: 17, 20: 18, 21: 21, 22: 22, 23: 16, 24: 24, 25: 25, 26: 26, 27: 27, 28: 28, 29: 23, 30: 32, 31: 12,
}

// LinuxSignal is Linux's signal n in gdb's numbering, real-time ones
// (32 to 64) included; any other is GDB_SIGNAL_UNKNOWN.
func LinuxSignal(n int) Signal {
	switch {
	case n > 0 && n < len(linuxSignals):
		return linuxSignals[n]
	case n == 32:
		return 77 // GDB_SIGNAL_REALTIME_32
	case n >= 33 && n <= 63:
		return Signal(45 + n - 33) // GDB_SIGNAL_REALTIME_33..63
	case n == 64:
		return 78 // GDB_SIGNAL_REALTIME_64
	}
	return 143
}

// BreakKind is the type of a Z or z packet.
type BreakKind uint8

// Breakpoint and watchpoint kinds, in the packet's numbering.
const (
	BreakSoftware BreakKind = 0
	BreakHardware BreakKind = 1
	WatchWrite    BreakKind = 2
	WatchRead     BreakKind = 3
	WatchAccess   BreakKind = 4
)

// Connection setup.
type (
	// QSupported is qSupported[:feature;...]: gdb's features, each as sent
	// ("multiprocess+", "xmlRegisters=i386"). The reply is Supported.
	QSupported struct{ Features []string }
	// StartNoAckMode is QStartNoAckMode. After answering OK, SetNoAck.
	StartNoAckMode struct{}
	// MustReplyEmpty is vMustReplyEmpty: the stub answers "", as to any
	// packet it does not know.
	MustReplyEmpty struct{}
	// QueryAttached is qAttached[:pid]; PID is Any when absent.
	QueryAttached struct{ PID int }
	// QueryOffsets is qOffsets.
	QueryOffsets struct{}
	// QueryTStatus is qTStatus (is a trace experiment running).
	QueryTStatus struct{}
	// QuerySymbol is qSymbol::, gdb offering to look up symbols.
	QuerySymbol struct{}
	// Monitor is qRcmd,<hex>: a "monitor" command, decoded.
	Monitor struct{ Command string }
	// XferRead is qXfer:<object>:read:<annex>:<offset>,<length>: a part of
	// a named document (features, libraries-svr4, threads, exec-file,
	// auxv, ...). Length is clamped to MaxPacket; the reply is XferChunk.
	XferRead struct {
		Object, Annex  string
		Offset, Length uint64
	}
)

// Threads.
type (
	// QueryCurrentThread is qC.
	QueryCurrentThread struct{}
	// ThreadInfoFirst is qfThreadInfo, ThreadInfoNext qsThreadInfo.
	ThreadInfoFirst struct{}
	ThreadInfoNext  struct{}
	// ThreadExtraInfo is qThreadExtraInfo,<thread>.
	ThreadExtraInfo struct{ Thread ThreadID }
	// ThreadAlive is T<thread>.
	ThreadAlive struct{ Thread ThreadID }
	// SetThread is H<op><thread>: the thread later 'g' (register and
	// memory) or 'c' (resume) packets act on.
	SetThread struct {
		Op     byte // 'g' or 'c'
		Thread ThreadID
	}
)

// Registers and memory.
type (
	// ReadRegisters is g, WriteRegisters G<hex>: all registers, in the
	// target description's order.
	ReadRegisters  struct{}
	WriteRegisters struct{ Data []byte }
	// ReadRegister is p<reg>, WriteRegister P<reg>=<hex>.
	ReadRegister  struct{ Reg int }
	WriteRegister struct {
		Reg   int
		Value []byte
	}
	// ReadMemory is m<addr>,<length>. Length is clamped to MaxPacket/2,
	// the most a hex reply carries; gdb reads the rest with another m.
	ReadMemory struct{ Addr, Length uint64 }
	// WriteMemory is M<addr>,<length>:<hex> or X<addr>,<length>:<binary>.
	// len(Data) is the length; gdb probes for X with an empty one.
	WriteMemory struct {
		Addr uint64
		Data []byte
	}
	// InsertBreak is Z<kind>,<addr>,<size>, RemoveBreak z...; Size is the
	// watched length, or the breakpoint instruction's (1 on x86). Any
	// ;cond or ;cmds suffix is accepted and ignored.
	InsertBreak struct {
		Kind BreakKind
		Addr uint64
		Size int
	}
	RemoveBreak struct {
		Kind BreakKind
		Addr uint64
		Size int
	}
)

// Execution.
type (
	// StopReason is ?: why the target last stopped.
	StopReason struct{}
	// Continue is c[addr], Step s[addr]: resume the Hc thread, at Addr if
	// set.
	Continue struct{ Addr *uint64 }
	Step     struct{ Addr *uint64 }
	// ContinueWithSignal is C<sig>[;addr], StepWithSignal S<sig>[;addr].
	ContinueWithSignal struct {
		Signal Signal
		Addr   *uint64
	}
	StepWithSignal struct {
		Signal Signal
		Addr   *uint64
	}
	// CatchSyscalls is QCatchSyscalls:1[;<sysno>]... (gdb's catch
	// syscall): stop at the entry and return of the calls numbered, of
	// every call if Calls is empty; or QCatchSyscalls:0, Enable false:
	// none.
	CatchSyscalls struct {
		Enable bool
		Calls  []uint64
	}
	// ReverseContinue is bc, ReverseStep bs: run backwards.
	ReverseContinue struct{}
	ReverseStep     struct{}
	// VContQuery is vCont?: which vCont actions the stub supports.
	VContQuery struct{}
	// VCont is vCont;<action>[:thread];...: for each thread, the first
	// action naming it applies.
	VCont struct{ Actions []VContAction }
	// Kill is k, or vKill;<pid>; PID is Any for k.
	Kill struct{ PID int }
	// Detach is D, or D;<pid>; PID is Any for D.
	Detach struct{ PID int }
)

// VContAction is one action of a vCont packet.
type VContAction struct {
	// Kind is 'c' continue, 's' step, 'C' and 'S' the same with Signal,
	// 't' stop, or 'r' step while the pc is in [RangeStart, RangeEnd).
	Kind                 byte
	Signal               Signal
	Thread               ThreadID // AllThreads when the action names none
	RangeStart, RangeEnd uint64
}

// Unknown is any packet Parse does not know: the stub answers "", which
// tells gdb the packet is not supported.
type Unknown struct{ Payload string }

func (QSupported) command()         {}
func (StartNoAckMode) command()     {}
func (MustReplyEmpty) command()     {}
func (QueryAttached) command()      {}
func (QueryOffsets) command()       {}
func (QueryTStatus) command()       {}
func (QuerySymbol) command()        {}
func (Monitor) command()            {}
func (XferRead) command()           {}
func (QueryCurrentThread) command() {}
func (ThreadInfoFirst) command()    {}
func (ThreadInfoNext) command()     {}
func (ThreadExtraInfo) command()    {}
func (ThreadAlive) command()        {}
func (SetThread) command()          {}
func (ReadRegisters) command()      {}
func (WriteRegisters) command()     {}
func (ReadRegister) command()       {}
func (WriteRegister) command()      {}
func (ReadMemory) command()         {}
func (WriteMemory) command()        {}
func (InsertBreak) command()        {}
func (RemoveBreak) command()        {}
func (StopReason) command()         {}
func (Continue) command()           {}
func (Step) command()               {}
func (ContinueWithSignal) command() {}
func (StepWithSignal) command()     {}
func (ReverseContinue) command()    {}
func (ReverseStep) command()        {}
func (VContQuery) command()         {}
func (VCont) command()              {}
func (Kill) command()               {}
func (Detach) command()             {}
func (CatchSyscalls) command()      {}
func (Unknown) command()            {}
