package vmm

import (
	"errors"
	"time"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm/netback"
)

// Engine decides a machine's nondeterministic inputs
// (docs/architecture.md, "One machine, three engines"): where they come from
// and where in the guest's execution they are delivered. The machine and its
// devices are the same under every engine. Without one (Config.Engine nil)
// the machine runs live: inputs from the host, delivered as soon as the guest
// can take them, nothing kept. The recorder and the replayer bring their own.
//
// Every method but Attach runs on the vCPU thread, between KVM_RUNs.
type Engine interface {
	// Attach is called once, by New, with the machine built and the image
	// loaded: an engine that patches guest memory does it here.
	Attach(m *Machine) error
	// BeforeEntry runs before every KVM_RUN, where the vCPU stopped: it
	// injects interrupts and arms the positions of coming events.
	BeforeEntry(stop Stop) error
	// GuestExit runs at every guest-initiated exit before it is counted:
	// Position().Exit still counts the exits before it.
	GuestExit() error
	// PortIn sees the value a device produced for an IN and may replace it.
	PortIn(port uint16, data []byte) error
	// Clock returns the guest time for an exact time read.
	Clock() (time.Duration, error)
	// Entropy fills b with random bytes for the guest (a Kernel's
	// getrandom).
	Entropy(b []byte) error
	// NetTX handles a frame the guest sent.
	NetTX(frame []byte) error
	// Halt returns once the guest, idle in HLT, has an interrupt to take.
	Halt() error
	// Breakpoint handles an int3 the guest kernel forwarded, with the
	// trapped user registers (RIP past the int3). It returns where the
	// trapped code resumes, or ok false for an int3 that is not the
	// engine's (the guest's own: its kernel reports it).
	Breakpoint(regs *kvm.Regs) (resume uint64, ok bool, err error)
	// ProbeExit handles an out to abi.PortProbe, with the vCPU's
	// registers: RIP is at the 2-byte out, or past it when KVM emulated
	// the write. It returns where the code resumes, or ok false for an
	// out that is not the engine's (the guest's own, which does nothing).
	ProbeExit(regs *kvm.Regs) (resume uint64, ok bool, err error)
	// BeforeEnd puts back whatever the engine changed in guest memory that
	// the guest's own execution did not: the machine measures the end
	// state next.
	BeforeEnd() error
	// Finish ends the run: end says how the guest ended (nil: it reached
	// no defined end). The returned error replaces the run's.
	Finish(end *End, runErr error) error
}

// Stop is where the vCPU loop stopped before its next entry; it decides
// which injections are deterministic there.
type Stop int

const (
	StopStart     Stop = iota // before the first entry
	StopGuestExit             // after an exit the guest caused (counted in Position.Exit)
	StopBranch                // at the software branch counter's target
	StopWindow                // at an interrupt window KVM opened on request
	StopKick                  // after EINTR: an arbitrary, unrepeatable point
	StopProbe                 // at a probe hit: the engine's, not the guest's
)

var (
	// ErrStopped, from an engine, stops the run where it is, without a
	// defined end: a live run asked to stop, or a recording that found no
	// repeatable point in time.
	ErrStopped = errors.New("vmm: stopped")
	// ErrEndHere, from an engine, ends the run at a repeatable point
	// (End.Reason EndInterrupted): a recording stopped on request, or the
	// replay of one reaching that point.
	ErrEndHere = errors.New("vmm: the run ends here")
)

// End is how the guest's execution ended, with the hashes that make two
// ends comparable. A recording keeps it (tape.End has the same fields); a
// replay compares it.
type End struct {
	Reason       string   // EndExited, EndFault or EndInterrupted
	Status       uint32   // guest exit status (EndExited)
	Fault        string   // fault report (EndFault)
	RAMHash      [32]byte // SHA-256 of guest RAM at the end, as Config.RAMHashing says
	ConsoleHash  [32]byte // SHA-256 of all console output
	ConsoleBytes uint64
}

// End reasons: the words a tape stores.
const (
	EndExited      = "exited"
	EndFault       = "fault"
	EndInterrupted = "interrupted"
)

// Position is an execution position: guest-initiated exits so far and the
// software branch count (as on the tape).
type Position struct{ Exit, Branch uint64 }

// Delivery is what one interrupt delivered from the host carried: a
// recording logs it, a replay supplies it to Inject.
type Delivery struct {
	Vector uint8
	Clock  time.Duration   // the timer's: the guest's new time
	Frames []netback.Frame // the NIC's: the frames received, stamped on the host's clock (RunTime restates it)
	Digest []byte          // the completion's digest (disk, NIC)
}
