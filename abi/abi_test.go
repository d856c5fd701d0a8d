package abi

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// headerDefines reads the numeric #defines of the C side of the contract.
func headerDefines(t *testing.T) map[string]uint64 {
	defs := map[string]uint64{}
	for _, h := range []string{"abi.h", "trace.h"} {
		readDefines(t, "../guest/include/reprise/"+h, defs)
	}
	return defs
}

func readDefines(t *testing.T, path string, defs map[string]uint64) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	re := regexp.MustCompile(`^#define\s+(\w+)\s+\(?(0x[0-9A-Fa-f]+|\d+)(?:ULL|U)?\)?`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := re.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		v, err := strconv.ParseUint(m[2], 0, 64)
		require.NoError(t, err, m[0])
		defs[m[1]] = v
	}
	require.NoError(t, sc.Err())
}

func TestHeaderMatchesGo(t *testing.T) {
	defs := headerDefines(t)
	want := map[string]uint64{
		"REPRISE_PML4": PML4, "REPRISE_PDPT": PDPT, "REPRISE_PD": PD, "REPRISE_PT0": PT0,
		"REPRISE_GDT": GDT, "REPRISE_IDT": IDT, "REPRISE_TSS": TSS, "REPRISE_BOOTINFO": BootInfo,
		"REPRISE_CLOCK": Clock, "REPRISE_SWBC": SWBC, "REPRISE_IST1_TOP": IST1Top,
		"REPRISE_IST2_TOP": IST2Top, "REPRISE_BOOT_STACK_TOP": BootStackTop,
		"REPRISE_COUNTER_TABLES": CounterTables, "REPRISE_COUNTER_ZERO": CounterZero, "REPRISE_COUNTER_GUARD_TOP": CounterGuardTop, "REPRISE_PROBE_AREA": ProbeArea, "REPRISE_PROBE_AREA_SIZE": ProbeAreaSize,
		"REPRISE_KERNEL_BASE": KernelBase, "REPRISE_USER_BASE": UserBase,
		"REPRISE_SEL_KCODE": SelKernelCode, "REPRISE_SEL_KDATA": SelKernelData,
		"REPRISE_SEL_UDATA": SelUserData, "REPRISE_SEL_UCODE": SelUserCode, "REPRISE_SEL_TSS": SelTSS,
		"REPRISE_IRQ_BASE": IRQBase, "REPRISE_IRQ_TIMER": IRQTimer, "REPRISE_IRQ_SERIAL": IRQSerial,
		"REPRISE_VECTOR_STUB_SIZE": VectorStubSize,
		"REPRISE_PORT_SERIAL":      PortSerial, "REPRISE_PORT_EXIT": PortExit, "REPRISE_PORT_HCALL": PortHcall,
		"REPRISE_PORT_TIMER": PortTimer, "REPRISE_PORT_INTC_MASK": PortIntcMask,
		"REPRISE_PORT_SWBC": PortSWBC, "REPRISE_PORT_NULL": PortNull,
		"REPRISE_PORT_PROBE": PortProbe,
		"REPRISE_HC_TIME":    HcTime, "REPRISE_HC_MARK": HcMark, "REPRISE_HC_FAULT": HcFault,
		"REPRISE_HC_BREAKPOINT": HcBreakpoint,
		"SYS_EXIT":              SysExit, "SYS_WRITE": SysWrite, "SYS_THREAD_CREATE": SysThreadCreate,
		"SYS_THREAD_EXIT": SysThreadExit, "SYS_THREAD_JOIN": SysThreadJoin, "SYS_YIELD": SysYield,
		"SYS_SLEEP_NS": SysSleepNs, "SYS_FUTEX_WAIT": SysFutexWait, "SYS_FUTEX_WAKE": SysFutexWake,
		"SYS_CLOCK_NS": SysClockNs, "SYS_TRACE": SysTrace, "SYS_GETTID": SysGettid, "SYS_BENCH": SysBench, "SYS_DISK_READ": SysDiskRead, "SYS_DISK_WRITE": SysDiskWrite,
		"SYS_DISK_SECTORS": SysDiskSectors, "REPRISE_IRQ_DISK": IRQDisk, "REPRISE_PORT_DISK": PortDisk,
		"REPRISE_PORT_DISK_CAP": PortDiskCap, "REPRISE_DISK_SECTOR": DiskSector,
		"REPRISE_DISK_MAX_SECTORS": DiskMaxSectors, "REPRISE_DISK_READ": DiskRead,
		"REPRISE_DISK_WRITE": DiskWrite, "REPRISE_DISK_PENDING": DiskPending, "REPRISE_DISK_OK": DiskOK,
		"REPRISE_DISK_ERROR": DiskError, "REPRISE_DISK_MAX_QUEUED": DiskMaxQueued, "REPRISE_MARK_MAX_IDS": MarkMaxIDs,
		"REPRISE_MAX_THREADS": MaxThreads, "REPRISE_THREAD_SIZE": ThreadSize, "REPRISE_THREAD_FRAME": ThreadFrame,
		"REPRISE_THREAD_TID": ThreadTID, "REPRISE_THREAD_STATE": ThreadState,
		"REPRISE_THREAD_RUNNABLE": ThreadRunnable, "REPRISE_THREAD_BLOCKED": ThreadBlocked,
		"REPRISE_IRQ_NIC": IRQNIC, "REPRISE_PORT_NIC_RXRING": PortNICRXRing, "REPRISE_PORT_NIC_TXRING": PortNICTXRing,
		"REPRISE_PORT_NIC_RXTAIL": PortNICRXTail, "REPRISE_PORT_NIC_TXTAIL": PortNICTXTail,
		"REPRISE_PORT_NIC_INFO": PortNICInfo, "SYS_NET_SETUP": SysNetSetup, "SYS_NET_RXTAIL": SysNetRXTail,
		"SYS_NET_TXTAIL": SysNetTXTail, "SYS_NET_WAIT": SysNetWait, "REPRISE_NIC_RING": NICRing,
		"REPRISE_NIC_FRAME_MAX": NICFrameMax, "REPRISE_NIC_DONE": NICDone, "REPRISE_NET_GUEST_MAC": NetGuestMAC,
		"REPRISE_NET_HOST_MAC": NetHostMAC, "REPRISE_NET_GUEST_IP": NetGuestIP, "REPRISE_NET_HOST_IP": NetHostIP, "SYS_GETRANDOM": SysGetrandom, "REPRISE_PORT_ENTROPY": PortEntropy,
		"REPRISE_BENCH_MARK": BenchMark, "REPRISE_BENCH_EXIT_CPL0": BenchExitCPL0, "REPRISE_BENCH_NOP": BenchNop, "REPRISE_BENCH_IRQ": BenchIRQ,
		"REPRISE_MARK_WORKLOAD_START": MarkWorkloadStart, "REPRISE_MARK_WORKLOAD_END": MarkWorkloadEnd,
		"REPRISE_PORT_INTC_RAISE": PortIntcRaise, "REPRISE_IRQ_SOFT": IRQSoft,
		"REPRISE_BOOT_MAGIC": BootMagic, "REPRISE_CMDLINE_MAX": CmdlineMax,
		"REPRISE_TRACE_MAGIC": TraceMagic, "REPRISE_TRACE_REC_SIZE": TraceRecSize,
		"REPRISE_TRACE_SWITCH": TraceSwitch, "REPRISE_TRACE_CREATE": TraceCreate,
		"REPRISE_TRACE_EXIT": TraceExit, "REPRISE_TRACE_USER": TraceUser,
	}
	for name, v := range want {
		got, ok := defs[name]
		if !ok {
			t.Errorf("abi.h has no #define %s", name)
			continue
		}
		require.Equalf(t, v, got, "%s: Go %#x, abi.h %#x", name, v, got)
	}
}
