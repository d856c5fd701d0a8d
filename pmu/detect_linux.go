package pmu

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

const (
	// sysfsCorePMU is where the kernel lists its core PMU driver; hybrid
	// Intel parts list cpu_core (and cpu_atom) instead.
	sysfsCorePMU       = "/sys/bus/event_source/devices/cpu"
	sysfsHybridCorePMU = "/sys/bus/event_source/devices/cpu_core"
	paranoidPath       = "/proc/sys/kernel/perf_event_paranoid"
	cpuinfoPath        = "/proc/cpuinfo"
)

// noOverflow is the sample period standing for "never": a counter cannot be
// switched between sampling and counting with PERF_EVENT_IOC_PERIOD, so, as
// rr does, a counter that should not interrupt gets a period it never reaches.
const noOverflow = 1 << 60

// UnavailableError says why this host cannot count guest-mode retired
// conditional branches.
type UnavailableError struct {
	Reason string // the whole explanation, without the "pmu: " prefix
	Err    error  // the underlying error (an errno from perf_event_open), if any
}

func (e *UnavailableError) Error() string {
	return "pmu: " + e.Reason + "; use --position swbc"
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// hostEvent is the branch event for this host's CPU, read once.
var hostEvent = sync.OnceValues(func() (Event, error) {
	b, err := os.ReadFile(cpuinfoPath)
	if err != nil {
		return Event{}, &UnavailableError{Reason: "cannot identify the CPU: " + err.Error(), Err: err}
	}
	id := parseCPUInfo(string(b))
	ev, err := eventFor(id.vendor, id.family, id.model)
	if err != nil {
		return Event{}, &UnavailableError{Reason: "no retired-conditional-branch event: " + err.Error(), Err: err}
	}
	return ev, nil
})

// HostEvent returns the branch event for this host's CPU (its raw config and
// skid margin), or an *UnavailableError if the CPU has none. It does not
// check that the PMU works; Detect does.
func HostEvent() (Event, error) { return hostEvent() }

// Detect returns nil if retired conditional branches can be counted in guest
// mode on this host, with an overflow interrupt; otherwise an
// *UnavailableError saying exactly why. It really opens (and closes) such a
// counter on the calling thread.
func Detect() error {
	ev, err := hostEvent()
	if err != nil {
		return err
	}
	attr := branchAttr(ev, noOverflow)
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	return &UnavailableError{Reason: explainOpen(ev, err, probeHost()), Err: err}
}

// branchAttr describes the counter: the raw event, counting the guest's user
// mode only (exclude_host: not while the host runs, exclude_kernel: not at
// guest CPL0), pinned so it is never multiplexed away, sampling every period
// events. Only CPL3 guest code takes asynchronous events
// (docs/architecture.md, "Position sources": the guest kernel runs with
// interrupts off), and user-only counting of one's own threads is allowed at
// the default perf_event_paranoid of 2.
func branchAttr(ev Event, period uint64) unix.PerfEventAttr {
	return unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_RAW,
		Size:   uint32(reflect.TypeFor[unix.PerfEventAttr]().Size()),
		Config: ev.Config,
		Sample: period,
		Bits:   unix.PerfBitExcludeHost | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | unix.PerfBitPinned,
	}
}

// hostFacts are what explainOpen needs to know about the host beyond the
// errno.
type hostFacts struct {
	corePMU  bool   // the kernel registered a core PMU driver (sysfs)
	paranoid string // kernel.perf_event_paranoid, "" if unreadable
}

func probeHost() hostFacts {
	var f hostFacts
	for _, p := range []string{sysfsCorePMU, sysfsHybridCorePMU} {
		if _, err := os.Stat(p); err == nil {
			f.corePMU = true
		}
	}
	if b, err := os.ReadFile(paranoidPath); err == nil {
		f.paranoid = strings.TrimSpace(string(b))
	}
	return f
}

// explainOpen turns a perf_event_open failure into a reason a user can act
// on. It is a pure function of its inputs.
func explainOpen(ev Event, err error, f hostFacts) string {
	var errno unix.Errno
	name := err.Error()
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			name = n
		}
	}
	noPMU := "this host exposes no PMU to its kernel (no " + sysfsCorePMU + "; typical inside a VM without PMU passthrough)"
	var headline, why string
	switch errno {
	case unix.ENOENT, unix.ENODEV:
		if !f.corePMU {
			headline, why = "no hardware PMU", noPMU
		} else {
			headline, why = "event not supported", "the core PMU driver does not accept raw event "+fmt.Sprintf("%#x", ev.Config)+" on this CPU model"
		}
	case unix.EOPNOTSUPP:
		if !f.corePMU {
			headline, why = "no hardware PMU", noPMU
		} else {
			headline, why = "no overflow interrupt", "the PMU cannot sample this event or cannot exclude host mode (a virtual PMU without interrupts, or one that cannot tell guest from host)"
		}
	case unix.EACCES, unix.EPERM:
		p := "unreadable"
		if f.paranoid != "" {
			p = f.paranoid
		}
		headline, why = "permission denied", "kernel.perf_event_paranoid is "+p+
			" and this process lacks CAP_PERFMON: counting one's own threads in user mode needs it at 2 or below (sysctl kernel.perf_event_paranoid=2), or run as root or with CAP_PERFMON"
	case unix.EINVAL:
		headline, why = "guest-only counting unsupported", "the kernel rejected the attributes: its PMU driver does not support exclude_host, or the raw config is invalid for this CPU"
	case unix.ENOSYS:
		headline, why = "no perf_event_open", "the kernel was built without CONFIG_PERF_EVENTS, or a seccomp filter blocks the system call"
	case unix.EMFILE, unix.ENFILE:
		headline, why = "out of file descriptors", "raise the open file limit"
	case unix.EBUSY:
		headline, why = "PMU busy", "another user (an NMI watchdog, another profiler) holds the counters exclusively"
	default:
		headline, why = "cannot count guest branches", "unexpected error"
	}
	return fmt.Sprintf("%s: perf_event_open(PERF_TYPE_RAW %#x %s, exclude_host): %s — %s", headline, ev.Config, ev.Name, name, why)
}
