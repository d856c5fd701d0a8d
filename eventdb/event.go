package eventdb

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is what an event is. Its number is part of the key layout (stable).
type Kind uint8

// Event kinds. The numbers are stable.
const (
	KindProbeEntry   Kind = 1 // a probe's entry hit, with arguments
	KindProbeReturn  Kind = 2 // a return probe's hit, with the return value(s)
	KindSample       Kind = 3 // RIP and call stack of the current thread; Args [cost (SampleCost), SampleSystem or 0, then a Linux program's ObjectRef of Addr and of each Stack entry], the parts that say nothing left out (SampleArgs)
	KindSwitch       Kind = 4 // guest context switch: Thread stops, Addr starts
	KindThreadCreate Kind = 5 // guest thread created (Args: the kernel's payload)
	KindThreadExit   Kind = 6 // guest thread exited
	KindUser         Kind = 7 // explicit guest event: Addr its kind, Args its payload

	// The recording host's view (package hostview), copied from the tape:
	// Time is the record time, Pos is zero except where noted, and each
	// thread's events arrive in time order, so Seq orders them.
	KindVCPURun     Kind = 8  // one stay in the guest: Thread the vCPU, Pos.Exit the exits counted after it, Addr the exit reason (hostview.ExitInterrupted: a signal), Args [ns in the guest]
	KindVCPUIdle    Kind = 9  // the vCPU waiting for an interrupt after HLT: Thread the vCPU, Pos.Exit, Args [ns]
	KindHypervisor  Kind = 10 // a hypervisor event: Thread the vCPU, Addr a Hypervisor* code, Args [value]
	KindHostSwitch  Kind = 11 // host sched_switch: Thread the host CPU, Addr the next host thread, Args [previous host thread, how it left (hostview.State)]
	KindHostWakeup  Kind = 12 // a host thread made runnable: Thread the host thread, Args [host CPU]
	KindHostMigrate Kind = 13 // a host thread moved: Thread the host thread, Args [from CPU, to CPU]

	// A Linux program's runs.
	KindMapping Kind = 14 // a file mapped: Thread the process id, Addr its start, Args [end, file offset, executable (1) or not (0), its index in Symbols.Mappings]
	KindConn    Kind = 15 // a message through the door (published ports, egress): Thread the connection, Addr what it did (Conn*) plus ConnSent if the program sent it, Args [bytes, stream offset]

	kindLast = KindConn
)

// SampleCost is how many units of a sample's cost (its Args[0]) make a
// cycle. A sample taken every N counts of the software branch counter
// carries the estimated cycles it stands for (N times those from its
// count to the next: a count may stand for one instruction or a
// thousand), in quarter cycles; a timed sample carries none.
const SampleCost = 4

// SampleSystem marks a timed sample taken while the VMM served the
// program (Args[1]): its system calls and faults, perf's kernel time.
const SampleSystem = 1

// SampleArgs are a sample's Args: its cost (0: a timed sample), whether
// it was taken in the VMM, and the objects its addresses were in (nil:
// not known), as few as say all that.
func SampleArgs(cost uint64, system bool, objects []ObjectRef) []uint64 {
	var flags uint64
	if system {
		flags = SampleSystem
	}
	switch {
	case len(objects) > 0:
		return append([]uint64{cost, flags}, objects...)
	case system:
		return []uint64{cost, flags}
	case cost > 0:
		return []uint64{cost}
	}
	return nil
}

// SampleObjects returns the objects (refs into Symbols.Objects) a Linux
// program's sample's addresses were in: Addr's, then each Stack entry's;
// nil when the sample does not say.
func (e *Event) SampleObjects() []ObjectRef {
	if e.Kind != KindSample || len(e.Args) <= 2 {
		return nil
	}
	return e.Args[2:]
}

// KindHypervisor codes (Event.Addr) and what Args[0] holds.
const (
	HypervisorVCPU      = 1 // the vCPU thread started: host thread id
	HypervisorIRQ       = 2 // an interrupt line asserted: the line
	HypervisorInject    = 3 // an interrupt delivered, its line deasserted: the vector
	HypervisorTimerSet  = 4 // the timer programmed: its period in ns (0: stopped)
	HypervisorTimerFire = 5 // the timer expired
)

var kindNames = [...]string{
	KindProbeEntry:   "probe-entry",
	KindProbeReturn:  "probe-return",
	KindSample:       "sample",
	KindSwitch:       "switch",
	KindThreadCreate: "thread-create",
	KindThreadExit:   "thread-exit",
	KindUser:         "user",
	KindVCPURun:      "vcpu-run",
	KindVCPUIdle:     "vcpu-idle",
	KindHypervisor:   "hypervisor",
	KindHostSwitch:   "host-switch",
	KindHostWakeup:   "host-wakeup",
	KindHostMigrate:  "host-migrate",
	KindMapping:      "mapping",
	KindConn:         "conn",
}

// What a KindConn event's message did (its Addr), plus ConnSent when
// the program sent it.
const (
	ConnOther = 0 // room given back either way
	ConnOpen  = 1 // the connection opened (a client's, or the program's connect and its answer)
	ConnData  = 2 // bytes (Args [bytes, offset])
	ConnEnd   = 3 // an end: a shutdown, a close or a reset
	ConnSent  = 256
)

// Kinds returns every kind this package knows, in key order.
func Kinds() []Kind {
	ks := make([]Kind, 0, kindLast)
	for k := Kind(1); k <= kindLast; k++ {
		ks = append(ks, k)
	}
	return ks
}

// Valid reports whether k is a kind this package knows.
func (k Kind) Valid() bool { return k >= 1 && k <= kindLast }

// String returns the kind's name as Export writes it, e.g. "probe-entry";
// an unknown kind is "kind(N)".
func (k Kind) String() string {
	if k.Valid() {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, error) {
	for k := Kind(1); k <= kindLast; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	if num, ok := strings.CutPrefix(s, "kind("); ok {
		if num, ok = strings.CutSuffix(num, ")"); ok {
			if n, err := strconv.ParseUint(num, 10, 8); err == nil && n != 0 && Kind(n).String() == s {
				return Kind(n), nil
			}
		}
	}
	return 0, fmt.Errorf("eventdb: unknown event kind %q", s)
}

// Position is an execution position: the ordinal of the VM exit and the
// branch count within it (docs/architecture.md, "Position sources"). It
// orders the events of one thread.
type Position struct{ Exit, Branch uint64 }

// Compare returns -1, 0 or +1 as p is before, at or after q.
func (p Position) Compare(q Position) int {
	switch {
	case p.Exit != q.Exit:
		if p.Exit < q.Exit {
			return -1
		}
		return 1
	case p.Branch != q.Branch:
		if p.Branch < q.Branch {
			return -1
		}
		return 1
	}
	return 0
}

func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Exit, p.Branch) }

// Event is one event of a run. Kind, Thread, Pos and Seq are its key;
// the rest is its value.
type Event struct {
	Kind   Kind
	Thread uint32        // guest thread id (0: idle / kernel)
	Pos    Position      // execution position
	Seq    uint32        // arrival ordinal in the run; set by the DB, ignored by Add
	Time   time.Duration // record-time host time since the recording started
	Probe  uint32        // probe id within the run (probe events), 0 otherwise
	Addr   uint64        // probe: address hit (a return probe's: the return address); sample: RIP; switch: next thread id; user: the event's kind
	Args   []uint64      // probe arguments (named in the run's probe table), or user-event payload
	Stack  []uint64      // sample: return addresses, innermost first
}

// Clone returns a copy of e that shares no memory with it: events from an
// Iter are only valid until its next Next.
func (e *Event) Clone() *Event {
	c := *e
	c.Args = slices.Clone(e.Args)
	c.Stack = slices.Clone(e.Stack)
	return &c
}

func (e *Event) String() string {
	return fmt.Sprintf("%v thread %d at %v seq %d", e.Kind, e.Thread, e.Pos, e.Seq)
}
