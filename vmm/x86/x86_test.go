package x86_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/x86"
)

const mib = 1 << 20

func newRAM(t *testing.T, size uint64) *memory.RAM {
	t.Helper()
	ram, err := memory.New(size)
	require.NoError(t, err)
	t.Cleanup(func() { ram.Close() })
	return ram
}

func TestPageTablePermissions(t *testing.T) {
	const size = 64 * mib
	ram := newRAM(t, size)
	require.NoError(t, x86.BuildPageTables(ram))

	_, err := x86.Walk(ram, abi.PML4, 0)
	require.ErrorIs(t, err, x86.ErrNotMapped, "page 0 must fault")
	_, err = x86.Walk(ram, abi.PML4, 0xfff)
	require.ErrorIs(t, err, x86.ErrNotMapped, "last byte of page 0 must fault")

	type perm struct{ user, write bool }
	want := func(gva uint64) perm {
		switch {
		case gva >= abi.Clock && gva < abi.Clock+0x1000:
			return perm{user: true, write: false}
		case gva >= abi.SWBC && gva < abi.SWBC+0x1000:
			return perm{user: true, write: true}
		case gva >= abi.ProbeArea && gva < abi.ProbeArea+abi.ProbeAreaSize:
			return perm{user: true, write: false}
		case gva < abi.UserBase:
			return perm{user: false, write: true}
		default:
			return perm{user: true, write: true}
		}
	}
	check := func(gva uint64) {
		m, err := x86.Walk(ram, abi.PML4, gva)
		require.NoError(t, err, "gva %#x", gva)
		require.Equal(t, gva, m.GPA, "identity map at %#x", gva)
		require.Equal(t, want(gva), perm{user: m.User, write: m.Write}, "permissions at %#x", gva)
	}
	// Every 4 KiB page of the system area, at its first and last byte.
	for p := uint64(0x1000); p < 2*mib; p += 0x1000 {
		check(p)
		check(p + 0xfff)
	}
	for _, gva := range []uint64{
		abi.KernelBase, abi.KernelBase + 0x1234, abi.UserBase - 1, // kernel window
		abi.UserBase, abi.UserBase + 0x10_0001, 32*mib + 5, size - 1, // user
	} {
		check(gva)
	}
	// The named system pages explicitly, in case the loop's model is wrong.
	for _, tc := range []struct {
		gva         uint64
		user, write bool
	}{
		{abi.PML4, false, true},
		{abi.GDT, false, true},
		{abi.TSS, false, true},
		{abi.BootInfo, false, true},
		{abi.Clock, true, false},
		{abi.SWBC, true, true},
		{0x3ff000, false, true},
		{0x400000, true, true},
	} {
		m, err := x86.Walk(ram, abi.PML4, tc.gva)
		require.NoError(t, err)
		require.Equal(t, tc.user, m.User, "user bit at %#x", tc.gva)
		require.Equal(t, tc.write, m.Write, "write bit at %#x", tc.gva)
	}

	for _, gva := range []uint64{
		size, size + 2*mib, size + 0x1234, 1 << 30, 5 << 30, 1 << 47, 0xffff_8000_0000_0000, ^uint64(0),
	} {
		_, err := x86.Walk(ram, abi.PML4, gva)
		require.ErrorIs(t, err, x86.ErrNotMapped, "gva %#x is beyond RAM", gva)
	}
}

func TestWalkHostileTables(t *testing.T) {
	ram := newRAM(t, 8*mib)
	// A CR3 outside RAM is a bounds error, not a panic or ErrNotMapped.
	_, err := x86.Walk(ram, 1<<40, 0x1000)
	var re *memory.RangeError
	require.ErrorAs(t, err, &re)

	// A PML4 entry pointing outside RAM: same.
	require.NoError(t, ram.PutUint64(abi.PML4, 0x000f_ffff_ffff_f000|x86.PTEPresent))
	_, err = x86.Walk(ram, abi.PML4, 0x1000)
	require.ErrorAs(t, err, &re)

	// A 1 GiB page (PS in a PDPT entry) maps with a 1 GiB offset.
	require.NoError(t, ram.PutUint64(abi.PML4, abi.PDPT|x86.PTEPresent|x86.PTEWrite))
	require.NoError(t, ram.PutUint64(abi.PDPT, 0x4000_0000|x86.PTEPresent|x86.PTELarge))
	m, err := x86.Walk(ram, abi.PML4, 0x1234_5678)
	require.NoError(t, err)
	require.Equal(t, uint64(0x5234_5678), m.GPA)
	require.False(t, m.Write)
	require.False(t, m.User)
}

func TestBuildPageTablesRejectsSizes(t *testing.T) {
	// Sizes that are not a positive multiple of 2 MiB cannot be built
	// (memory.New refuses them, see memory_test.go), so only the range
	// limits are reachable here.
	for _, size := range []uint64{2 * mib, 4 * mib, abi.MinGuestBytes - 2*mib} {
		require.Error(t, x86.BuildPageTables(newRAM(t, size)), "size %#x below MinGuestBytes", size)
	}
	require.NoError(t, x86.BuildPageTables(newRAM(t, abi.MinGuestBytes)))
}

// descriptor is a decoded 8-byte code/data/system segment descriptor.
type descriptor struct {
	base, limit uint64
	access      uint8 // P, DPL, S, type
	flags       uint8 // G, D/B, L, AVL
}

func decode(d uint64) descriptor {
	return descriptor{
		limit:  d&0xffff | (d>>48&0xf)<<16,
		base:   d>>16&0xffffff | (d>>56&0xff)<<24,
		access: uint8(d >> 40),
		flags:  uint8(d>>52) & 0xf,
	}
}

func TestBuildGDT(t *testing.T) {
	ram := newRAM(t, 8*mib)
	require.NoError(t, x86.BuildGDT(ram))
	word := func(off uint64) uint64 {
		v, err := ram.Uint64(abi.GDT + off)
		require.NoError(t, err)
		return v
	}
	require.Zero(t, word(0), "null descriptor")

	for _, tc := range []struct {
		sel       uint64
		code      bool
		dpl       uint8
		longMode  bool
		writeable bool
	}{
		{abi.SelKernelCode, true, 0, true, false},
		{abi.SelKernelData, false, 0, false, true},
		{abi.SelUserData &^ 3, false, 3, false, true},
		{abi.SelUserCode &^ 3, true, 3, true, false},
	} {
		d := decode(word(tc.sel))
		require.Equal(t, uint8(0x80), d.access&0x80, "selector %#x present", tc.sel)
		require.Equal(t, uint8(0x10), d.access&0x10, "selector %#x is code/data", tc.sel)
		require.Equal(t, tc.dpl, d.access>>5&3, "selector %#x DPL", tc.sel)
		require.Equal(t, tc.code, d.access&0x08 != 0, "selector %#x executable", tc.sel)
		require.Equal(t, tc.longMode, d.flags&0x2 != 0, "selector %#x L bit", tc.sel)
		if tc.longMode {
			require.Zero(t, d.flags&0x4, "selector %#x: L=1 requires D=0", tc.sel)
		}
		if !tc.code {
			require.Equal(t, tc.writeable, d.access&0x02 != 0, "selector %#x writable", tc.sel)
		}
	}

	// The user selectors carry RPL 3 so iretq to CPL3 accepts them.
	require.Equal(t, 3, abi.SelUserCode&3)
	require.Equal(t, 3, abi.SelUserData&3)

	tss := decode(word(abi.SelTSS))
	require.Equal(t, uint64(abi.TSS), tss.base|word(abi.SelTSS+8)<<32)
	require.Equal(t, uint64(0x68+8192), tss.limit, "TSS limit covers the header, the bitmap and the 0xFF byte")
	require.Equal(t, uint8(0x89), tss.access, "present, DPL0, available 64-bit TSS")
	require.Zero(t, tss.flags&0x8, "byte-granular limit")
}

func TestBuildTSS(t *testing.T) {
	ram := newRAM(t, 8*mib)
	// Dirty the area first: BuildTSS must not rely on zeroed RAM.
	junk, err := ram.Slice(abi.TSS, 0x3000)
	require.NoError(t, err)
	for i := range junk {
		junk[i] = 0xa5
	}
	require.NoError(t, x86.BuildTSS(ram))
	tss, err := ram.Slice(abi.TSS, 0x68+8192+1)
	require.NoError(t, err)
	le64 := binary.LittleEndian.Uint64

	require.Equal(t, uint64(abi.BootStackTop), le64(tss[4:]), "RSP0")
	require.Equal(t, uint64(abi.IST1Top), le64(tss[36:]), "IST1")
	require.Equal(t, uint64(abi.IST2Top), le64(tss[44:]), "IST2")
	for _, off := range []int{12, 20, 28, 52, 60, 68, 76, 84, 92} { // RSP1, RSP2, reserved, IST3..IST7, reserved
		require.Zero(t, le64(tss[off:]), "TSS word at %d", off)
	}
	require.Equal(t, uint16(0x68), binary.LittleEndian.Uint16(tss[0x66:]), "I/O map base")
	require.Equal(t, uint8(0xff), tss[len(tss)-1], "trailing all-ones byte")

	bitmap := tss[0x68 : 0x68+8192]
	allowed := func(port uint16) bool { return bitmap[port/8]&(1<<(port%8)) == 0 }
	for _, tc := range []struct {
		port  uint16
		allow bool
	}{
		{abi.PortSWBC, true},
		{abi.PortNull, true},
		{abi.PortSyscall, true},
		{abi.PortProbe, true},
		{abi.PortSWBC - 1, false},
		{abi.PortTrap, false}, // from CPL0 exception stubs only
		{abi.PortNull + 1, false},
		{abi.PortSerial, false},
		{abi.PortExit, false},
		{abi.PortHcall, false},
		{abi.PortTimer, false},
		{abi.PortIntcMask, false},
		{0, false},
		{0xffff, false},
	} {
		require.Equal(t, tc.allow, allowed(tc.port), "port %#x", tc.port)
	}
	n := 0
	for p := 0; p < 0x10000; p++ {
		if allowed(uint16(p)) {
			n++
		}
	}
	require.Equal(t, 4, n, "exactly the four user ports are open")
}

func TestBuildIDTEmpty(t *testing.T) {
	ram := newRAM(t, 8*mib)
	idt, err := ram.Slice(abi.IDT, 4096)
	require.NoError(t, err)
	for i := range idt {
		idt[i] = 0x77
	}
	require.NoError(t, x86.BuildIDT(ram, 0))
	require.Equal(t, make([]byte, 4096), idt)
}

func TestBuildIDT(t *testing.T) {
	ram := newRAM(t, 8*mib)
	const base = 0x1234_5678_9abc_0000 // exercises all three offset fields
	require.NoError(t, x86.BuildIDT(ram, base))
	idt, err := ram.Slice(abi.IDT, 4096)
	require.NoError(t, err)
	for v := 0; v < 256; v++ {
		lo := binary.LittleEndian.Uint64(idt[v*16:])
		hi := binary.LittleEndian.Uint64(idt[v*16+8:])
		target := lo&0xffff | (lo>>48)<<16 | hi<<32
		require.Equal(t, uint64(base+16*v), target, "vector %d handler", v)
		require.Equal(t, uint64(abi.SelKernelCode), lo>>16&0xffff, "vector %d selector", v)
		ist := lo >> 32 & 7
		attr := uint8(lo >> 40)
		require.Equal(t, uint8(0x80), attr&0x80, "vector %d present", v)
		require.Equal(t, uint8(0xe), attr&0x1f, "vector %d is a 64-bit interrupt gate", v)
		dpl := attr >> 5 & 3
		switch v {
		case 2, 8, 18:
			require.Equal(t, uint64(1), ist, "vector %d IST", v)
		case 3:
			require.Equal(t, uint64(2), ist, "vector %d IST", v)
		default:
			require.Zero(t, ist, "vector %d IST", v)
		}
		if v == 3 {
			require.Equal(t, uint8(3), dpl, "int3 must be callable from CPL3")
		} else {
			require.Zero(t, dpl, "vector %d DPL", v)
		}
		require.Zero(t, hi>>32, "vector %d reserved dword", v)
	}
}

func TestTablesDoNotOverlap(t *testing.T) {
	// Build everything into one RAM and check each structure survived the
	// others being written after it.
	ram := newRAM(t, 8*mib)
	require.NoError(t, x86.BuildIDT(ram, 0x200000))
	require.NoError(t, x86.BuildTSS(ram))
	require.NoError(t, x86.BuildGDT(ram))
	require.NoError(t, x86.BuildPageTables(ram))
	lo, err := ram.Uint64(abi.IDT + 3*16)
	require.NoError(t, err)
	require.Equal(t, uint64(0x200030), lo&0xffff|(lo>>48)<<16)
	rsp0, err := ram.Uint64(abi.TSS + 4)
	require.NoError(t, err)
	require.Equal(t, uint64(abi.BootStackTop), rsp0)
	m, err := x86.Walk(ram, abi.PML4, abi.UserBase)
	require.NoError(t, err)
	require.True(t, m.User)
}

func TestLongModeSregs(t *testing.T) {
	s := x86.LongModeSregs(kvm.Sregs{CR2: 0xdead, APICBase: 0xfee00900})
	for _, bit := range []uint64{x86.CR0PG, x86.CR0PE, x86.CR0WP} {
		require.Equal(t, bit, s.CR0&bit, "CR0 bit %#x", bit)
	}
	require.Equal(t, uint64(x86.CR4PAE), s.CR4&x86.CR4PAE)
	require.Equal(t, uint64(x86.EFERLME|x86.EFERLMA), s.EFER&(x86.EFERLME|x86.EFERLMA))
	require.Equal(t, uint64(abi.PML4), s.CR3)
	require.Equal(t, uint8(1), s.CS.L, "64-bit code segment")
	require.Zero(t, s.CS.DB, "L=1 requires D=0")
	require.Equal(t, uint16(abi.SelKernelCode), s.CS.Selector)
	require.Zero(t, s.CS.DPL)
	for _, seg := range []kvm.Segment{s.DS, s.ES, s.FS, s.GS, s.SS} {
		require.Equal(t, uint16(abi.SelKernelData), seg.Selector)
		require.Equal(t, uint8(1), seg.Present)
	}
	require.Equal(t, uint64(abi.TSS), s.TR.Base)
	require.Equal(t, uint16(abi.SelTSS), s.TR.Selector)
	require.Equal(t, uint8(0xb), s.TR.Type, "busy 64-bit TSS")
	require.Equal(t, uint32(0x68+8192), s.TR.Limit)
	require.Equal(t, uint64(abi.GDT), s.GDT.Base)
	require.Equal(t, uint16(8*7-1), s.GDT.Limit)
	require.Equal(t, uint64(abi.IDT), s.IDT.Base)
	require.Equal(t, uint16(256*16-1), s.IDT.Limit)
	require.Equal(t, uint8(1), s.LDT.Unusable)
	// Fields it does not own pass through.
	require.Equal(t, uint64(0xdead), s.CR2)
	require.Equal(t, uint64(0xfee00900), s.APICBase)
}

func TestEntryRegs(t *testing.T) {
	r := x86.EntryRegs(0x200010)
	require.Equal(t, uint64(0x200010), r.RIP)
	require.Equal(t, uint64(abi.BootStackTop), r.RSP)
	require.Equal(t, uint64(abi.BootInfo), r.RDI)
	require.Zero(t, r.RFLAGS&x86.RFLAGSIF, "interrupts off at entry")
	require.Equal(t, uint64(x86.RFLAGSReserved), r.RFLAGS&x86.RFLAGSReserved)
}

// The countdown region: its guard page reaches the unbacked guard frame,
// every other page the read-only zero frame, from the first count to the
// last, user-readable and never writable; and the entries carry their
// accessed bit already, so walking them writes nothing to guest RAM.
func TestCounterRegionMaps(t *testing.T) {
	ram := newRAM(t, 8<<20)
	require.NoError(t, x86.BuildPageTables(ram))
	require.NoError(t, x86.BuildCounterRegion(ram))
	for _, tc := range []struct{ gva, gpa uint64 }{
		{abi.CounterBase, abi.CounterGuard},
		{abi.CounterGuardTop, abi.CounterGuard + 0xfff},
		{abi.CounterGuardTop + 1, abi.CounterZero},
		{abi.CounterBase + 1<<21 + 5, abi.CounterZero + 5},
		{abi.CounterBase + 1<<30 + 0x1234, abi.CounterZero + 0x234},
		{abi.CounterBase + abi.CounterSpan - 1, abi.CounterZero + 0xfff},
	} {
		mp, err := x86.Walk(ram, abi.PML4, tc.gva)
		require.NoError(t, err, "%#x", tc.gva)
		require.Equal(t, tc.gpa, mp.GPA, "%#x", tc.gva)
		require.True(t, mp.User, "%#x", tc.gva)
		require.False(t, mp.Write, "%#x", tc.gva)
	}
	_, err := x86.Walk(ram, abi.PML4, abi.CounterBase+abi.CounterSpan)
	require.ErrorIs(t, err, x86.ErrNotMapped, "past the region")
	tables := ram.Mapping()[abi.CounterTables:abi.CounterZero]
	for i := 0; i < len(tables); i += 8 {
		require.NotZero(t, tables[i]&x86.PTEAccessed, "entry at %#x", abi.CounterTables+i)
	}
}
