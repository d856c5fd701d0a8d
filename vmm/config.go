package vmm

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elfimage"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
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
	// Host, in Live and Record, receives the VMM's own view of the run:
	// every stay in the guest with its exit reason, idle waits and
	// hypervisor events. Replays have none: their timing is not the
	// recording's.
	Host HostObserver
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

// complete fills in the defaults and checks the config, before anything
// is allocated.
func (cfg *Config) complete() error {
	if cfg.Image == nil {
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
	if cfg.SamplePeriod != 0 && cfg.SamplePeriod < MinSamplePeriod {
		return fmt.Errorf("vmm: sample period %v is shorter than %v", cfg.SamplePeriod, MinSamplePeriod)
	}
	return cfg.checkMode()
}

// checkMode validates the mode-specific parts of a config.
func (cfg *Config) checkMode() error {
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
