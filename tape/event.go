package tape

import (
	"fmt"
	"time"
)

// Kind is what an event records.
type Kind uint8

const (
	KindInterrupt Kind = 1 // an interrupt injected: Vector; Value = clock-page ns written with it (timer), else 0; Data = digest of a completion delivered with it (disk), ≤ 64 bytes
	KindPortIn    Kind = 2 // the value of a port read (IN): Port, Data (1, 2 or 4 bytes)
	KindTime      Kind = 3 // an exact time read: Value = ns
	KindEntropy   Kind = 4 // random bytes given to the guest: Data (1 to 64 bytes)
	KindEnd       Kind = 5 // the end of the recording: End
	KindNetRX     Kind = 6 // a frame delivered to the guest with the interrupt just before it: Data (the frame); Value = host time it arrived (ns since the recording started)
	KindNetTX     Kind = 7 // a frame the guest sent at this exit: Data (the frame); Value = host time it was taken
	// KindFile (8, since version 5), an observation of the host's files,
	// is with its payload in filefact.go.
)

var kindNames = [...]string{KindInterrupt: "interrupt", KindPortIn: "port-in", KindTime: "time", KindEntropy: "entropy", KindEnd: "end",
	KindNetRX: "net-rx", KindNetTX: "net-tx", KindFile: "file"}

func (k Kind) String() string {
	if k.known() {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func (k Kind) known() bool { return k >= KindInterrupt && k <= KindFile }

// since is the format version that added k: an older tape holding it is
// damaged, as no writer of that version wrote it.
func (k Kind) since() int {
	switch {
	case k == KindFile:
		return 5
	case k.isFrame():
		return 2
	}
	return 1
}

// isFrame reports whether k carries a network frame (a long Data).
func (k Kind) isFrame() bool { return k == KindNetRX || k == KindNetTX }

// MaxFrame is the largest frame a tape holds.
const MaxFrame = 65535

// Where an asynchronous event is placed relative to its Position.
type Where uint8

const (
	AtExit   Where = 0 // at the guest-initiated exit with ordinal Pos.Exit itself
	AtBranch Where = 1 // at the branch-counter target Pos.Branch, after exit Pos.Exit
	AtWindow Where = 2 // at the first interrupt window after exit Pos.Exit
)

// Position is a point in the guest's execution: the number of guest-initiated
// exits so far and the branch counter there. RIP and RCX pin it down exactly
// for the pmu source (0 otherwise).
type Position struct{ Exit, Branch, RIP, RCX uint64 }

// Event is one nondeterministic input, where it happened, and what the
// guest looked like there (for divergence checks). Every kind carries the
// common fields (Pos, Where, HostTime, ExitReason, Port, Digest); the others only
// where Kind says so, and Append rejects an event that sets a field its
// kind does not carry, so what a reader returns is exactly what was appended.
type Event struct {
	Kind       Kind
	Pos        Position
	Where      Where
	HostTime   time.Duration // host monotonic time since the recording started
	ExitReason uint8         // KVM exit reason at this point (for divergence checks)
	Port       uint16        // port of that exit (IO) or of KindPortIn
	Digest     uint64        // digest of the guest registers at this point
	Vector     uint8         // KindInterrupt only
	Value      uint64        // KindInterrupt and KindTime only
	Data       []byte        // KindPortIn (1, 2 or 4 bytes), KindEntropy (1 to 64), KindInterrupt (0 to 64), KindNetRX/TX (1 to MaxFrame) only
	End        *End          // KindEnd only, and required there
	Fact       *FileFact     // KindFile only, and required there
}

// End says how a recording ended. It is the last event of a finished tape:
// a tape without one was cut short.
type End struct {
	Reason       string   // EndExited, EndFault or EndInterrupted
	Status       uint32   // guest exit status ("exited")
	Fault        string   // fault report ("fault")
	RAMHash      [32]byte // SHA-256 of guest RAM at the end (of its nonzero pages since version 9: HashesRAMPages)
	ConsoleHash  [32]byte // SHA-256 of all console output
	ConsoleBytes uint64
}

// Summary says in one phrase how the recording ended: "exited, status 3",
// "fault: <report>" or the reason itself.
func (x *End) Summary() string {
	switch x.Reason {
	case EndExited:
		return fmt.Sprintf("exited, status %d", x.Status)
	case EndFault:
		return "fault: " + x.Fault
	}
	return x.Reason
}

// End reasons.
const (
	EndExited      = "exited"      // the guest exited with Status
	EndFault       = "fault"       // the guest faulted: Fault says how
	EndInterrupted = "interrupted" // the recording was stopped from outside
)

// MaxEntropy is the most random bytes one entropy event holds.
const MaxEntropy = 64

// Limits on what an event may hold.
const (
	maxReasonBytes = 64
	maxFaultBytes  = 64 << 10
)

// check returns why e cannot be on a tape, or "". Append and the reader
// apply the same rules.
func (e *Event) check() string {
	if !e.Kind.known() {
		return fmt.Sprintf("unknown event kind %d", uint8(e.Kind))
	}
	if e.Where > AtWindow {
		return fmt.Sprintf("invalid placement (Where) %d", e.Where)
	}
	k := e.Kind
	switch n := len(e.Data); {
	case k == KindPortIn && n != 1 && n != 2 && n != 4:
		return fmt.Sprintf("port-in event with %d data bytes (want 1, 2 or 4)", n)
	case k == KindEntropy && (n < 1 || n > MaxEntropy):
		return fmt.Sprintf("entropy event with %d data bytes (want 1 to %d)", n, MaxEntropy)
	case k == KindInterrupt && n > MaxEntropy:
		return fmt.Sprintf("interrupt event with %d data bytes (want at most %d)", n, MaxEntropy)
	case k.isFrame() && (n < 1 || n > MaxFrame):
		return fmt.Sprintf("%v event with a %d-byte frame (want 1 to %d)", k, n, MaxFrame)
	case k != KindPortIn && k != KindEntropy && k != KindInterrupt && !k.isFrame() && n != 0:
		return fmt.Sprintf("%v event with Data (only port-in, entropy, interrupt and frames carry it)", k)
	}
	if k != KindInterrupt && e.Vector != 0 {
		return fmt.Sprintf("%v event with a Vector (only interrupt carries it)", k)
	}
	if k != KindInterrupt && k != KindTime && !k.isFrame() && e.Value != 0 {
		return fmt.Sprintf("%v event with a Value (only interrupt, time and frames carry it)", k)
	}
	if k != KindFile && e.Fact != nil {
		return fmt.Sprintf("%v event with a Fact (only file carries one)", k)
	}
	if k == KindFile {
		if e.Fact == nil {
			return "file event without Fact"
		}
		if why := e.Fact.check(); why != "" {
			return "file event: " + why
		}
	}
	if k != KindEnd {
		if e.End != nil {
			return fmt.Sprintf("%v event with an End (only end carries it)", k)
		}
		return ""
	}
	switch {
	case e.End == nil:
		return "end event without End"
	case e.End.Reason == "" || len(e.End.Reason) > maxReasonBytes:
		return fmt.Sprintf("end reason of %d bytes (want 1 to %d)", len(e.End.Reason), maxReasonBytes)
	case len(e.End.Fault) > maxFaultBytes:
		return fmt.Sprintf("fault report of %d bytes (at most %d)", len(e.End.Fault), maxFaultBytes)
	}
	return ""
}
