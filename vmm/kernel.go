package vmm

import (
	"errors"
	"io"
	"time"

	"github.com/reprise-vm/reprise/kvm"
)

// Kernel is a guest operating system the VMM plays itself, at the edge of
// the machine, the way gVisor's Sentry does: the guest runs only user
// code, and its system calls and traps exit to the VMM through stubs the
// kernel lays out (package linux: Linux programs). Without one
// (Config.Kernel nil) the guest image brings its own kernel, as the kit's
// does.
//
// A Kernel takes its nondeterministic inputs from the machine (Clock,
// Entropy), which asks the engine: the same kernel records and replays.
type Kernel interface {
	// Boot lays the guest out — memory, page tables, descriptor tables,
	// the vCPU's registers — once the machine has RAM, a vCPU and its
	// devices, before the engine attaches.
	Boot(m *Machine) error
	// Exit serves an OUT the guest made to one of the kernel's ports
	// (abi.PortSyscall, abi.PortTrap), with the registers at the exit
	// (Regs, SyncedSregs). It may switch the vCPU to another thread.
	Exit(port uint16) error
	// Interrupt takes an interrupt the engine delivered: the guest CPU
	// takes none itself. clock is the time a timer tick carries.
	Interrupt(vector uint8, clock time.Duration) error
	// HostTrap reports whether the OUT to port the guest just made is a
	// trap that is not the guest's own (a breakpoint or a single step, a
	// fault the host's stale translation caused): the engine's, like a
	// probe hit, not counted among the guest's exits.
	HostTrap(port uint16) bool
	// Runnable reports whether the guest has something to run. If not,
	// the machine idles at this exit until an interrupt changes that.
	Runnable() bool
}

// NetKernel is a Kernel with a network: the messages its published
// ports received, delivered with a NIC interrupt (vmm/door).
type NetKernel interface {
	Receive(msgs [][]byte) error
}

// ErrKernelBusy is a Kernel's state that cannot be saved at this stop
// but may be at a later one (a Linux program holding file locks): the
// checkpoint is taken at a later stop, as one with a disk request in
// flight is.
var ErrKernelBusy = errors.New("vmm: the kernel's state cannot be saved now")

// KernelState is a Kernel whose state a snapshot can hold (Snapshot,
// Restore): opaque bytes to the machine, read back by a Kernel made for the
// same guest, booted, after RAM and the vCPU are restored. The bytes come
// from a file: RestoreState checks them as it would a guest's input.
type KernelState interface {
	SaveState() ([]byte, error)
	RestoreState([]byte) error
}

// DropTranslations makes KVM forget every translation it derived from the
// guest's page tables, by taking guest RAM's memory slot away and giving
// it back. Where KVM shadows the guest's tables (PVM hosts) it learns of a
// change only from the guest's own writes to them; a Kernel that takes
// rights away from host-side (a fork's copy-on-write) calls this, so the
// guest runs on what the tables say — as a machine restored from a
// snapshot, which starts with no shadows, does.
func (m *Machine) DropTranslations() error {
	if err := m.vm.SetMemoryRegion(0, m.ramFlags(), 0, nil); err != nil {
		return err
	}
	return m.mapRAM()
}

// VCPU is the machine's vCPU, for a Kernel: it sets up and switches the
// vCPU's full state (special registers, MSRs, FPU).
func (m *Machine) VCPU() *kvm.VCPU { return m.cpu }

// Console is where the guest's console output goes (hashed for the end
// state, forwarded to Config.Console line by line).
func (m *Machine) Console() io.Writer { return m.console }

// Clock is the guest time for an exact time read, from the engine.
func (m *Machine) Clock() (time.Duration, error) { return m.eng.Clock() }

// Entropy fills b with random bytes, from the engine.
func (m *Machine) Entropy(b []byte) error { return m.eng.Entropy(b) }

// StartTimer runs the timer device at Config.TimerHz, as a guest write to
// its port would: a Kernel keeps time for its guest. A negative TimerHz
// leaves it stopped.
func (m *Machine) StartTimer() {
	if m.cfg.TimerHz > 0 {
		m.timer.SetPeriod(time.Second / time.Duration(m.cfg.TimerHz))
	}
}
