// Package vmm assembles a reprise machine from its parts — KVM (package
// kvm), guest RAM (memory), long-mode tables (x86) and device models
// (devices) — boots a guest image on it and runs its vCPU loop.
package vmm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elfimage"
	"github.com/reprise-vm/reprise/host/hostview"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm/devices"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/netback"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// Defaults for Config's zero values.
const (
	DefaultMemBytes = 64 << 20
	DefaultTimerHz  = 100
)

// MinSamplePeriod is the shortest Config.SamplePeriod: each timed sample
// costs a kick (tens of microseconds here), so shorter periods would do
// little but sample.
const MinSamplePeriod = 100 * time.Microsecond

// Config describes a machine. Zero fields take the defaults above.
type Config struct {
	Image    *elfimage.Image
	MemBytes uint64
	// TimerHz is the tick rate the guest kernel is asked to program; a
	// negative value asks for no timer at all.
	TimerHz int
	Cmdline string
	// Console receives the guest's console output, line by line.
	Console io.Writer
	// KVMPath overrides /dev/kvm.
	KVMPath string
	// TrackDirty turns on KVM dirty-page logging for guest RAM.
	TrackDirty bool

	// Mode selects where inputs come from (Live by default).
	Mode Mode
	// PositionSource says how Record positions asynchronous events: swbc (the
	// image must have the branch-counter hook) or exit-sync.
	PositionSource tape.PositionSource
	// Log receives a recording's events (Record).
	Log EventLog
	// Script supplies a replay's events (Replay).
	Script EventScript
	// CPUID is the table the guest sees; nil means the host's supported
	// table, filtered (FilterCPUID). Replay passes the recorded table.
	CPUID []kvm.CPUIDEntry
	// TimerJitter randomises each timer period by up to ± this much, to
	// record under deliberately irregular interrupt timing.
	TimerJitter time.Duration
	// Disk attaches a disk; nil leaves the disk device empty (capacity 0).
	Disk *DiskConfig
	// Net attaches a network backend to the NIC (live and record; a replay
	// takes the frames from its tape).
	Net *NetConfig
	// Probes are patched into the guest with int3 (Replay only), and
	// OnProbe is called at each hit.
	Probes  []ProbeSite
	OnProbe ProbeHandler
	// SampleEvery, in Replay with a branch counter, samples the guest every
	// that many user-mode basic blocks: deterministic, the same samples in
	// every replay. OnSample receives them.
	SampleEvery uint64
	OnSample    SampleHandler
	// SamplePeriod, in Replay, also samples the guest every that long of
	// run time, wherever a kick finds it (kernel included): cheaper and
	// coarser than SampleEvery, and not the same in every replay. At least
	// MinSamplePeriod.
	SamplePeriod time.Duration
	// Host, in Live and Record, receives the VMM's own view of the run
	// (package hostview): every stay in the guest with its exit reason,
	// idle waits and hypervisor events. Replays have none: their timing
	// is not the recording's.
	Host HostLog
	// OnTrace, in Replay, receives the guest kernel's trace-ring records
	// (context switches, thread create/exit, explicit events), drained
	// after every tape event and at the end.
	OnTrace TraceHandler
}

// NetConfig is the NIC's host side: a UDP user-mode network on a loopback
// address, or a packet capture fed in as input. Exactly one is set.
type NetConfig struct {
	UDP  string // e.g. "127.0.0.1:7777"
	Pcap string
}

// DiskConfig is a disk: a base image opened read-only and an overlay file
// (created or truncated) that takes every write.
type DiskConfig struct {
	Base    string
	Overlay string
}

// SWBCHookSymbol is the function an image's instrumented code calls at
// every basic block; its presence means the image keeps a branch counter.
const SWBCHookSymbol = "__sanitizer_cov_trace_pc"

// Machine is one VM with a single vCPU, booted from a guest image.
type Machine struct {
	cfg       Config
	sys       *kvm.System
	vm        *kvm.VM
	cpu       *kvm.VCPU
	ram       *memory.RAM
	bus       devices.Bus
	intc      *devices.Intc
	timer     *devices.Timer
	disk      *devices.Disk
	store     *devices.DiskStore // nil without a disk
	nic       *devices.NIC
	net       netback.Backend // nil without a network
	probes    map[uint64]*installedProbe
	sampleAt  uint64      // next branch count to sample at (0: not sampling)
	sampleDue atomic.Bool // a timed sample was asked for
	trace     traceRing
	hook      [2]uint64 // [start, end) of the branch-counter hook, if any
	console   *consoleTail
	host      hostClock // zero without Config.Host
	// MSRFiltered is false on hosts where guest MSR accesses cannot be
	// routed to the VMM (they then go to KVM's own handling).
	MSRFiltered bool

	src      source
	exits    uint64   // guest-initiated exits so far: Position.Exit
	lastStop stopKind // where the vCPU loop last stopped
	cpuid    []kvm.CPUIDEntry

	start     time.Time
	wake      chan struct{} // kicks a vCPU waiting in HLT
	tid       atomic.Int32  // OS thread of the vCPU loop, 0 when not running
	stopping  atomic.Bool
	kicksSent atomic.Uint64
	stats     Stats
	marks     map[uint64]time.Duration // latest HC_MARK of each id (MaxMarkIDs)
	ticks     uint64
}

// New creates the VM, maps and prefaults RAM, loads the image, builds the
// long-mode tables and puts the vCPU at the image's entry point.
func New(cfg Config) (*Machine, error) {
	if cfg.Image == nil {
		return nil, errors.New("vmm: no guest image")
	}
	if cfg.MemBytes == 0 {
		cfg.MemBytes = DefaultMemBytes
	}
	if cfg.TimerHz == 0 {
		cfg.TimerHz = DefaultTimerHz
	}
	if cfg.KVMPath == "" {
		cfg.KVMPath = kvm.DevicePath
	}
	if len(cfg.Cmdline) >= abi.CmdlineMax {
		return nil, fmt.Errorf("vmm: command line is %d bytes, the limit is %d", len(cfg.Cmdline), abi.CmdlineMax-1)
	}
	if err := abi.CheckRAMSize(cfg.MemBytes); err != nil {
		return nil, fmt.Errorf("vmm: %w", err)
	}
	if err := abi.CheckTimerHz(cfg.TimerHz); err != nil {
		return nil, fmt.Errorf("vmm: %w", err)
	}
	if cfg.TimerJitter < 0 {
		return nil, fmt.Errorf("vmm: negative timer jitter %v", cfg.TimerJitter)
	}
	if cfg.SamplePeriod != 0 && cfg.SamplePeriod < MinSamplePeriod {
		return nil, fmt.Errorf("vmm: sample period %v is shorter than %v", cfg.SamplePeriod, MinSamplePeriod)
	}
	if err := checkMode(&cfg); err != nil {
		return nil, err
	}
	m := &Machine{cfg: cfg, wake: make(chan struct{}, 1), console: newConsoleTail(cfg.Console), marks: map[uint64]time.Duration{}}
	switch cfg.Mode {
	case Replay:
		m.src = newTapeSource(m, cfg.Script)
	default:
		m.src = &liveSource{m: m, log: cfg.Log, positionSource: cfg.PositionSource}
	}
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
	if err = m.loadImage(); err != nil {
		return err
	}
	if err = m.buildTables(); err != nil {
		return err
	}
	if err = writeBootInfo(m.ram, m.cfg); err != nil {
		return err
	}
	if err = m.installProbes(); err != nil {
		return err
	}
	m.findTraceRing()
	if hook, ok := m.cfg.Image.Lookup(SWBCHookSymbol); ok {
		m.hook = [2]uint64{hook.Addr, hook.Addr + max(hook.Size, 1)}
	}
	if m.cfg.SampleEvery != 0 {
		if m.cfg.Mode != Replay {
			return errors.New("vmm: sampling is for replays only")
		}
		if _, ok := m.cfg.Image.Lookup(SWBCHookSymbol); !ok {
			return errors.New("vmm: deterministic sampling needs the software branch counter, which this image lacks")
		}
		m.sampleAt = m.cfg.SampleEvery
	}
	if m.cfg.SamplePeriod != 0 && m.cfg.Mode != Replay {
		return errors.New("vmm: sampling is for replays only")
	}
	if m.vm, err = m.sys.CreateVM(); err != nil {
		return err
	}
	var flags uint32
	if m.cfg.TrackDirty {
		flags = kvm.MemLogDirtyPages
	}
	if err = m.vm.SetMemoryRegion(0, flags, 0, m.ram.Bytes()); err != nil {
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
	return m.attachDevices()
}

// checkMode validates the mode-specific parts of a config.
func checkMode(cfg *Config) error {
	switch cfg.Mode {
	case Live:
	case Record:
		if cfg.Log == nil {
			return errors.New("vmm: recording needs an event log")
		}
		switch cfg.PositionSource {
		case tape.SourceSWBC:
			hook, ok := cfg.Image.Lookup(SWBCHookSymbol)
			if !ok {
				return fmt.Errorf("vmm: %s has no software branch counter (no %s symbol; build it with -fsanitize-coverage=trace-pc): use the exit-sync position source",
					cfg.Image.Path, SWBCHookSymbol)
			}
			if hook.Size == 0 {
				// classify tells the hook's exits from the guest's own
				// writes to the port by where the hook ends.
				return fmt.Errorf("vmm: %s: the %s symbol has no size (give it a .size directive)", cfg.Image.Path, SWBCHookSymbol)
			}
		case tape.SourceExitSync:
		default:
			return fmt.Errorf("vmm: the %q position source is not available to the recorder", cfg.PositionSource)
		}
	case Replay:
		if cfg.Script == nil || cfg.CPUID == nil {
			return errors.New("vmm: replay needs the tape's events and CPUID table")
		}
	default:
		return fmt.Errorf("vmm: unknown mode %d", cfg.Mode)
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
// CPUID must come first because KVM validates CR4/EFER bits against it.
func (m *Machine) initVCPU() error {
	m.cpuid = m.cfg.CPUID
	if m.cpuid == nil {
		host, err := m.sys.SupportedCPUID()
		if err != nil {
			return err
		}
		m.cpuid = FilterCPUID(host)
	}
	if err := m.cpu.SetCPUID(m.cpuid); err != nil {
		return err
	}
	s, err := m.cpu.Sregs()
	if err != nil {
		return err
	}
	if err := m.cpu.SetSregs(x86.LongModeSregs(s)); err != nil {
		return err
	}
	if err := m.cpu.SetRegs(x86.EntryRegs(m.cfg.Image.Entry)); err != nil {
		return err
	}
	m.cpu.EnableSyncRegs(kvm.SyncGeneral | kvm.SyncSpecial)
	return nil
}

// device is one entry of the machine's port map.
type device struct {
	name       string
	base, size uint16
	dev        devices.PortDevice
}

// devices lists the machine's port devices; DeviceConfig describes the
// same list for a tape header.
func (m *Machine) devices() []device {
	return []device{
		{"serial", abi.PortSerial, devices.SerialPorts, &devices.Serial{Out: m.console}},
		{"exit", abi.PortExit, 1, devices.ExitPort{}},
		{"timer", abi.PortTimer, 1, m.timer},
		{"intc", abi.PortIntcMask, devices.IntcPorts, m.intc},
		{"null", abi.PortNull, 1, devices.Null{}},
		{"entropy", abi.PortEntropy, 4, devices.Entropy{}},
		{"disk", abi.PortDisk, devices.DiskPorts, m.disk},
		{"nic", abi.PortNICRXRing, devices.NICPorts, m.nic},
	}
}

// DeviceConfig describes the device model: name → "ports base+size".
func DeviceConfig() map[string]string {
	cfg := map[string]string{
		"hypercall": fmt.Sprintf("port %#x", abi.PortHcall),
		"swbc":      fmt.Sprintf("port %#x, page %#x", abi.PortSWBC, abi.SWBC),
		"clock":     fmt.Sprintf("page %#x", abi.Clock),
	}
	for _, d := range (&Machine{}).devices() {
		cfg[d.name] = fmt.Sprintf("ports %#x+%d", d.base, d.size)
	}
	return cfg
}

func (m *Machine) attachDevices() error {
	m.intc = devices.NewIntc(abi.IRQBase, m.kick)
	raise := func() {
		m.hostEvent(hostview.KindTimerFire, 0, 0)
		m.raise(abi.IRQTimer)
	}
	if m.cfg.Mode == Replay {
		raise = nil // ticks come from the tape
	}
	m.timer = devices.NewTimer(raise, m.cfg.TimerJitter)
	if c := m.cfg.Disk; c != nil {
		var err error
		if m.store, err = devices.OpenDiskStore(c.Base, c.Overlay); err != nil {
			return err
		}
	}
	var raiseDisk func()
	if m.cfg.Mode != Replay {
		raiseDisk = func() { m.raise(abi.IRQDisk) } // replay: completions come from the tape
	}
	m.disk = devices.NewDisk(m.ram, m.store, raiseDisk)
	if err := m.attachNet(); err != nil {
		return err
	}
	for _, d := range m.devices() {
		if err := m.bus.Attach(d.name, d.base, d.size, d.dev); err != nil {
			return err
		}
	}
	return nil
}

// attachNet opens the network backend (live and record) and builds the NIC.
//
// NIC interrupts are moderated, as on real NICs: a frame wakes an idle
// vCPU but does not kick a running one; it is delivered at the vCPU's next
// stop (its next exit with interrupts on, its idle HLT, a timer tick). A
// kick would cost a recording an extra exit per frame to reach a
// repeatable point; moderation lets frames arrive in batches at points the
// guest reaches anyway.
func (m *Machine) attachNet() error {
	raiseNIC := m.raiseNIC
	if c := m.cfg.Net; c != nil && m.cfg.Mode != Replay {
		// Assigned only on success: a nil *UDP in the interface would not
		// be a nil Backend.
		switch {
		case c.UDP != "" && c.Pcap != "":
			return errors.New("vmm: a NIC has one backend: a UDP address or a capture, not both")
		case c.UDP != "":
			u, err := netback.ListenUDP(c.UDP, raiseNIC)
			if err != nil {
				return err
			}
			m.net = u
		case c.Pcap != "":
			p, err := netback.OpenPcap(c.Pcap, raiseNIC)
			if err != nil {
				return err
			}
			m.net = p
		}
	}
	m.nic = devices.NewNIC(m.ram, m.net != nil)
	m.nic.Send = func(frame []byte) error { return m.src.netTX(frame) }
	m.nic.RXPosted = func() {
		if m.net != nil && m.net.Backlog() > 0 {
			raiseNIC()
		}
	}
	return nil
}

// raise asserts an interrupt line and kicks the vCPU to deliver it.
func (m *Machine) raise(line int) {
	m.hostEvent(hostview.KindIRQ, uint32(line), 0)
	m.intc.Raise(line)
}

// raiseNIC posts the NIC interrupt and wakes an idle vCPU (see attachNet).
func (m *Machine) raiseNIC() {
	m.hostEvent(hostview.KindIRQ, abi.IRQNIC, 0)
	m.intc.Post(abi.IRQNIC)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// NetAddr is the host address of a UDP network backend, or nil.
func (m *Machine) NetAddr() net.Addr {
	if u, ok := m.net.(*netback.UDP); ok {
		return u.Addr()
	}
	return nil
}

// CPUID is the table the guest sees (a recording stores it).
func (m *Machine) CPUID() []kvm.CPUIDEntry { return m.cpuid }

// SetBranchTarget writes the software branch counter's target: the guest
// exits when its count of CPL3 basic blocks reaches it (^0: never).
func (m *Machine) SetBranchTarget(target uint64) error {
	return m.ram.PutUint64(abi.SWBCTargetOff, target)
}

// BranchCount reads the guest's software branch counter.
func (m *Machine) BranchCount() (uint64, error) { return m.ram.Uint64(abi.SWBCCountOff) }

// RAM is the guest's memory.
func (m *Machine) RAM() *memory.RAM { return m.ram }

// Image is the guest image the machine booted.
func (m *Machine) Image() *elfimage.Image { return m.cfg.Image }

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
