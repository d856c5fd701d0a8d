// Package vmm assembles a reprise machine from its parts — KVM (package
// kvm), guest RAM (memory), long-mode tables (x86) and device models
// (devices) — boots a guest image on it and runs its vCPU loop.
package vmm

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// Machine is one VM with a single vCPU, booted from a guest image.
type Machine struct {
	cfg     Config
	sys     *kvm.System
	vm      *kvm.VM
	cpu     *kvm.VCPU
	ram     *memory.RAM
	board   // the devices
	counter BranchCounter
	hook    [2]uint64       // [start, end) of the branch-counter hook (CounterHook)
	reg     registerCounter // r15's placement (CounterRegister)
	console *consoleTail
	host    hostClock // zero without Config.Host
	// MSRFiltered is false on hosts where guest MSR accesses cannot be
	// routed to the VMM (they then go to KVM's own handling).
	MSRFiltered bool

	eng      Engine
	kernel   Kernel // nil: the image's own
	exits    uint64 // guest-initiated exits so far: Position.Exit
	lastStop Stop   // where the vCPU loop last stopped
	// lastExit is kvm_run's exit reason and port after the loop's last
	// KVM_RUN: what the engine checks events against. Kept apart from
	// kvm_run, which a Settle or a restore rewrites.
	lastExit exitInfo
	cpuid    []kvm.CPUIDEntry
	// hostCPUID is the host KVM's supported table, once asked (HostCPUID).
	hostCPUID []kvm.CPUIDEntry

	start     time.Time
	paused    time.Duration // the run's clock stood still this long (Paused)
	wake      chan struct{} // kicks a vCPU waiting in HLT
	tid       atomic.Int32  // OS thread of the vCPU loop, 0 when not running
	stopping  atomic.Bool
	inGuest   atomic.Bool // the vCPU thread is inside KVM_RUN
	kicksSent atomic.Uint64
	stats     Stats
	exitedAt  time.Duration            // on the host's clock since start: the loop's last KVM_RUN returned (0: none yet)
	marks     map[uint64]time.Duration // latest HC_MARK of each id (MaxMarkIDs)
	ticks     uint64
	yield     schedYield
	settled   bool // Settle ran since the last KVM_RUN of the loop
	// exitRegs are the registers as the last exit left them, kept by the
	// first Settle after it (which may complete the exit's instruction):
	// what EventDigest sums while settled. nil: none kept.
	exitRegs *kvm.Regs
	// companion runs beside the vCPU during Run (SetCompanion), beside
	// is its side while it does; exitMu is held by the vCPU loop but
	// across KVM_RUN, so that the companion serves the guest only while
	// the loop is not serving it itself (Beside.Hold).
	companion Companion
	beside    *Beside
	exitMu    sync.Mutex
	// besideRegs are the registers of the exit a companion serves
	// (ServeBeside), while it does: what EventDigest sums.
	besideRegs *kvm.Regs
}

// CPUID is the table the guest sees (a recording stores it).
func (m *Machine) CPUID() []kvm.CPUIDEntry { return m.cpuid }

// HostCPUID is the table this host's KVM can present, which a replay's
// recorded one may exceed: asked of KVM once (an ioctl of a fraction of a
// millisecond, which a live run's start-up would pay twice).
func (m *Machine) HostCPUID() ([]kvm.CPUIDEntry, error) {
	if m.hostCPUID == nil {
		host, err := m.sys.SupportedCPUID()
		if err != nil {
			return nil, err
		}
		m.hostCPUID = host
	}
	return m.hostCPUID, nil
}

// SetBranchTarget writes the software branch counter's target: the guest
// exits when its count of CPL3 code reaches it (^0: never).
func (m *Machine) SetBranchTarget(target uint64) error {
	return m.ram.PutUint64(abi.SWBCTargetOff, target)
}

// BranchCount reads the guest's software branch counter.
func (m *Machine) BranchCount() (uint64, error) { return m.ram.Uint64(abi.SWBCCountOff) }

// RAM is the guest's memory.
func (m *Machine) RAM() *memory.RAM { return m.ram }

// Image is the guest image the machine booted.
func (m *Machine) Image() *elffile.Image { return m.cfg.Image }

// DirtyPages fetches and clears the dirty-page bitmap (Config.TrackDirty):
// bit n of word n/64 is the 4 KiB page at n*4096.
func (m *Machine) DirtyPages() ([]uint64, error) {
	if !m.cfg.TrackDirty {
		return nil, errors.New("vmm: dirty tracking is off (Config.TrackDirty)")
	}
	bm := make([]uint64, (m.ram.Size()/4096+63)/64)
	return bm, m.vm.DirtyLog(0, bm)
}

// Close releases the vCPU, the VM, RAM and /dev/kvm.
func (m *Machine) Close() error {
	if m.timer != nil {
		m.timer.Stop()
	}
	if m.disk != nil {
		m.disk.Close()
	}
	var errs []error
	if m.net != nil {
		errs = append(errs, m.net.Close())
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
	}
	if m.cpu != nil {
		errs = append(errs, m.cpu.Close())
	}
	if m.vm != nil {
		errs = append(errs, m.vm.Close())
	}
	if m.ram != nil {
		errs = append(errs, m.ram.Close())
	}
	if m.sys != nil {
		errs = append(errs, m.sys.Close())
	}
	return errors.Join(errs...)
}

// GuestMemory reads guest-virtual memory (through the guest's page tables).
type GuestMemory interface {
	ReadVirt(gva uint64, b []byte) error
}

// ReadVirt reads guest-virtual memory through the guest's page tables, with
// every address checked: probes read their arguments with it.
func (m *Machine) ReadVirt(gva uint64, b []byte) error {
	cr3 := m.cpu.SyncedSregs().CR3
	for len(b) > 0 {
		mp, err := x86.Walk(m.ram, cr3, gva)
		if err != nil {
			return err
		}
		n := min(uint64(len(b)), 4096-gva%4096) // stay within the page
		if err := m.ram.Read(mp.GPA, b[:n]); err != nil {
			return err
		}
		b, gva = b[n:], gva+n
	}
	return nil
}
