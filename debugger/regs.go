package debugger

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/reprise-vm/reprise/kvm"
)

// The registers gdb sees, in the order of the target description the
// server gives it (qXfer:features:read:target.xml) — one table, so the
// description and the 'g' packet cannot disagree. Values are
// little-endian, read from a thread's general registers, thread pointer
// and XSAVE image (the legacy region's x87 and SSE state at their fixed
// offsets; AVX's upper halves at XSAVE's component 2, 576).

// register is one register gdb knows.
type register struct {
	name    string
	bits    int
	typ     string // the description's type
	feature string // which of the description's features holds it
	value   func(s *ThreadState, img []byte) []byte
}

const (
	featureCore  = "org.gnu.gdb.i386.core"
	featureSSE   = "org.gnu.gdb.i386.sse"
	featureLinux = "org.gnu.gdb.i386.linux"
	featureAVX   = "org.gnu.gdb.i386.avx"
)

// XSAVE image offsets (Intel SDM vol. 1, 13.4).
const (
	xsaveFCW   = 0
	xsaveFSW   = 2
	xsaveFTW   = 4 // abridged: a bit a register, set if valid
	xsaveFOP   = 6
	xsaveFIP   = 8
	xsaveFDP   = 16
	xsaveMXCSR = 24
	xsaveST    = 32  // 16 bytes a register, 10 used
	xsaveXMM   = 160 // 16 bytes a register
	xsaveBV    = 512 // XSTATE_BV in the header
	xsaveYMMHi = 576 // component 2: the upper halves of YMM0-15
)

func word64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func word32(v uint64) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// gpr is a general register read from the saved set.
func gpr(name string, at func(r *kvm.Regs) uint64, typ string) register {
	return register{name: name, bits: 64, typ: typ, feature: featureCore, value: func(s *ThreadState, img []byte) []byte { return word64(at(&s.Regs)) }}
}

// xsaveBytes is a register n bytes long at off of the XSAVE image.
func xsaveBytes(name string, off, n int, typ, feature string) register {
	return register{name: name, bits: 8 * n, typ: typ, feature: feature, value: func(s *ThreadState, img []byte) []byte {
		return append([]byte(nil), img[off:off+n]...)
	}}
}

// xsaveField is an x87 control field of width bytes at off, as gdb's
// 32-bit register.
func xsaveField(name string, off, width int) register {
	return register{name: name, bits: 32, typ: "int", feature: featureCore, value: func(s *ThreadState, img []byte) []byte {
		var v uint64
		for i := width - 1; i >= 0; i-- {
			v = v<<8 | uint64(img[off+i])
		}
		return word32(v)
	}}
}

// fullTag expands the abridged tag word into x87's: a valid register 00
// (gdb shows it as such), an empty one 11.
func fullTag(_ *ThreadState, img []byte) []byte {
	abridged := img[xsaveFTW]
	var tag uint64
	for i := range 8 {
		if abridged&(1<<i) == 0 {
			tag |= 3 << (2 * i)
		}
	}
	return word32(tag)
}

// segment is a selector gdb asks for; the program's are the user
// selectors Linux gives, fixed.
func segment(name string, sel uint64) register {
	return register{name: name, bits: 32, typ: "int32", feature: featureCore, value: func(*ThreadState, []byte) []byte { return word32(sel) }}
}

// Linux's x86-64 user selectors (__USER_CS, __USER_DS).
const (
	userCS = 0x33
	userDS = 0x2b
)

var registers = func() []register {
	rs := []register{
		gpr("rax", func(r *kvm.Regs) uint64 { return r.RAX }, "int64"),
		gpr("rbx", func(r *kvm.Regs) uint64 { return r.RBX }, "int64"),
		gpr("rcx", func(r *kvm.Regs) uint64 { return r.RCX }, "int64"),
		gpr("rdx", func(r *kvm.Regs) uint64 { return r.RDX }, "int64"),
		gpr("rsi", func(r *kvm.Regs) uint64 { return r.RSI }, "int64"),
		gpr("rdi", func(r *kvm.Regs) uint64 { return r.RDI }, "int64"),
		gpr("rbp", func(r *kvm.Regs) uint64 { return r.RBP }, "data_ptr"),
		gpr("rsp", func(r *kvm.Regs) uint64 { return r.RSP }, "data_ptr"),
		gpr("r8", func(r *kvm.Regs) uint64 { return r.R8 }, "int64"),
		gpr("r9", func(r *kvm.Regs) uint64 { return r.R9 }, "int64"),
		gpr("r10", func(r *kvm.Regs) uint64 { return r.R10 }, "int64"),
		gpr("r11", func(r *kvm.Regs) uint64 { return r.R11 }, "int64"),
		gpr("r12", func(r *kvm.Regs) uint64 { return r.R12 }, "int64"),
		gpr("r13", func(r *kvm.Regs) uint64 { return r.R13 }, "int64"),
		gpr("r14", func(r *kvm.Regs) uint64 { return r.R14 }, "int64"),
		gpr("r15", func(r *kvm.Regs) uint64 { return r.R15 }, "int64"),
		gpr("rip", func(r *kvm.Regs) uint64 { return r.RIP }, "code_ptr"),
		{name: "eflags", bits: 32, typ: "int32", feature: featureCore, value: func(s *ThreadState, img []byte) []byte { return word32(s.Regs.RFLAGS) }},
		segment("cs", userCS), segment("ss", userDS), segment("ds", 0), segment("es", 0), segment("fs", 0), segment("gs", 0),
	}
	for i := range 8 {
		rs = append(rs, xsaveBytes(fmt.Sprintf("st%d", i), xsaveST+16*i, 10, "i387_ext", featureCore))
	}
	rs = append(rs,
		xsaveField("fctrl", xsaveFCW, 2),
		xsaveField("fstat", xsaveFSW, 2),
		register{name: "ftag", bits: 32, typ: "int", feature: featureCore, value: fullTag},
		xsaveField("fiseg", xsaveFIP+4, 2),
		xsaveField("fioff", xsaveFIP, 4),
		xsaveField("foseg", xsaveFDP+4, 2),
		xsaveField("fooff", xsaveFDP, 4),
		xsaveField("fop", xsaveFOP, 2),
	)
	for i := range 16 {
		rs = append(rs, xsaveBytes(fmt.Sprintf("xmm%d", i), xsaveXMM+16*i, 16, "vec128", featureSSE))
	}
	rs = append(rs, register{name: "mxcsr", bits: 32, typ: "int", feature: featureSSE, value: func(s *ThreadState, img []byte) []byte {
		return word32(uint64(binary.LittleEndian.Uint32(img[xsaveMXCSR:])))
	}})
	rs = append(rs,
		register{name: "orig_rax", bits: 64, typ: "int", feature: featureLinux, value: func(s *ThreadState, _ []byte) []byte { return word64(s.OrigRAX) }},
		register{name: "fs_base", bits: 64, typ: "int", feature: featureLinux, value: func(s *ThreadState, img []byte) []byte { return word64(s.FSBase) }},
		register{name: "gs_base", bits: 64, typ: "int", feature: featureLinux, value: func(*ThreadState, []byte) []byte { return word64(0) }},
	)
	for i := range 16 {
		rs = append(rs, register{name: fmt.Sprintf("ymm%dh", i), bits: 128, typ: "uint128", feature: featureAVX, value: func(s *ThreadState, img []byte) []byte {
			b := make([]byte, 16)
			if img[xsaveBV]&4 != 0 { // else the upper halves are in their initial state: zeros
				copy(b, img[xsaveYMMHi+16*i:])
			}
			return b
		}})
	}
	return rs
}()

// targetXML is the target description: amd64 GNU/Linux, the registers
// above in their features.
var targetXML = func() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target version="1.0">
<architecture>i386:x86-64</architecture>
<osabi>GNU/Linux</osabi>
`)
	feature := ""
	for i, r := range registers {
		if r.feature != feature {
			if feature != "" {
				b.WriteString("</feature>\n")
			}
			feature = r.feature
			fmt.Fprintf(&b, "<feature name=%q>\n", feature)
			if feature == featureSSE {
				b.WriteString(`<vector id="v4f" type="ieee_single" count="4"/>
<vector id="v2d" type="ieee_double" count="2"/>
<vector id="v16i8" type="int8" count="16"/>
<vector id="v8i16" type="int16" count="8"/>
<vector id="v4i32" type="int32" count="4"/>
<vector id="v2i64" type="int64" count="2"/>
<union id="vec128"><field name="v4_float" type="v4f"/><field name="v2_double" type="v2d"/><field name="v16_int8" type="v16i8"/><field name="v8_int16" type="v8i16"/><field name="v4_int32" type="v4i32"/><field name="v2_int64" type="v2i64"/><field name="uint128" type="uint128"/></union>
`)
			}
		}
		fmt.Fprintf(&b, "<reg name=%q bitsize=\"%d\" type=%q regnum=\"%d\"/>\n", r.name, r.bits, r.typ, i)
	}
	b.WriteString("</feature>\n</target>\n")
	return b.String()
}()

// registerBytes is the 'g' packet's data: every register in order.
func registerBytes(s *ThreadState) []byte {
	var out []byte
	img := s.XSave.Bytes()
	for _, r := range registers {
		out = append(out, r.value(s, img)...)
	}
	return out
}
