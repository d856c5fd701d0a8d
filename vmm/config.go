package vmm

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/netback"
)

// Defaults for Config's zero values.
const (
	DefaultMemBytes = 64 << 20
	DefaultTimerHz  = 100
)

// Config describes a machine. Zero fields take the defaults above.
type Config struct {
	Image    *elffile.Image
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
	// RAMHashing is what of RAM its hashes (an end's, a checkpoint's)
	// take in: HashPages for a new recording, what the tape's format
	// version had for a replay.
	RAMHashing memory.Hashing

	// Kernel, if set, is the guest's operating system, played by the VMM
	// (package linux); Image is then optional, for symbols only.
	Kernel Kernel
	// Engine decides where inputs come from and when they are delivered;
	// nil runs the machine live.
	Engine Engine
	// Scripted says the engine supplies every interrupt (a replay): the
	// timer and the disk raise none of their own, and no network backend
	// is opened.
	Scripted bool
	// CPUID is the table the guest sees; nil means the host's supported
	// table, filtered (FilterCPUID). Replay passes the recorded table.
	CPUID []kvm.CPUIDEntry
	// TimerJitter randomises each timer period by up to ± this much, to
	// record under deliberately irregular interrupt timing.
	TimerJitter time.Duration
	// Disk attaches a disk; nil leaves the disk device empty (capacity 0).
	Disk *DiskConfig
	// Net attaches a network backend to the NIC (live and record; a replay
	// opens none, and takes the frames from its tape).
	Net *NetConfig
	// Tap, if set, sees every frame the guest sends, whole — in a replay
	// too, which sends none and whose tape keeps a Linux program's sends
	// only by digest.
	Tap func(frame []byte) error
	// VCPUAffinity, if set, pins the vCPU thread to these host CPUs. On
	// hosts where CPUID runs natively in user mode (PVM) its answers name
	// the host CPU the vCPU is on, so a program that reads them is
	// recorded and replayed on one CPU.
	VCPUAffinity []int
	// Devices, if set, is a saved device state the machine's devices are
	// restored to once built (SaveDevices). Until a checkpoint restores
	// RAM and the vCPU too, it is for machines that have not run yet.
	Devices *DeviceState
	// Host receives the VMM's own view of the run:
	// every stay in the guest with its exit reason, idle waits and
	// hypervisor events. Replays have none: their timing is not the
	// recording's.
	Host HostObserver
}

// NetConfig is the NIC's host side: a UDP user-mode network on a loopback
// address, or a packet capture fed in as input. Exactly one is set.
type NetConfig struct {
	UDP  string // e.g. "127.0.0.1:7777"
	Pcap string
	// Publish are a Kernel's program's published ports: host clients'
	// connections to them come through the door (vmm/door).
	Publish []netback.Publish
	// Egress are the host addresses a Kernel's program may connect to,
	// through the door too.
	Egress []netip.AddrPort
}

// DiskConfig is a disk: a base image opened read-only and an overlay file
// (created or truncated) that takes every write.
type DiskConfig struct {
	Base    string
	Overlay string
}

// maxHostCPUs is CPU_SETSIZE, the CPUs an affinity mask names.
const maxHostCPUs = 1024

// SWBCHookSymbol is the function an image's instrumented code calls at
// every basic block; its presence means the image keeps a branch counter.
const SWBCHookSymbol = "__sanitizer_cov_trace_pc"

// complete fills in the defaults and checks the config, before anything
// is allocated.
func (cfg *Config) complete() error {
	if cfg.Image == nil && cfg.Kernel == nil {
		return errors.New("vmm: no guest image")
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
		return fmt.Errorf("vmm: command line is %d bytes, the limit is %d", len(cfg.Cmdline), abi.CmdlineMax-1)
	}
	if err := abi.CheckRAMSize(cfg.MemBytes); err != nil {
		return fmt.Errorf("vmm: %w", err)
	}
	if err := abi.CheckTimerHz(cfg.TimerHz); err != nil {
		return fmt.Errorf("vmm: %w", err)
	}
	if cfg.TimerJitter < 0 {
		return fmt.Errorf("vmm: negative timer jitter %v", cfg.TimerJitter)
	}
	for _, cpu := range cfg.VCPUAffinity {
		if cpu < 0 || cpu >= maxHostCPUs {
			return fmt.Errorf("vmm: host CPU %d does not exist (0 to %d)", cpu, maxHostCPUs-1)
		}
	}
	if cfg.Engine == nil {
		cfg.Engine = &live{}
	}
	return nil
}
