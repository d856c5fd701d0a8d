package x86

import (
	"encoding/binary"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// GDT descriptors, in selector order (abi.Sel*). The TSS descriptor (16
// bytes) follows at abi.SelTSS.
var gdtEntries = []uint64{
	0,                  // null
	0x00af9b000000ffff, // 0x08 kernel code, 64-bit, DPL0
	0x00cf93000000ffff, // 0x10 kernel data
	0x00cff3000000ffff, // 0x18 user data, DPL3
	0x00affb000000ffff, // 0x20 user code, 64-bit, DPL3
}

// TSS layout (Intel SDM vol. 3 §8.7, 64-bit TSS).
const (
	tssSize       = 0x68
	tssRSP0       = 4
	tssIST1       = 36
	tssIOMapBase  = 0x66
	ioBitmapBytes = 65536 / 8
	tssLimit      = tssSize + ioBitmapBytes // inclusive: covers the trailing 0xFF byte
	gdtLimit      = 8*7 - 1
	idtLimit      = 256*16 - 1
	gateInterrupt = 0x8e // present, DPL0, 64-bit interrupt gate
	gateDPL3      = 0x60
)

// userPorts are the only I/O ports CPL3 code may touch directly: the swbc
// hook's port, the probe port (a replay's probe sites exit through it
// without a trap into the guest kernel first), the benchmark null port and
// the system-call port (where a CPL3 SYSCALL stays at CPL3, its stub exits
// from there). Everything else #GPs into the guest kernel.
var userPorts = []uint16{abi.PortSWBC, abi.PortProbe, abi.PortNull, abi.PortSyscall}

// istOf assigns interrupt-stack-table slots: faults that must not run on a
// possibly broken stack get IST1; #BP gets IST2 so probes work whatever the
// interrupted code did to its stack.
func istOf(vector int) uint64 {
	switch vector {
	case 2, 8, 18: // NMI, #DF, #MC
		return 1
	case 3: // #BP
		return 2
	}
	return 0
}

// BuildGDT writes the GDT, including the TSS descriptor.
func BuildGDT(ram *memory.RAM) error {
	for i, d := range gdtEntries {
		if err := ram.PutUint64(abi.GDT+uint64(i)*8, d); err != nil {
			return err
		}
	}
	base, limit := uint64(abi.TSS), uint64(tssLimit)
	lo := limit&0xffff | (base&0xffffff)<<16 | uint64(0x89)<<40 | (limit>>16&0xf)<<48 | (base>>24&0xff)<<56
	if err := ram.PutUint64(abi.GDT+abi.SelTSS, lo); err != nil {
		return err
	}
	return ram.PutUint64(abi.GDT+abi.SelTSS+8, base>>32)
}

// BuildTSS writes the TSS: RSP0 (the kernel rewrites it at each thread
// switch), the IST stacks and an I/O bitmap that denies every port to CPL3
// except userPorts.
func BuildTSS(ram *memory.RAM) error {
	t, err := ram.Slice(abi.TSS, tssLimit+1)
	if err != nil {
		return err
	}
	clear(t[:tssSize])
	binary.LittleEndian.PutUint64(t[tssRSP0:], abi.BootStackTop)
	binary.LittleEndian.PutUint64(t[tssIST1:], abi.IST1Top)
	binary.LittleEndian.PutUint64(t[tssIST1+8:], abi.IST2Top)
	binary.LittleEndian.PutUint16(t[tssIOMapBase:], tssSize)
	bitmap := t[tssSize:]
	for i := range bitmap {
		bitmap[i] = 0xff // deny; the last byte must stay all ones
	}
	for _, p := range userPorts {
		bitmap[p/8] &^= 1 << (p % 8)
	}
	return nil
}

// SetGateIST makes the gate of vector take its stack from IST slot ist
// (0: the current stack or RSP0).
func SetGateIST(ram *memory.RAM, vector int, ist uint64) error {
	gate, err := ram.Slice(abi.IDT+uint64(vector)*16, 16)
	if err != nil {
		return err
	}
	gate[4] = gate[4]&^7 | byte(ist&7)
	return nil
}

// BuildIDT points vector v at vectors + v*abi.VectorStubSize. With
// vectors == 0 every gate is absent, so any exception triple-faults: the
// right behaviour for a bare image that brings no handlers.
func BuildIDT(ram *memory.RAM, vectors uint64) error {
	idt, err := ram.Slice(abi.IDT, idtLimit+1)
	if err != nil {
		return err
	}
	clear(idt)
	if vectors == 0 {
		return nil
	}
	for v := 0; v < 256; v++ {
		h := vectors + uint64(v)*abi.VectorStubSize
		attr := uint64(gateInterrupt)
		if v == 3 {
			attr |= gateDPL3 // int3 from CPL3 must reach #BP, not #GP
		}
		lo := h&0xffff | uint64(abi.SelKernelCode)<<16 | istOf(v)<<32 | attr<<40 | (h>>16&0xffff)<<48
		binary.LittleEndian.PutUint64(idt[v*16:], lo)
		binary.LittleEndian.PutUint64(idt[v*16+8:], h>>32)
	}
	return nil
}
