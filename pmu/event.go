// Package pmu positions asynchronous events by counting the guest's retired
// conditional branches with the hardware PMU, as rr and InSight do
// (position source "pmu", docs/architecture.md "Position sources"): record
// logs (branches, RIP, RCX) at each injection; replay programs an overflow a
// little early and then breakpoints and single-steps to the exact point
// (RunTo).
//
// Detect says whether this host can count guest-mode branches and, if not,
// exactly why. Counter is the per-vCPU perf event. The stepping logic is pure
// Go behind the CPU interface, so it is tested against a simulated CPU: the
// test machines have no PMU (docs/architecture.md, "Position sources").
package pmu

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Event is the raw PMU event that counts retired conditional branches on one
// microarchitecture, with the overflow skid margin to use there.
type Event struct {
	Name   string // the vendor's event name, for messages
	Config uint64 // perf_event_attr.config for PERF_TYPE_RAW
	Skid   uint64 // how early to program the overflow (see DefaultSkid)
}

func (e Event) String() string { return fmt.Sprintf("%#x %s", e.Config, e.Name) }

// The raw configs are rr's (src/PerfCounters.cc, pmu_configs): bits 0-7 are
// the event select (0xc4 BR_INST_RETIRED on Intel, 0xd1 on AMD), bits 8-15
// the umask; the 0x51 above them (USR, INT, EN) is ignored by the kernel,
// which masks raw configs and sets those bits itself from exclude_* and the
// sample period.
var (
	// intelCond is BR_INST_RETIRED.CONDITIONAL (umask 0x01) on Nehalem to
	// Comet Lake.
	intelCond = Event{Name: "BR_INST_RETIRED.CONDITIONAL", Config: 0x5101c4, Skid: 100}
	// intelCondICL is BR_INST_RETIRED.COND (umask 0x11) from Ice Lake on,
	// where umask 0x01 became COND_TAKEN.
	intelCondICL = Event{Name: "BR_INST_RETIRED.COND", Config: 0x5111c4, Skid: 100}
	// intelCondADL is the same event on Alder Lake and later hybrid-era
	// cores, where rr measured a larger skid.
	intelCondADL = Event{Name: "BR_INST_RETIRED.COND", Config: 0x5111c4, Skid: 125}
	// intelAtomJcc is BR_INST_RETIRED.JCC (umask 0x7e) on Silvermont,
	// Goldmont and Tremont.
	intelAtomJcc = Event{Name: "BR_INST_RETIRED.JCC", Config: 0x517ec4, Skid: 100}
	// amdZen is RETIRED_CONDITIONAL_BRANCH_INSTRUCTIONS (PMCx0D1) on all
	// Zen generations. Its skid is effectively unbounded; rr uses 10000.
	amdZen = Event{Name: "ExRetCond (retired conditional branches)", Config: 0x5100d1, Skid: 10000}
)

// intelModels maps family-6 Intel display models (CPUID) to their event,
// following rr's compute_cpu_microarchs. Models not listed fall back to
// intelCond, the event of every pre-Ice Lake big core.
var intelModels = map[int]Event{
	0x37: intelAtomJcc, 0x4c: intelAtomJcc, 0x57: intelAtomJcc, // Silvermont
	0x5c: intelAtomJcc, 0x5f: intelAtomJcc, 0x7a: intelAtomJcc, // Goldmont
	0x6a: intelCondICL, 0x7e: intelCondICL, // Ice Lake
	0x8c: intelCondICL, 0x8d: intelCondICL, // Tiger Lake
	0xa7: intelCondICL,                     // Rocket Lake
	0x97: intelCondADL, 0x9a: intelCondADL, // Alder Lake
	0xb7: intelCondADL, // Raptor Lake
	0x8f: intelCondADL, // Sapphire Rapids
	0xcf: intelCondADL, // Emerald Rapids
	0xaa: intelCondADL, // Meteor Lake
}

// eventFor picks the conditional-branch event for a CPU from its
// /proc/cpuinfo identity (decimal family and model as the kernel prints).
func eventFor(vendor string, family, model int) (Event, error) {
	switch vendor {
	case "GenuineIntel":
		if family != 6 {
			return Event{}, fmt.Errorf("Intel CPU family %d has no known retired-conditional-branch event", family)
		}
		if ev, ok := intelModels[model]; ok {
			return ev, nil
		}
		return intelCond, nil
	case "AuthenticAMD":
		// Zen is family 0x17 (Zen, Zen+, Zen 2), 0x19 (Zen 3, 4), 0x1a (Zen 5).
		if family >= 0x17 {
			return amdZen, nil
		}
		return Event{}, fmt.Errorf("AMD CPU family %#x predates Zen and has no retired-conditional-branch event", family)
	case "":
		return Event{}, fmt.Errorf("no vendor_id in /proc/cpuinfo")
	default:
		return Event{}, fmt.Errorf("unsupported CPU vendor %q (only GenuineIntel and AuthenticAMD have a known event)", vendor)
	}
}

// cpuIdentity is the first processor's identity in /proc/cpuinfo.
type cpuIdentity struct {
	vendor        string
	family, model int
}

// parseCPUInfo reads vendor_id, "cpu family" and model of the first
// processor listed.
func parseCPUInfo(text string) cpuIdentity {
	var id cpuIdentity
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if seen[key] {
			continue
		}
		switch key {
		case "vendor_id":
			id.vendor = val
		case "cpu family":
			id.family, _ = strconv.Atoi(val)
		case "model":
			id.model, _ = strconv.Atoi(val)
		default:
			continue
		}
		seen[key] = true
		if len(seen) == 3 {
			break
		}
	}
	return id
}
