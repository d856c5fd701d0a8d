package vmm

import (
	"crypto/sha256"
	"encoding"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
)

// Snapshot is the machine stopped between two entries, all but its RAM
// (which the caller saves and restores page by page, Machine.RAM): the
// vCPU, the devices, the position and counters, the console's running
// hash. A machine built from the same configuration and restored from it
// goes on exactly as this one does (package checkpoint keeps them).
type Snapshot struct {
	Exits    uint64
	LastStop Stop
	LastExit exitInfo
	Stats    Stats
	Ticks    uint64
	VCPU     VCPUState
	Devices  DeviceState
	Console  ConsoleState
	// ExitRegs are the registers as the stop's exit left them, before the
	// snapshot's Settle completed its instruction: what an event at this
	// stop sums (Machine.EventDigest). Absent from older snapshots.
	ExitRegs *kvm.Regs `json:",omitempty"`
	// Kernel is a Kernel's own state (KernelState), opaque here.
	Kernel []byte `json:",omitempty"`
}

// VCPUState is the vCPU's architectural state.
type VCPUState struct {
	Regs  kvm.Regs
	Sregs kvm.Sregs
	FPU   kvm.FPU
	// Events are the pending exception, interrupt and NMI and the
	// interrupt shadow (KVM_GET_VCPU_EVENTS, the parts that matter here).
	Events VCPUEvents
	MSRs   map[uint32]uint64 // of snapshotMSRs, those the host has
	// XSave and XCRs are the XSAVE image (AVX included, which FPU lacks)
	// and XCR0, where the host has them (KVM_CAP_XSAVE, KVM_CAP_XCRS).
	XSave *kvm.XSave `json:",omitempty"`
	XCRs  *kvm.XCRs  `json:",omitempty"`
}

// VCPUEvents is what Snapshot keeps of kvm.VCPUEvents.
type VCPUEvents struct {
	ExceptionInjected, ExceptionNr, ExceptionHasErrorCode, ExceptionPending uint8
	ExceptionErrorCode                                                      uint32
	InterruptInjected, InterruptNr, InterruptSoft, InterruptShadow          uint8
	NMIInjected, NMIPending, NMIMasked                                      uint8
	Flags                                                                   uint32
}

// ConsoleState is the console's running hash and what it holds of the
// output so far (the partial line, the tail fault reports quote).
type ConsoleState struct {
	Hash  []byte // sha256's marshalled state
	Total uint64
	Line  []byte
	Tail  []string
}

// snapshotMSRs are the MSRs a VMM or a guest kernel sets and the guest's
// execution depends on: the system-call entry points and masks, the
// kernel GS base, PAT. (EFER, FS and GS bases are in the special
// registers.)
var snapshotMSRs = []uint32{0xC0000081, 0xC0000082, 0xC0000083, 0xC0000084, 0xC0000102, 0x277}

// Snapshot returns the machine's state at this stop. It must be called by
// the engine between two entries (BeforeEntry), with the disk idle. It
// first lets KVM complete what the last exit left pending (the result of
// an IN, say) with a KVM_RUN that enters nothing, so the registers are
// those the guest will resume with.
func (m *Machine) Snapshot() (*Snapshot, error) {
	if err := m.Settle(); err != nil {
		return nil, err
	}
	c := m.cpu
	s := &Snapshot{Exits: m.exits, LastStop: m.lastStop, LastExit: m.lastExit, Stats: m.stats, Ticks: m.ticks, ExitRegs: m.exitRegs}
	var err error
	if s.VCPU.Regs, err = c.Regs(); err != nil {
		return nil, err
	}
	if s.VCPU.Sregs, err = c.Sregs(); err != nil {
		return nil, err
	}
	if s.VCPU.FPU, err = c.FPU(); err != nil {
		return nil, err
	}
	if x, err := c.XSave(); err == nil {
		s.VCPU.XSave = &x
	}
	if x, err := c.XCRs(); err == nil {
		s.VCPU.XCRs = &x
	}
	ev, err := c.Events()
	if err != nil {
		return nil, err
	}
	s.VCPU.Events = eventsOf(ev)
	s.VCPU.MSRs = map[uint32]uint64{}
	for _, idx := range snapshotMSRs {
		if v, err := c.MSRs(idx); err == nil {
			s.VCPU.MSRs[idx] = v[0]
		}
	}
	dev, err := m.SaveDevices()
	if err != nil {
		return nil, err
	}
	s.Devices = *dev
	if s.Console, err = m.console.save(); err != nil {
		return nil, err
	}
	if m.kernel != nil {
		ks, ok := m.kernel.(KernelState)
		if !ok {
			return nil, fmt.Errorf("vmm: the guest's kernel cannot save its state")
		}
		if s.Kernel, err = ks.SaveState(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Restore puts the machine in the state s describes; its RAM must have
// been restored already. Call it from the engine's Attach, before the
// machine runs. The loop then resumes at s.LastStop, as the machine the
// snapshot was taken of went on from there.
func (m *Machine) Restore(s *Snapshot) error {
	c := m.cpu
	if err := c.SetSregs(s.VCPU.Sregs); err != nil {
		return fmt.Errorf("vmm: restore special registers: %w", err)
	}
	if err := c.SetRegs(s.VCPU.Regs); err != nil {
		return fmt.Errorf("vmm: restore registers: %w", err)
	}
	fpu := s.VCPU.FPU
	if err := c.SetFPU(&fpu); err != nil {
		return fmt.Errorf("vmm: restore FPU: %w", err)
	}
	if x := s.VCPU.XCRs; x != nil {
		if err := c.SetXCRs(x); err != nil {
			return fmt.Errorf("vmm: restore XCR0: %w", err)
		}
	}
	if x := s.VCPU.XSave; x != nil {
		if err := c.SetXSave(x); err != nil {
			return fmt.Errorf("vmm: restore the XSAVE state: %w", err)
		}
	}
	for idx, v := range s.VCPU.MSRs {
		if err := c.SetMSRs(kvm.MSREntry{Index: idx, Data: v}); err != nil {
			return fmt.Errorf("vmm: restore MSR %#x: %w", idx, err)
		}
	}
	if err := c.SetEvents(s.VCPU.Events.kvm()); err != nil {
		return fmt.Errorf("vmm: restore pending events: %w", err)
	}
	if err := m.restoreDevices(&s.Devices); err != nil {
		return err
	}
	if err := m.console.restore(s.Console); err != nil {
		return err
	}
	// The position first: the kernel's restore tells a debugger of each
	// thread (linux.Breakpoints.Resumed), at the checkpoint's position.
	m.exits, m.lastStop, m.lastExit, m.stats, m.ticks = s.Exits, s.LastStop, s.LastExit, s.Stats, s.Ticks
	if err := m.restoreKernel(s.Kernel); err != nil {
		return err
	}
	m.reg = registerCounter{} // r15 is placed again, for this run's targets, before the next entry
	// As Snapshot did: the exit fields of kvm_run (ready for injection,
	// IF) now describe this state, for the engine's first BeforeEntry.
	if err := m.Settle(); err != nil {
		return err
	}
	m.exitRegs = s.ExitRegs
	return nil
}

// restoreKernel gives the Kernel its state back: a snapshot of a machine
// with one has it, one of a machine without has none.
func (m *Machine) restoreKernel(state []byte) error {
	ks, ok := m.kernel.(KernelState)
	switch {
	case m.kernel == nil && len(state) > 0:
		return errors.New("vmm: the snapshot holds a kernel's state, and this machine runs none")
	case m.kernel == nil:
		return nil
	case !ok:
		return errors.New("vmm: the guest's kernel cannot restore its state")
	case len(state) == 0:
		return errors.New("vmm: the snapshot holds no state for the guest's kernel")
	}
	return ks.RestoreState(state)
}

// Settle runs KVM_RUN with immediate_exit set: KVM completes the I/O the
// last exit left pending (an IN's result, say), refreshes kvm_run and the
// synced registers, and returns without entering the guest. The
// registers are then those the guest resumes with, whichever replay asks.
// The registers as the exit left them are kept for EventDigest. Call it
// between two entries (an engine's BeforeEntry).
func (m *Machine) Settle() error {
	c := m.cpu
	if !m.settled {
		r := *c.SyncedRegs()
		m.exitRegs = &r
	}
	c.SetImmediateExit(true)
	err := c.Run()
	c.SetImmediateExit(false)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("vmm: settle the vCPU: %w", err)
	}
	m.settled = true // kvm_run still names the last exit: its I/O is done all the same
	return nil
}

func eventsOf(e kvm.VCPUEvents) VCPUEvents {
	return VCPUEvents{
		ExceptionInjected: e.Exception.Injected, ExceptionNr: e.Exception.Nr,
		ExceptionHasErrorCode: e.Exception.HasErrorCode, ExceptionPending: e.Exception.Pending,
		ExceptionErrorCode: e.Exception.ErrorCode,
		InterruptInjected:  e.Interrupt.Injected, InterruptNr: e.Interrupt.Nr, InterruptSoft: e.Interrupt.Soft,
		InterruptShadow: e.Interrupt.Shadow,
		NMIInjected:     e.NMI.Injected, NMIPending: e.NMI.Pending, NMIMasked: e.NMI.Masked,
		Flags: e.Flags,
	}
}

// The kvm_vcpu_events flags Restore may pass: which optional parts are
// valid (NMI pending, SIPI vector, interrupt shadow).
const eventFlagsKept = 0x1 | 0x2 | 0x4

func (e VCPUEvents) kvm() kvm.VCPUEvents {
	var k kvm.VCPUEvents
	k.Exception.Injected, k.Exception.Nr = e.ExceptionInjected, e.ExceptionNr
	k.Exception.HasErrorCode, k.Exception.Pending = e.ExceptionHasErrorCode, e.ExceptionPending
	k.Exception.ErrorCode = e.ExceptionErrorCode
	k.Interrupt.Injected, k.Interrupt.Nr = e.InterruptInjected, e.InterruptNr
	k.Interrupt.Soft, k.Interrupt.Shadow = e.InterruptSoft, e.InterruptShadow
	k.NMI.Injected, k.NMI.Pending, k.NMI.Masked = e.NMIInjected, e.NMIPending, e.NMIMasked
	k.Flags = e.Flags & eventFlagsKept
	return k
}

func (c *consoleTail) save() (ConsoleState, error) {
	h, err := c.sum.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return ConsoleState{}, fmt.Errorf("vmm: console hash: %w", err)
	}
	return ConsoleState{Hash: h, Total: c.total, Line: append([]byte(nil), c.line...), Tail: c.Tail()}, nil
}

// maxConsoleTailBytes bounds what a restored console tail may hold.
const maxConsoleTailBytes = 1 << 20

func (c *consoleTail) restore(s ConsoleState) error {
	n := len(s.Line)
	for _, l := range s.Tail {
		n += len(l)
	}
	if len(s.Tail) > consoleTailLines || n > maxConsoleTailBytes {
		return fmt.Errorf("vmm: console state of %d lines, %d bytes: too large", len(s.Tail), n)
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.Hash); err != nil {
		return fmt.Errorf("vmm: console hash: %w", err)
	}
	c.sum, c.total, c.line, c.tail = h, s.Total, append([]byte(nil), s.Line...), append([]string(nil), s.Tail...)
	return nil
}

// HashRAM is the SHA-256 of guest RAM as an end's hash takes it — with no
// branch-counter target nor register-counter placement, which every run
// sets where its own next stop is — leaving both as they were. What of
// RAM it takes in is the machine's Config.RAMHashing.
func (m *Machine) HashRAM() (sum [32]byte, err error) {
	h := sha256.New()
	err = m.withNeutralRAM(func() { m.ram.Hash(h, m.cfg.RAMHashing) })
	h.Sum(sum[:0])
	return sum, err
}

// RAMSum is the xxHash64 of guest RAM taken as HashRAM takes it: a check of
// RAM against the same RAM elsewhere (a checkpoint restored) that costs a
// tenth of SHA-256's time.
func (m *Machine) RAMSum() (sum uint64, err error) {
	h := xxhash.New()
	err = m.withNeutralRAM(func() { m.ram.Hash(h, m.cfg.RAMHashing) })
	return h.Sum64(), err
}

// withNeutralRAM calls f with RAM holding neither the branch-counter
// target nor the register-counter placement, and puts both back after.
func (m *Machine) withNeutralRAM(f func()) error {
	own := [...]struct{ off, neutral uint64 }{{abi.SWBCTargetOff, NoBranchTarget}, {abi.SWBCArmedOff, 0}}
	var saved [len(own)]uint64
	for i, o := range own {
		v, err := m.ram.Uint64(o.off)
		if err != nil {
			return err
		}
		saved[i] = v
		if err := m.ram.PutUint64(o.off, o.neutral); err != nil {
			return err
		}
	}
	f()
	for i, o := range own {
		if err := m.ram.PutUint64(o.off, saved[i]); err != nil {
			return err
		}
	}
	return nil
}

// TraceHead is how many records the guest kit kernel has written to its
// trace ring so far (0 for an image without one, or before it is set up).
func (m *Machine) TraceHead() uint64 {
	if m.cfg.Image == nil {
		return 0
	}
	s, ok := m.cfg.Image.Lookup(abi.TraceRingSymbol)
	if !ok {
		return 0
	}
	magic, err1 := m.ram.Uint64(s.Addr)
	head, err2 := m.ram.Uint64(s.Addr + abi.TraceHeadOff)
	if err1 != nil || err2 != nil || magic != abi.TraceMagic {
		return 0
	}
	return head
}
