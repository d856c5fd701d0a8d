package kvm

// Layout checks for the raw structs that cross the ioctl boundary. The
// expected numbers were measured with sizeof/offsetof against <linux/kvm.h>
// on an x86-64 host; a mismatch means the kernel would read or write past
// (or short of) the Go value. This file imports unsafe, hence its name.

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestRawStructSizes(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		got    uintptr
		want   uintptr
	}{
		{"struct kvm_regs", unsafe.Sizeof(Regs{}), 144},
		{"struct kvm_sregs", unsafe.Sizeof(Sregs{}), 0x138},
		{"struct kvm_segment", unsafe.Sizeof(Segment{}), 24},
		{"struct kvm_dtable", unsafe.Sizeof(DTable{}), 16},
		{"struct kvm_vcpu_events", unsafe.Sizeof(VCPUEvents{}), 64},
		{"struct kvm_sync_regs", unsafe.Sizeof(syncRegs{}), 0x208},
		{"struct kvm_cpuid_entry2", unsafe.Sizeof(CPUIDEntry{}), 40},
		{"struct kvm_cpuid2 (header)", unsafe.Sizeof(cpuidHeader{}), 8},
		{"struct kvm_userspace_memory_region", unsafe.Sizeof(userspaceMemoryRegion{}), 32},
		{"struct kvm_dirty_log", unsafe.Sizeof(dirtyLog{}), 16},
		{"struct kvm_interrupt", unsafe.Sizeof(interrupt{}), 4},
		{"struct kvm_guest_debug", unsafe.Sizeof(GuestDebug{}), 72},
		{"struct kvm_enable_cap", unsafe.Sizeof(enableCap{}), 104},
		{"struct kvm_msr_filter", unsafe.Sizeof(msrFilter{}), 0x188},
		{"struct kvm_msr_filter_range", unsafe.Sizeof(msrFilterRange{}), 24},
		{"struct kvm_msr_entry", unsafe.Sizeof(MSREntry{}), 16},
		{"struct kvm_msrs (header)", unsafe.Offsetof(msrs{}.Entries), 8},
		{"struct kvm_fpu", unsafe.Sizeof(FPU{}), 416},
		{"struct kvm_xsave", unsafe.Sizeof(XSave{}), 4096},
		{"struct kvm_xcrs", unsafe.Sizeof(XCRs{}), 392},
		{"struct kvm_debug_exit_arch", unsafe.Sizeof(DebugExit{}), 32},
		{"kvm_run header (before the exit union)", unsafe.Sizeof(runHeader{}), 32},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			require.Equal(t, tc.want, tc.got, "unsafe.Sizeof of the Go mirror of %s", tc.kernel)
		})
	}
}

func TestRawStructOffsets(t *testing.T) {
	var r run
	var io ioExit
	var mm mmioExit
	var msr msrExit
	for _, tc := range []struct {
		field string
		got   uintptr
		want  uintptr
	}{
		{"kvm_run.exit_reason", unsafe.Offsetof(r.ExitReason), 8},
		{"kvm_run.ready_for_interrupt_injection", unsafe.Offsetof(r.ReadyForInterruptInjection), 12},
		{"kvm_run.if_flag", unsafe.Offsetof(r.IFFlag), 13},
		{"kvm_run.cr8", unsafe.Offsetof(r.CR8), 16},
		{"kvm_run exit union", unsafe.Offsetof(r.Exit), 32},
		{"kvm_run.kvm_valid_regs", unsafe.Offsetof(r.KVMValidRegs), 0x120},
		{"kvm_run.kvm_dirty_regs", unsafe.Offsetof(r.KVMDirtyRegs), 0x128},
		{"kvm_run.s", unsafe.Offsetof(r.Sync), 0x130},
		// Offsets within the exit union (kernel offset minus 32).
		{"kvm_run.io.port", unsafe.Offsetof(io.Port), 2},
		{"kvm_run.io.count", unsafe.Offsetof(io.Count), 4},
		{"kvm_run.io.data_offset", unsafe.Offsetof(io.DataOffset), 8},
		{"kvm_run.mmio.len", unsafe.Offsetof(mm.Len), 16},
		{"kvm_run.mmio.is_write", unsafe.Offsetof(mm.IsWrite), 20},
		{"kvm_run.msr.reason", unsafe.Offsetof(msr.Reason), 8},
		{"kvm_run.msr.index", unsafe.Offsetof(msr.Index), 12},
		{"kvm_run.msr.data", unsafe.Offsetof(msr.Data), 16},
	} {
		t.Run(tc.field, func(t *testing.T) {
			require.Equal(t, tc.want, tc.got, "offset of %s", tc.field)
		})
	}
	// immediate_exit is byte 1 of the word SetImmediateExit swaps.
	require.Equal(t, uintptr(1), unsafe.Offsetof(r.ImmediateExit))
	// Every exit record must fit the 256-byte union.
	for name, sz := range map[string]uintptr{
		"io": unsafe.Sizeof(io), "mmio": unsafe.Sizeof(mm), "msr": unsafe.Sizeof(msr),
		"debug": unsafe.Sizeof(DebugExit{}), "internal": unsafe.Sizeof(InternalError{}),
	} {
		require.LessOrEqual(t, sz, unsafe.Sizeof(r.Exit), "exit record %s", name)
	}
}

// ioctl number fields (asm-generic/ioctl.h).
func ioctlDir(n uintptr) uintptr  { return n >> 30 }
func ioctlSize(n uintptr) uintptr { return (n >> 16) & 0x3fff }
func ioctlType(n uintptr) uintptr { return (n >> 8) & 0xff }

const (
	dirNone  = 0
	dirWrite = 1 // _IOW: userspace writes the argument to the kernel
	dirRead  = 2 // _IOR
	dirRW    = 3 // _IOWR
)

// TestIoctlNumbers checks that the size encoded in each ioctl number equals
// the Go struct the call site passes (see system.go, vm.go, vcpu.go).
func TestIoctlNumbers(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    uintptr
		nr   uintptr
		dir  uintptr
		size uintptr // of the Go value passed at the call site
	}{
		{"KVM_GET_API_VERSION", ioctlGetAPIVersion, 0x00, dirNone, 0},
		{"KVM_CREATE_VM", ioctlCreateVM, 0x01, dirNone, 0},
		{"KVM_CHECK_EXTENSION", ioctlCheckExtension, 0x03, dirNone, 0},
		{"KVM_GET_VCPU_MMAP_SIZE", ioctlGetVCPUMmapSize, 0x04, dirNone, 0},
		{"KVM_GET_SUPPORTED_CPUID", ioctlGetSupportedCPUID, 0x05, dirRW, unsafe.Sizeof(cpuidHeader{})},
		{"KVM_CREATE_VCPU", ioctlCreateVCPU, 0x41, dirNone, 0},
		{"KVM_GET_DIRTY_LOG", ioctlGetDirtyLog, 0x42, dirWrite, unsafe.Sizeof(dirtyLog{})},
		{"KVM_SET_USER_MEMORY_REGION", ioctlSetUserMemoryRegion, 0x46, dirWrite, unsafe.Sizeof(userspaceMemoryRegion{})},
		{"KVM_SET_TSS_ADDR", ioctlSetTSSAddr, 0x47, dirNone, 0},
		{"KVM_RUN", ioctlRun, 0x80, dirNone, 0},
		{"KVM_GET_REGS", ioctlGetRegs, 0x81, dirRead, unsafe.Sizeof(Regs{})},
		{"KVM_SET_REGS", ioctlSetRegs, 0x82, dirWrite, unsafe.Sizeof(Regs{})},
		{"KVM_GET_SREGS", ioctlGetSregs, 0x83, dirRead, unsafe.Sizeof(Sregs{})},
		{"KVM_SET_SREGS", ioctlSetSregs, 0x84, dirWrite, unsafe.Sizeof(Sregs{})},
		{"KVM_INTERRUPT", ioctlInterrupt, 0x86, dirWrite, unsafe.Sizeof(interrupt{})},
		{"KVM_SET_CPUID2", ioctlSetCPUID2, 0x90, dirWrite, unsafe.Sizeof(cpuidHeader{})},
		{"KVM_SET_GUEST_DEBUG", ioctlSetGuestDebug, 0x9b, dirWrite, unsafe.Sizeof(GuestDebug{})},
		{"KVM_GET_VCPU_EVENTS", ioctlGetVCPUEvents, 0x9f, dirRead, unsafe.Sizeof(VCPUEvents{})},
		{"KVM_SET_VCPU_EVENTS", ioctlSetVCPUEvents, 0xa0, dirWrite, unsafe.Sizeof(VCPUEvents{})},
		{"KVM_ENABLE_CAP", ioctlEnableCap, 0xa3, dirWrite, unsafe.Sizeof(enableCap{})},
		{"KVM_GET_XSAVE", ioctlGetXSave, 0xa4, dirRead, unsafe.Sizeof(XSave{})},
		{"KVM_SET_XSAVE", ioctlSetXSave, 0xa5, dirWrite, unsafe.Sizeof(XSave{})},
		{"KVM_GET_XCRS", ioctlGetXCRs, 0xa6, dirRead, unsafe.Sizeof(XCRs{})},
		{"KVM_SET_XCRS", ioctlSetXCRs, 0xa7, dirWrite, unsafe.Sizeof(XCRs{})},
		{"KVM_X86_SET_MSR_FILTER", ioctlX86SetMSRFilter, 0xc6, dirWrite, unsafe.Sizeof(msrFilter{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, uintptr(0xae), ioctlType(tc.n), "type (KVMIO)")
			require.Equal(t, tc.nr, tc.n&0xff, "command number")
			require.Equal(t, tc.dir, ioctlDir(tc.n), "direction")
			require.Equal(t, tc.size, ioctlSize(tc.n), "encoded size vs Go struct size")
		})
	}
}

func TestCPUID2BufferLayout(t *testing.T) {
	b := newCPUID2Buffer(3)
	require.Len(t, b.buf, 8+3*40)
	b.header().Nent = 2
	es := b.entries()
	require.Len(t, es, 2)
	es[1].Function = 0xdeadbeef
	// Entry 1 starts after the 8-byte header and one 40-byte entry.
	require.Equal(t, []byte{0xef, 0xbe, 0xad, 0xde}, b.buf[8+40:8+44])
	require.Equal(t, uintptr(unsafe.Pointer(&b.buf[0])), b.ptr())
}

func TestSetImmediateExitTouchesOnlyItsByte(t *testing.T) {
	mem := make([]byte, 4096)
	c := newVCPU(0, -1, mem)
	c.RequestInterruptWindow(true)
	mem[2], mem[3] = 0x5a, 0xa5
	c.SetImmediateExit(true)
	require.Equal(t, []byte{1, 1, 0x5a, 0xa5}, mem[:4])
	c.SetImmediateExit(false)
	require.Equal(t, []byte{1, 0, 0x5a, 0xa5}, mem[:4])
}

func TestExitRecordsDecode(t *testing.T) {
	mem := make([]byte, 4096)
	c := newVCPU(3, -1, mem)
	r := (*run)(unsafe.Pointer(&mem[0]))

	r.ExitReason = ExitIO
	*exitAs[ioExit](r) = ioExit{Direction: IOOut, Size: 2, Port: 0x3f8, Count: 3, DataOffset: 0x800}
	copy(mem[0x800:], []byte{1, 2, 3, 4, 5, 6})
	io := c.IOExit()
	require.Equal(t, ExitIO, c.ExitReason())
	require.Equal(t, uint16(0x3f8), io.Port)
	require.True(t, io.Out)
	require.Equal(t, []byte{1, 2, 3, 4, 5, 6}, io.Data)

	// A data offset pointing past the mapping yields no data, not a panic.
	*exitAs[ioExit](r) = ioExit{Size: 4, Count: 1 << 20, DataOffset: 0x800}
	require.Nil(t, c.IOExit().Data)

	*exitAs[mmioExit](r) = mmioExit{PhysAddr: 0xfee00000, Len: 200, IsWrite: 1}
	mm := c.MMIOExit()
	require.Equal(t, uint64(0xfee00000), mm.Addr)
	require.True(t, mm.Write)
	require.Len(t, mm.Data, 8, "len is clamped to the 8-byte data field")

	*exitAs[msrExit](r) = msrExit{Index: 0xc0000080, Data: 7}
	require.Equal(t, MSR{Index: 0xc0000080, Data: 7}, c.MSRExit())
	c.CompleteMSR(0x1234, true)
	m := exitAs[msrExit](r)
	require.Equal(t, uint64(0x1234), m.Data)
	require.Equal(t, uint8(1), m.Error)
}
