package cost

import (
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// A location holds a value a chain of dependent instructions passes
// through: a general register, the flags, or a memory operand the way
// touches (by its address expression).
type location int

const (
	flags    location = 16
	firstMem location = 17
	maxMem            = 16 // memory operands tracked per way; more are not
	nLoc              = int(firstMem) + maxMem
)

// Latencies in cycles, as on recent x86 cores (Agner Fog's tables for Ice
// Lake and later): the kit's user code is integer code
// (-mgeneral-regs-only).
const (
	latLoad   = 5 // an L1 hit, or a store forwarded to a load
	latALU    = 1
	latMul    = 3
	latWide   = 4 // one-operand mul: rdx:rax
	latDiv32  = 12
	latDiv64  = 15
	latLocked = 18 // an atomic read-modify-write (lock prefix, xchg with memory)
)

// dists is, for each location, the longest chain from each location's
// value at the way's start to its value now (-1: it does not depend on
// it).
type dists [nLoc][nLoc]int32

// chainer follows a way's dependencies.
type chainer struct {
	d    dists
	mems []string // the memory operands' addresses, by location - firstMem
}

// chain returns the way's longest dependency chain: for a loop's way, the
// longest a location's value at the end depends on its own value at the
// start (what one iteration adds to the next); otherwise the longest
// from any register at the start to any register or memory the way
// leaves a value in. With the register counter (r15), the counter's own
// registers are left out: r15 is one lea a count, and the load into r14
// is never used.
func (w *way) chain(r15Counter bool) float64 {
	c := &chainer{}
	for i := range c.d {
		for j := range c.d[i] {
			c.d[i][j] = -1
		}
		c.d[i][i] = 0
	}
	for _, in := range w.insts {
		c.step(in)
	}
	skip := func(l location) bool { return l == rsp || r15Counter && (l == r14 || l == r15) }
	var longest int32
	for l := range location(nLoc) {
		if skip(l) {
			continue
		}
		if w.loop {
			longest = max(longest, c.d[l][l])
			continue
		}
		if l == flags {
			continue
		}
		for src := range location(flags) {
			if !skip(src) {
				longest = max(longest, c.d[l][src])
			}
		}
	}
	return float64(longest)
}

// barriers returns the cycles the way's locked instructions cost: each
// drains the core's stores before it goes on, so nothing overlaps it.
func (w *way) barriers() float64 {
	var c float64
	for _, in := range w.insts {
		if locked(in.Inst) {
			c += latLocked
		}
	}
	return c
}

// locked reports whether inst is an atomic read-modify-write or a fence.
func locked(inst x86asm.Inst) bool {
	if inst.Op == x86asm.MFENCE {
		return true
	}
	for _, p := range inst.Prefix {
		if p&0xFF == x86asm.PrefixLOCK {
			return true
		}
	}
	if inst.Op == x86asm.XCHG {
		for _, a := range inst.Args {
			if _, mem := a.(x86asm.Mem); mem {
				return true
			}
		}
	}
	return false
}

// Register locations the chains treat apart.
const (
	rax location = 0
	rdx location = 2
	rsp location = 4
	rbp location = 5
	r14 location = 14
	r15 location = 15
)

// reg maps a general register of any width to its location.
func reg(r x86asm.Reg) (location, bool) {
	switch {
	case r >= x86asm.RAX && r <= x86asm.R15:
		return location(r - x86asm.RAX), true
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return location(r - x86asm.EAX), true
	case r >= x86asm.AX && r <= x86asm.R15W:
		return location(r - x86asm.AX), true
	case r >= x86asm.AL && r <= x86asm.R15B:
		i := location(r - x86asm.AL)
		if i >= 4 {
			i -= 4 // AH, CH, DH, BH; then SPL... come after them
		}
		return i, true
	}
	return 0, false
}

// narrow reports whether writing r keeps the rest of its register (8 and
// 16-bit registers; a 32-bit write clears the upper half).
func narrow(r x86asm.Reg) bool { return r >= x86asm.AL && r <= x86asm.R15W }

// effect is what one instruction reads and writes.
type effect struct {
	reads  []location
	addr   []location // registers an address depends on
	load   bool       // it reads the memory operand
	store  bool       // it writes the memory operand
	mem    x86asm.Mem
	writes []location
	lat    int32
	fresh  bool // its result depends on nothing (a zeroing idiom, an immediate)
}

// step applies one instruction to the chains.
func (c *chainer) step(in located) {
	e := effectOf(in.Inst)
	var v [nLoc]int32
	for i := range v {
		v[i] = -1
	}
	if !e.fresh {
		for _, r := range e.reads {
			maxInto(&v, &c.d[r], 0)
		}
		if e.load {
			var a [nLoc]int32
			for i := range a {
				a[i] = -1
			}
			for _, r := range e.addr {
				maxInto(&a, &c.d[r], 0)
			}
			if m, ok := c.memory(in, e.mem); ok {
				maxInto(&a, &c.d[m], 0)
			}
			maxInto(&v, &a, latLoad)
		}
	}
	for i := range v {
		if v[i] >= 0 {
			v[i] += e.lat
		}
	}
	for _, w := range e.writes {
		c.d[w] = v
	}
	if e.store {
		if m, ok := c.memory(in, e.mem); ok {
			c.d[m] = v
		}
	}
}

// memory returns the location of a memory operand, numbering it if new.
func (c *chainer) memory(in located, m x86asm.Mem) (location, bool) {
	key := m.String()
	if m.Base == x86asm.RIP {
		key = x86asm.Mem{Disp: int64(in.addr) + int64(in.Len) + m.Disp}.String()
	}
	for i, k := range c.mems {
		if k == key {
			return firstMem + location(i), true
		}
	}
	if len(c.mems) == maxMem {
		return 0, false
	}
	c.mems = append(c.mems, key)
	return firstMem + location(len(c.mems)-1), true
}

func maxInto(dst, src *[nLoc]int32, add int32) {
	for i, s := range src {
		if s >= 0 {
			dst[i] = max(dst[i], s+add)
		}
	}
}

// effectOf classifies inst: which operands it reads and writes, and its
// latency.
func effectOf(inst x86asm.Inst) effect {
	e := effect{lat: latALU}
	args := operands(inst)
	op := inst.Op
	name := op.String()
	switch {
	case op == x86asm.NOP || op == x86asm.PAUSE || op == x86asm.LFENCE ||
		op == x86asm.JMP || op == x86asm.CALL || op == x86asm.RET || conditional(op):
		return effect{}
	case op == x86asm.MOV || op == x86asm.MOVZX || op == x86asm.MOVSX || op == x86asm.MOVSXD:
		// A register move is renamed away; an extension is one ALU
		// operation, folded into a load.
		e.dst(args[0], false)
		e.src(args[1])
		if _, imm := args[1].(x86asm.Imm); imm {
			e.fresh = true
		}
		if op == x86asm.MOV || e.load {
			e.lat = 0
		}
	case op == x86asm.LEA:
		e.dst(args[0], false)
		if m, ok := args[1].(x86asm.Mem); ok {
			e.reads = append(e.reads, addrRegs(m, true)...)
		}
	case op == x86asm.POPCNT || op == x86asm.LZCNT || op == x86asm.TZCNT || op == x86asm.BSF || op == x86asm.BSR:
		e.lat = latMul
		e.dst(args[0], false)
		e.src(args[1])
		e.writes = append(e.writes, flags)
	case strings.HasPrefix(name, "SET"):
		e.dst(args[0], false)
		e.reads = append(e.reads, flags)
	case strings.HasPrefix(name, "CMOV"):
		e.dst(args[0], true)
		e.src(args[1])
		e.reads = append(e.reads, flags)
	case op == x86asm.CMP || op == x86asm.TEST || op == x86asm.BT:
		for _, a := range args {
			e.src(a)
		}
		e.writes = append(e.writes, flags)
	case (op == x86asm.XOR || op == x86asm.SUB) && len(args) == 2 && args[0] == args[1]:
		e.dst(args[0], false) // a zeroing idiom: no dependency
		e.fresh = true
		e.writes = append(e.writes, flags)
	case op == x86asm.MUL || op == x86asm.DIV || op == x86asm.IDIV || op == x86asm.IMUL && len(args) == 1:
		e.lat = latWide
		if op == x86asm.DIV || op == x86asm.IDIV {
			e.lat = latDiv32
			if r, ok := args[0].(x86asm.Reg); ok && r >= x86asm.RAX && r <= x86asm.R15 || inst.MemBytes == 8 {
				e.lat = latDiv64
			}
		}
		e.src(args[0])
		e.reads = append(e.reads, rax, rdx)
		e.writes = append(e.writes, rax, rdx, flags)
	case op == x86asm.IMUL:
		e.lat = latMul
		e.dst(args[0], len(args) == 2)
		for _, a := range args[1:] {
			e.src(a)
		}
		e.writes = append(e.writes, flags)
	case op == x86asm.CDQE || op == x86asm.CWDE || op == x86asm.CBW:
		e.reads, e.writes = []location{rax}, []location{rax}
	case op == x86asm.CQO || op == x86asm.CDQ || op == x86asm.CWD:
		e.reads, e.writes = []location{rax}, []location{rdx}
	case op == x86asm.PUSH:
		e.src(args[0])
	case op == x86asm.POP:
		e.dst(args[0], false)
		e.fresh = true // the stack slot's value, read early
		e.lat = latLoad
	case op == x86asm.LEAVE:
		e.writes, e.fresh, e.lat = []location{rbp}, true, latLoad
	case op == x86asm.SHL || op == x86asm.SHR || op == x86asm.SAR || op == x86asm.ROL || op == x86asm.ROR:
		e.dst(args[0], true)
		if len(args) > 1 {
			if r, ok := args[1].(x86asm.Reg); ok && r == x86asm.CL {
				e.lat = 2
			}
			e.src(args[1])
		}
		e.writes = append(e.writes, flags)
	case op == x86asm.SHLD || op == x86asm.SHRD:
		e.lat = latMul
		e.dst(args[0], true)
		for _, a := range args[1:] {
			e.src(a)
		}
		e.writes = append(e.writes, flags)
	default:
		// Arithmetic and logic: the first operand read and written, the
		// others read, the flags written (and read by those that carry).
		if len(args) > 0 {
			e.dst(args[0], true)
		}
		for _, a := range args[min(1, len(args)):] {
			e.src(a)
		}
		if op == x86asm.ADC || op == x86asm.SBB || op == x86asm.RCL || op == x86asm.RCR {
			e.reads = append(e.reads, flags)
		}
		e.writes = append(e.writes, flags)
	}
	return e
}

// dst records the destination operand: a register written (and read, if
// the instruction reads it or keeps part of it), or memory stored (and
// loaded first).
func (e *effect) dst(a x86asm.Arg, read bool) {
	switch a := a.(type) {
	case x86asm.Reg:
		l, ok := reg(a)
		if !ok {
			return
		}
		e.writes = append(e.writes, l)
		if read || narrow(a) {
			e.reads = append(e.reads, l)
		}
	case x86asm.Mem:
		e.store, e.mem = true, a
		e.addr = append(e.addr, addrRegs(a, false)...)
		e.load = e.load || read
	}
}

// src records a source operand.
func (e *effect) src(a x86asm.Arg) {
	switch a := a.(type) {
	case x86asm.Reg:
		if l, ok := reg(a); ok {
			e.reads = append(e.reads, l)
		}
	case x86asm.Mem:
		e.load, e.mem = true, a
		e.addr = append(e.addr, addrRegs(a, false)...)
	}
}

// addrRegs returns the registers an address is computed from. For a load,
// the stack and frame pointers are left out: they are known long before
// the value is needed (the core's stack engine), so a stack slot's load
// starts early; only a store in the same way ties it to a chain. lea's
// operands are data.
func addrRegs(m x86asm.Mem, data bool) []location {
	var out []location
	if l, ok := reg(m.Base); ok && (data || l != rsp && l != rbp) {
		out = append(out, l)
	}
	if l, ok := reg(m.Index); ok {
		out = append(out, l)
	}
	return out
}

// operands returns inst's arguments up to the first empty one.
func operands(inst x86asm.Inst) []x86asm.Arg {
	var out []x86asm.Arg
	for _, a := range inst.Args {
		if a == nil {
			break
		}
		out = append(out, a)
	}
	return out
}

// conditional reports whether op is a conditional jump, move or set.
func conditional(op x86asm.Op) bool {
	switch op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE, x86asm.JL,
		x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS,
		x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return true
	}
	return false
}
