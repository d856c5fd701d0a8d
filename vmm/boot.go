package vmm

import (
	"errors"
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// New creates the VM, maps RAM, loads the image, builds the long-mode
// tables and puts the vCPU at the image's entry point.
func New(cfg Config) (*Machine, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	m := &Machine{cfg: cfg, wake: make(chan struct{}, 1), console: newConsoleTail(cfg.Console), marks: map[uint64]time.Duration{}}
	m.eng, m.kernel = cfg.Engine, cfg.Kernel
	if err := m.init(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (m *Machine) init() (err error) {
	if m.sys, err = kvm.Open(m.cfg.KVMPath); err != nil {
		return err
	}
	if m.ram, err = memory.New(m.cfg.MemBytes); err != nil {
		return err
	}
	if m.kernel == nil {
		if err = m.loadKit(); err != nil {
			return err
		}
	}
	if m.vm, err = m.sys.CreateVM(); err != nil {
		return err
	}
	if err = m.mapRAM(); err != nil {
		return err
	}
	var missing *kvm.MissingCapError
	switch err = m.vm.DenyGuestMSRs(); {
	case err == nil:
		m.MSRFiltered = true
	case !errors.As(err, &missing):
		return err
	}
	if m.cpu, err = m.vm.CreateVCPU(0); err != nil {
		return err
	}
	if err = m.initVCPU(); err != nil {
		return err
	}
	if err = m.attachDevices(); err != nil {
		return err
	}
	if m.kernel != nil {
		if err = m.kernel.Boot(m); err != nil {
			return err
		}
	}
	return m.eng.Attach(m)
}

// loadKit lays out a guest that brings its own kernel: its image, the
// long-mode tables and the boot info.
func (m *Machine) loadKit() error {
	// A kit kernel takes what RAM it likes, from the moment it starts.
	m.ram.Reach(m.ram.Size())
	if err := m.loadImage(); err != nil {
		return err
	}
	if err := m.buildTables(); err != nil {
		return err
	}
	if err := writeBootInfo(m.ram, m.cfg); err != nil {
		return err
	}
	m.counter = BranchCounterOf(m.cfg.Image)
	if hook, ok := m.cfg.Image.Lookup(SWBCHookSymbol); ok && m.counter == CounterHook {
		m.hook = [2]uint64{hook.Addr, hook.Addr + max(hook.Size, 1)}
	}
	return nil
}

func (m *Machine) loadImage() error {
	img := m.cfg.Image
	for _, s := range img.Segments {
		if s.Addr < abi.KernelBase || s.End() > m.ram.Size() {
			return fmt.Errorf("vmm: %s: segment [%#x, %#x) must lie in [%#x, %#x) (RAM above the system area; raise --mem?)",
				img.Path, s.Addr, s.End(), abi.KernelBase, m.ram.Size())
		}
		if err := m.ram.Write(s.Addr, s.Data); err != nil {
			return fmt.Errorf("vmm: loading %s: %w", img.Path, err)
		}
	}
	return nil
}

func (m *Machine) buildTables() error {
	var vectors uint64
	if s, ok := m.cfg.Image.Lookup(abi.VectorsSymbol); ok {
		vectors = s.Addr
	}
	for _, build := range []func() error{
		func() error { return x86.BuildPageTables(m.ram) },
		func() error { return x86.BuildCounterRegion(m.ram) },
		func() error { return x86.BuildGDT(m.ram) },
		func() error { return x86.BuildTSS(m.ram) },
		func() error { return x86.BuildIDT(m.ram, vectors) },
	} {
		if err := build(); err != nil {
			return fmt.Errorf("vmm: %w", err)
		}
	}
	return nil
}

// initVCPU sets CPUID, then special registers, then general registers:
// CPUID must come first because KVM validates CR4/EFER bits against it. A
// Kernel sets the registers itself, in its Boot.
func (m *Machine) initVCPU() error {
	m.cpuid = m.cfg.CPUID
	if m.cpuid == nil {
		host, err := m.HostCPUID()
		if err != nil {
			return err
		}
		m.cpuid = FilterCPUID(host)
	}
	if err := m.cpu.SetCPUID(m.cpuid); err != nil {
		return err
	}
	m.cpu.EnableSyncRegs(kvm.SyncGeneral | kvm.SyncSpecial)
	if m.kernel != nil {
		return nil // its Boot sets the rest
	}
	s, err := m.cpu.Sregs()
	if err != nil {
		return err
	}
	if err := m.cpu.SetSregs(x86.LongModeSregs(s)); err != nil {
		return err
	}
	return m.cpu.SetRegs(x86.EntryRegs(m.cfg.Image.Entry))
}

// mapRAM gives the VM guest RAM as memory slot 0.
func (m *Machine) mapRAM() error { return m.vm.SetMemoryRegion(0, m.ramFlags(), 0, m.ram.Mapping()) }

// ramFlags are slot 0's flags: dirty logging if asked for.
func (m *Machine) ramFlags() uint32 {
	if m.cfg.TrackDirty {
		return kvm.MemLogDirtyPages
	}
	return 0
}
