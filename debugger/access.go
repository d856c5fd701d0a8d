package debugger

import (
	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/kvm"
)

// Read and access watches (gdb's rwatch and awatch): a replay steps every
// thread as for a write watch, and before each step decodes the
// instruction the thread is about to run, working out the memory it
// reads or writes from its registers — its operands, a string
// instruction's elements (a REP string instruction traps after each
// iteration, one element at a time) and the stack's implicit slots. A watch is hit when the
// instruction touched its memory: an access watch by any access, a read
// watch by a read. The kernel's accesses on the program's behalf (a
// system call's) are not the program's instructions and are not seen,
// as with hardware watchpoints under ptrace.

// access is memory an instruction touches: size bytes at addr; read, or
// only written.
type access struct {
	addr, size uint64
	read       bool
}

// touches reports whether a touches [addr, addr+size).
func (a access) touches(addr, size uint64) bool {
	return a.addr < addr+size && addr < a.addr+a.size
}

// maxAccess bounds the bytes one operand is taken to touch (XSAVE's
// area is the largest).
const maxAccess = 4096

// noAccess are instructions with a memory operand that reach no memory.
var noAccess = map[x86asm.Op]bool{
	x86asm.LEA: true, x86asm.NOP: true, x86asm.PREFETCHNTA: true, x86asm.PREFETCHT0: true,
	x86asm.PREFETCHT1: true, x86asm.PREFETCHT2: true, x86asm.PREFETCHW: true, x86asm.CLFLUSH: true,
}

// writeOnly are instructions whose first operand, in memory, is written
// without being read.
var writeOnly = map[x86asm.Op]bool{
	x86asm.MOV: true, x86asm.MOVAPS: true, x86asm.MOVAPD: true, x86asm.MOVUPS: true, x86asm.MOVUPD: true,
	x86asm.MOVDQA: true, x86asm.MOVDQU: true, x86asm.MOVQ: true, x86asm.MOVD: true, x86asm.MOVNTI: true,
	x86asm.MOVNTDQ: true, x86asm.MOVNTPS: true, x86asm.MOVNTPD: true, x86asm.MOVSS: true, x86asm.MOVSD_XMM: true,
	x86asm.MOVLPS: true, x86asm.MOVHPS: true, x86asm.MOVLPD: true, x86asm.MOVHPD: true, x86asm.MOVBE: true,
	x86asm.SETA: true, x86asm.SETAE: true, x86asm.SETB: true, x86asm.SETBE: true, x86asm.SETE: true,
	x86asm.SETG: true, x86asm.SETGE: true, x86asm.SETL: true, x86asm.SETLE: true, x86asm.SETNE: true,
	x86asm.SETNO: true, x86asm.SETNP: true, x86asm.SETNS: true, x86asm.SETO: true, x86asm.SETP: true,
	x86asm.SETS: true, x86asm.FXSAVE: true, x86asm.FXSAVE64: true, x86asm.XSAVE: true, x86asm.XSAVE64: true,
	x86asm.STMXCSR: true, x86asm.FNSTCW: true, x86asm.FNSTSW: true,
	x86asm.MOVSB: true, x86asm.MOVSW: true, x86asm.MOVSD: true, x86asm.MOVSQ: true,
	x86asm.STOSB: true, x86asm.STOSW: true, x86asm.STOSD: true, x86asm.STOSQ: true,
}

// accesses decodes the instruction code begins with, about to run with
// registers regs (RIP at it) and FS base fs, and returns the memory it
// touches (GS-relative operands taken with a GS base of 0: Linux
// programs do not use it). An instruction that does not decode touches nothing known.
func accesses(code []byte, regs *kvm.Regs, fs uint64) []access {
	inst, err := x86asm.Decode(code, 64)
	if err != nil || noAccess[inst.Op] {
		return nil
	}
	next := regs.RIP + uint64(inst.Len)
	var out []access
	for i, arg := range inst.Args {
		m, ok := arg.(x86asm.Mem)
		if !ok {
			continue
		}
		addr := uint64(int64(reg(m.Base, regs, next)) + m.Disp)
		addr += reg(m.Index, regs, next) * uint64(m.Scale)
		if m.Segment == x86asm.FS {
			addr += fs
		}
		size := uint64(max(inst.MemBytes, 1))
		if n, ok := stringElem[inst.Op]; ok {
			size = n // the decoder gives 1 for any
		}
		out = append(out, access{addr: addr, size: min(size, maxAccess), read: i > 0 || !writeOnly[inst.Op]})
	}
	return append(out, implicit(inst, regs)...)
}

// implicit is the memory inst touches without naming it: the stack's
// top. (The decoder names a string instruction's elements, at RSI and
// RDI.)
func implicit(inst x86asm.Inst, regs *kvm.Regs) []access {
	switch inst.Op {
	case x86asm.PUSH, x86asm.CALL, x86asm.PUSHF, x86asm.PUSHFQ:
		return []access{{addr: regs.RSP - 8, size: 8}}
	case x86asm.POP, x86asm.RET, x86asm.POPF, x86asm.POPFQ:
		return []access{{addr: regs.RSP, size: 8, read: true}}
	case x86asm.LEAVE:
		return []access{{addr: regs.RBP, size: 8, read: true}}
	}
	return nil
}

// stringElem is a string instruction's element size.
var stringElem = map[x86asm.Op]uint64{
	x86asm.MOVSB: 1, x86asm.MOVSW: 2, x86asm.MOVSD: 4, x86asm.MOVSQ: 8,
	x86asm.CMPSB: 1, x86asm.CMPSW: 2, x86asm.CMPSD: 4, x86asm.CMPSQ: 8,
	x86asm.LODSB: 1, x86asm.LODSW: 2, x86asm.LODSD: 4, x86asm.LODSQ: 8,
	x86asm.STOSB: 1, x86asm.STOSW: 2, x86asm.STOSD: 4, x86asm.STOSQ: 8,
	x86asm.SCASB: 1, x86asm.SCASW: 2, x86asm.SCASD: 4, x86asm.SCASQ: 8,
}

// reg is register r's value (RIP: next, the instruction's end, as
// RIP-relative addressing has it; 0 for none).
func reg(r x86asm.Reg, regs *kvm.Regs, next uint64) uint64 {
	switch {
	case r == x86asm.RIP:
		return next
	case r >= x86asm.RAX && r <= x86asm.R15:
		return []uint64{regs.RAX, regs.RCX, regs.RDX, regs.RBX, regs.RSP, regs.RBP, regs.RSI, regs.RDI,
			regs.R8, regs.R9, regs.R10, regs.R11, regs.R12, regs.R13, regs.R14, regs.R15}[r-x86asm.RAX]
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return uint64(uint32(reg(r-x86asm.EAX+x86asm.RAX, regs, next)))
	}
	return 0
}
