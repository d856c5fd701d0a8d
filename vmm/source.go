package vmm

import (
	"hash/fnv"
	"time"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
)

// Mode says where a machine's nondeterministic inputs come from
// (DESIGN.md §3). The machine and its devices are the same in every mode;
// only the source of inputs changes.
type Mode int

const (
	// Live takes inputs from the host and injects interrupts as soon as
	// the guest can take them. Nothing is logged.
	Live Mode = iota
	// Record takes inputs from the host, places every asynchronous event
	// at a position that can be found again, and logs everything to
	// Config.Log.
	Record
	// Replay takes every input from Config.Script, a recorded tape.
	Replay
)

func (m Mode) String() string { return [...]string{"live", "record", "replay"}[m] }

// EventLog receives a recording's events in order.
type EventLog interface {
	Append(*tape.Event) error
}

// EventScript supplies a replay's events in order. Peek and Next return
// io.EOF after the last event, or the tape's damage error.
type EventScript interface {
	Peek() (*tape.Event, error)
	Next() (*tape.Event, error)
}

// stopKind says where the vCPU loop stopped before its next entry; it
// decides which injections are deterministic there.
type stopKind int

const (
	stopStart     stopKind = iota // before the first entry
	stopGuestExit                 // after an exit the guest caused (counted in Position.Exit)
	stopBranch                    // at the software branch counter's target
	stopWindow                    // at an interrupt window KVM opened on request
	stopKick                      // after EINTR: an arbitrary, unrepeatable point
	stopProbe                     // at a probe hit (replay): the VMM's, not the guest's
)

// source decides the machine's nondeterministic inputs. liveSource serves
// Live and Record; tapeSource serves Replay.
type source interface {
	// beforeEntry runs before every KVM_RUN: it injects interrupts and
	// arms the positions of coming events.
	beforeEntry(stop stopKind) error
	// portIn sees the value a device produced for an IN and may replace it.
	portIn(port uint16, data []byte) error
	// clock returns the guest time for an exact time read.
	clock() (time.Duration, error)
	// netTX handles a frame the guest sent.
	netTX(frame []byte) error
	// halt returns once the guest, idle in HLT, has an interrupt to take.
	halt() error
	// finish ends the run: end says how; the returned error replaces the
	// run's (a replay turns a mismatch into a divergence).
	finish(end *tape.End, runErr error) error
}

// tapePosition is where the guest is now, as a tape position.
func (m *Machine) tapePosition() tape.Position {
	p := m.position()
	return tape.Position{Exit: p.Exit, Branch: p.Branch}
}

// regsDigest summarises the guest's general registers at an event, so
// replay notices a guest that reached the same position in another state.
func regsDigest(r *kvm.Regs) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, v := range [...]uint64{
		r.RAX, r.RBX, r.RCX, r.RDX, r.RSI, r.RDI, r.RSP, r.RBP,
		r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15, r.RIP, r.RFLAGS,
	} {
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

// event builds an event at the current position with the register digest
// and the exit the guest is stopped at.
func (m *Machine) event(kind tape.Kind, where tape.Where) *tape.Event {
	return &tape.Event{
		Kind:       kind,
		Pos:        m.tapePosition(),
		Where:      where,
		HostTime:   m.now(),
		ExitReason: uint8(m.cpu.ExitReason()),
		Port:       m.exitPort(),
		Digest:     regsDigest(m.cpu.SyncedRegs()),
	}
}

// exitPort is the port of the current exit if it is port I/O, else 0.
func (m *Machine) exitPort() uint16 {
	if m.cpu.ExitReason() != kvm.ExitIO {
		return 0
	}
	return m.cpu.IOExit().Port
}
