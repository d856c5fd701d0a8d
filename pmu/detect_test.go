package pmu

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestDetect runs the real probe. On the test machines (no PMU:
// docs/architecture.md, "Position sources") it must fail and say so; on a
// host with a PMU it may succeed.
func TestDetect(t *testing.T) {
	err := Detect()
	t.Logf("Detect() = %v", err)
	facts := probeHost()
	if err == nil {
		require.True(t, facts.corePMU, "Detect succeeded without a core PMU in sysfs")
		return
	}
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	require.NotEmpty(t, ue.Reason)
	if !facts.corePMU {
		ev, evErr := HostEvent()
		require.NoError(t, evErr, "this test expects an Intel or AMD host")
		require.ErrorIs(t, err, unix.ENOENT)
		require.Equal(t, fmt.Sprintf("pmu: no hardware PMU: perf_event_open(PERF_TYPE_RAW %#x %s, exclude_host): ENOENT"+
			" — this host exposes no PMU to its kernel (no /sys/bus/event_source/devices/cpu; typical inside a VM without PMU passthrough);"+
			" use --position swbc", ev.Config, ev.Name), err.Error())
	}
}

// TestOpenCounter opens this thread's counter: without a PMU it must fail
// with the same explanation as Detect; with one, the counter must work (the
// thread runs no guest, so it counts nothing).
func TestOpenCounter(t *testing.T) {
	c, err := OpenCounter(unix.Gettid(), 0)
	if Detect() != nil {
		var ue *UnavailableError
		require.ErrorAs(t, err, &ue)
		return
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	n, err := c.Read()
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, c.SetOverflow(1000))
	require.Error(t, c.SetOverflow(0))
}

func TestOpenCounterNoSuchThread(t *testing.T) {
	if Detect() != nil {
		t.Skip("no PMU: OpenCounter fails before looking at the thread")
	}
	_, err := OpenCounter(1<<22+1, 0) // above pid_max's ceiling
	require.ErrorIs(t, err, unix.ESRCH)
}

func TestExplainOpen(t *testing.T) {
	ev := intelCond
	noPMU := hostFacts{}
	pmu := hostFacts{corePMU: true, paranoid: "2"}
	for _, tc := range []struct {
		err   error
		facts hostFacts
		want  string
	}{
		{unix.ENOENT, noPMU, "no hardware PMU: perf_event_open(PERF_TYPE_RAW 0x5101c4 BR_INST_RETIRED.CONDITIONAL, exclude_host): ENOENT" +
			" — this host exposes no PMU to its kernel (no /sys/bus/event_source/devices/cpu; typical inside a VM without PMU passthrough)"},
		{unix.ENOENT, pmu, "event not supported: perf_event_open(PERF_TYPE_RAW 0x5101c4 BR_INST_RETIRED.CONDITIONAL, exclude_host): ENOENT" +
			" — the core PMU driver does not accept raw event 0x5101c4 on this CPU model"},
		{unix.ENODEV, noPMU, "no hardware PMU: "},
		{unix.EOPNOTSUPP, noPMU, "no hardware PMU: "},
		{unix.EOPNOTSUPP, pmu, "no overflow interrupt: "},
		{unix.EACCES, pmu, "permission denied: perf_event_open(PERF_TYPE_RAW 0x5101c4 BR_INST_RETIRED.CONDITIONAL, exclude_host): EACCES" +
			" — kernel.perf_event_paranoid is 2 and this process lacks CAP_PERFMON"},
		{unix.EPERM, hostFacts{corePMU: true, paranoid: "4"}, "): EPERM — kernel.perf_event_paranoid is 4 and"},
		{unix.EACCES, hostFacts{corePMU: true}, "kernel.perf_event_paranoid is unreadable"},
		{unix.EINVAL, pmu, "guest-only counting unsupported: perf_event_open(PERF_TYPE_RAW 0x5101c4 BR_INST_RETIRED.CONDITIONAL, exclude_host): EINVAL" +
			" — the kernel rejected the attributes: its PMU driver does not support exclude_host"},
		{unix.ENOSYS, pmu, "no perf_event_open: "},
		{unix.EMFILE, pmu, "out of file descriptors: "},
		{unix.EBUSY, pmu, "PMU busy: "},
		{unix.EIO, pmu, "cannot count guest branches: perf_event_open(PERF_TYPE_RAW 0x5101c4 BR_INST_RETIRED.CONDITIONAL, exclude_host): EIO — unexpected error"},
		{fmt.Errorf("wrapped: %w", unix.ENOENT), noPMU, "no hardware PMU: "},
		{errors.New("not an errno"), pmu, "cannot count guest branches: perf_event_open(PERF_TYPE_RAW 0x5101c4 BR_INST_RETIRED.CONDITIONAL, exclude_host): not an errno"},
	} {
		got := explainOpen(ev, tc.err, tc.facts)
		require.Contains(t, got, tc.want, "%v with %+v", tc.err, tc.facts)
	}
}

func TestUnavailableError(t *testing.T) {
	err := error(&UnavailableError{Reason: "no hardware PMU: because", Err: unix.ENOENT})
	require.Equal(t, "pmu: no hardware PMU: because; use --position swbc", err.Error())
	require.ErrorIs(t, err, unix.ENOENT)
}

func TestEventFor(t *testing.T) {
	for _, tc := range []struct {
		vendor        string
		family, model int
		want          Event
		wantErr       string
	}{
		{"GenuineIntel", 6, 0x55, intelCond, ""},    // Skylake-SP: BR_INST_RETIRED.CONDITIONAL
		{"GenuineIntel", 6, 0x9e, intelCond, ""},    // Kaby Lake
		{"GenuineIntel", 6, 0x6a, intelCondICL, ""}, // Ice Lake-SP: umask 0x11
		{"GenuineIntel", 6, 0x8f, intelCondADL, ""}, // Sapphire Rapids
		{"GenuineIntel", 6, 0x5c, intelAtomJcc, ""}, // Goldmont
		{"GenuineIntel", 15, 4, Event{}, "Intel CPU family 15"},
		{"AuthenticAMD", 0x17, 0x31, amdZen, ""},
		{"AuthenticAMD", 0x19, 0x01, amdZen, ""},
		{"AuthenticAMD", 0x15, 0x30, Event{}, "predates Zen"},
		{"HygonGenuine", 0x18, 0, Event{}, `unsupported CPU vendor "HygonGenuine"`},
		{"", 0, 0, Event{}, "no vendor_id"},
	} {
		got, err := eventFor(tc.vendor, tc.family, tc.model)
		if tc.wantErr != "" {
			require.ErrorContains(t, err, tc.wantErr)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%s family %d model %#x", tc.vendor, tc.family, tc.model)
	}
	require.Equal(t, uint64(0x5101c4), intelCond.Config)
	require.Equal(t, uint64(0x5100d1), amdZen.Config)
	require.Equal(t, uint64(DefaultSkid), intelCond.Skid)
}

func TestParseCPUInfo(t *testing.T) {
	text := "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Processor\n\n" +
		"processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
	require.Equal(t, cpuIdentity{vendor: "GenuineIntel", family: 6, model: 143}, parseCPUInfo(text))
	require.Equal(t, cpuIdentity{}, parseCPUInfo(""))

	// This host's own /proc/cpuinfo parses to something.
	if b, err := os.ReadFile(cpuinfoPath); err == nil {
		require.NotEmpty(t, parseCPUInfo(string(b)).vendor)
	}
}
