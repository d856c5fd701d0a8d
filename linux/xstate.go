package linux

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/reprise-vm/reprise/kvm"
)

// A thread's extended state is everything XSAVE covers — x87, SSE, AVX,
// AVX-512's mask registers and upper ZMM halves, whatever else the CPU
// enables — and all of it is switched with the thread: glibc's memcpy and
// strlen keep data in ymm and zmm registers, and a switch in the middle
// of one must not hand them another thread's. It is kept in the standard
// (non-compacted) form KVM_GET_XSAVE gives, and put in signal frames as
// Linux puts it (arch/x86/kernel/fpu/signal.c).
//
//	+0    legacy area (FXSAVE): FCW, FSW, FTW, FOP, FIP, FDP, MXCSR,
//	      MXCSR_MASK, ST0-7, XMM0-15; bytes 464-511 are software's: in a
//	      signal frame, struct _fpx_sw_bytes (magic1, extended_size,
//	      xfeatures, xstate_size)
//	+512  XSAVE header: XSTATE_BV (the components present), XCOMP_BV (0:
//	      standard form), reserved, zero
//	+576  the components from 2 up, each at the offset CPUID leaf 0xD
//	      gives it (AVX's upper YMM halves, opmask, ZMM_Hi256, Hi16_ZMM ...)
//	+size in a signal frame, FP_XSTATE_MAGIC2
const (
	legacyBytes   = 512
	headerOffset  = 512
	headerBytes   = 64
	swBytesOffset = 464
	fpxMagic1     = 0x46505853 // FP_XSTATE_MAGIC1
	fpxMagic2     = 0x46505845 // FP_XSTATE_MAGIC2
	magic2Bytes   = 4
	// The x87 and SSE components: always in XSTATE_BV of a frame, as
	// Linux sets them for programs that change only the legacy area.
	featuresFPSSE = 0b11
	// Offsets in the legacy area.
	offFCW       = 0
	offMXCSR     = 24
	offMXCSRMask = 28
	offXMM       = 160
	x87Bytes     = offXMM // FCW to ST7: the x87 component
	sseBytes     = 256
	// The state Linux starts a program with (fpstate_init: FNINIT and
	// the default MXCSR).
	initFCW   = 0x37f
	initMXCSR = 0x1f80
)

// xsaveLayout is the shape of the XSAVE image the guest CPU has: which
// components it supports (XCR0's bits, CPUID leaf 0xD) and where each is.
type xsaveLayout struct {
	features   uint64 // every component the guest may enable
	size       int    // bytes of the standard form holding them all
	components []xsaveComponent
	// mxcsrMask is the MXCSR bits the CPU has: a frame's MXCSR with
	// others set is refused as XRSTOR refuses it (#GP).
	mxcsrMask uint32
}

type xsaveComponent struct {
	bit          uint
	offset, size int
}

// newXSaveLayout reads the layout from the guest's CPUID table. A
// component that does not fit the 4 KiB image KVM_GET_XSAVE fills (AMX's
// tiles) is left out: KVM gives a guest it only with permission the VMM
// does not ask for.
func newXSaveLayout(cpuid []kvm.CPUIDEntry, mxcsrMask uint32) xsaveLayout {
	l := xsaveLayout{features: featuresFPSSE, size: legacyBytes + headerBytes, mxcsrMask: mxcsrMask}
	if l.mxcsrMask == 0 {
		l.mxcsrMask = 0xffbf // the SDM's default, for a CPU that reports none
	}
	leaf := func(index uint32) (kvm.CPUIDEntry, bool) {
		for _, e := range cpuid {
			if e.Function == 0xd && e.Index == index {
				return e, true
			}
		}
		return kvm.CPUIDEntry{}, false
	}
	top, ok := leaf(0)
	if !ok {
		return l
	}
	supported := uint64(top.EAX) | uint64(top.EDX)<<32
	for bit := uint(2); bit < 63; bit++ {
		if supported&(1<<bit) == 0 {
			continue
		}
		e, ok := leaf(uint32(bit))
		off, size := int(e.EBX), int(e.EAX)
		if !ok || size == 0 || off < legacyBytes+headerBytes || off+size > kvm.XSaveBytes {
			continue
		}
		l.features |= 1 << bit
		l.components = append(l.components, xsaveComponent{bit, off, size})
	}
	// XCR0 takes some components only together (SDM vol. 1 §13.3): a
	// group with a member left out goes, and AVX-512 goes without AVX.
	for _, group := range []uint64{1<<3 | 1<<4, 1<<5 | 1<<6 | 1<<7, 1<<17 | 1<<18} {
		if l.features&group != group || group>>5&1 == 1 && l.features&(1<<2) == 0 {
			l.features &^= group
		}
	}
	l.components = slices.DeleteFunc(l.components, func(c xsaveComponent) bool { return l.features&(1<<c.bit) == 0 })
	for _, c := range l.components {
		l.size = max(l.size, c.offset+c.size)
	}
	return l
}

// initial is the state a program starts with after execve: x87 and SSE
// reset, every other component in its initial (zero) state.
func (l *xsaveLayout) initial() kvm.XSave {
	b := make([]byte, legacyBytes+headerBytes)
	le := binary.LittleEndian
	le.PutUint16(b[offFCW:], initFCW)
	le.PutUint32(b[offMXCSR:], initMXCSR)
	le.PutUint64(b[headerOffset:], featuresFPSSE)
	return kvm.XSaveOf(b)
}

// frameBytes is the size of a signal frame's fpstate: the image and
// FP_XSTATE_MAGIC2 after it.
func (l *xsaveLayout) frameBytes() int { return l.size + magic2Bytes }

// frame is the fpstate of a signal frame for state x, as Linux writes it:
// the XSAVE image with x87 and SSE marked present, MXCSR_MASK the CPU's
// (XSAVE writes it whenever SSE is requested; KVM's image has it only
// while the SSE state is in use, which the host's context switches decide,
// so a recording's frame and its replay's differed there), the other
// components marked present exactly when their state is not the initial
// one (zeros: which the CPU reports in use is the host's doing too), the
// software bytes that say it is one, and the second magic word after it.
func (l *xsaveLayout) frame(x *kvm.XSave) []byte {
	img := x.Bytes()
	b := make([]byte, l.frameBytes())
	copy(b, img[:l.size])
	le := binary.LittleEndian
	clear(b[swBytesOffset:legacyBytes])
	le.PutUint32(b[swBytesOffset:], fpxMagic1)
	le.PutUint32(b[swBytesOffset+4:], uint32(l.frameBytes())) // extended_size
	le.PutUint64(b[swBytesOffset+8:], l.features)
	le.PutUint32(b[swBytesOffset+16:], uint32(l.size)) // xstate_size
	le.PutUint32(b[offMXCSRMask:], l.mxcsrMask)
	bv := uint64(featuresFPSSE)
	for _, c := range l.components {
		if slices.ContainsFunc(b[c.offset:c.offset+c.size], func(x byte) bool { return x != 0 }) {
			bv |= 1 << c.bit
		}
	}
	le.PutUint64(b[headerOffset:], bv)
	clear(b[headerOffset+8 : headerOffset+headerBytes])
	le.PutUint32(b[l.size:], fpxMagic2)
	return b
}

// frameSize reads the software bytes of a frame's legacy area (the first
// legacyBytes of fpstate) and says how many bytes of fpstate rt_sigreturn
// must read: the whole image when the bytes describe one this CPU can
// hold, else the legacy area alone (an FXSAVE frame), as Linux decides
// (check_xstate_in_sigframe). The second magic word is checked in
// fromFrame.
func (l *xsaveLayout) frameSize(legacy []byte) int {
	le := binary.LittleEndian
	sw := legacy[swBytesOffset:]
	size := int(le.Uint32(sw[16:]))
	if le.Uint32(sw) != fpxMagic1 || size < legacyBytes+headerBytes || size > l.size || size > int(le.Uint32(sw[4:])) {
		return legacyBytes
	}
	return size + magic2Bytes
}

// valid reports whether x is an image the CPU takes: a standard-form
// header naming only components it has, and MXCSR within its mask.
func (l *xsaveLayout) valid(x *kvm.XSave) bool {
	b := x.Bytes()
	return l.validHeader(b) && binary.LittleEndian.Uint32(b[offMXCSR:])&^l.mxcsrMask == 0
}

// validHeader reports whether the XSAVE header in b names only components
// of l, in the standard form (XCOMP_BV and the reserved bytes XRSTOR
// checks zero).
func (l *xsaveLayout) validHeader(b []byte) bool {
	le := binary.LittleEndian
	return le.Uint64(b[headerOffset:])&^l.features == 0 && le.Uint64(b[headerOffset+8:]) == 0 && le.Uint64(b[headerOffset+16:]) == 0
}

// fromFrame is the state rt_sigreturn restores from a frame's fpstate b
// (frameSize bytes): the components the frame holds, every other in its
// initial state, as XRSTOR with the frame's features leaves them. ok is
// false where XRSTOR or FXRSTOR would fault — reserved MXCSR bits, a
// component the CPU lacks, a compacted or dirty header — and Linux sends
// SIGSEGV.
func (l *xsaveLayout) fromFrame(b []byte) (x kvm.XSave, ok bool) {
	le := binary.LittleEndian
	init := l.initial()
	out := init.Bytes()
	if le.Uint32(b[offMXCSR:])&^l.mxcsrMask != 0 {
		return x, false
	}
	restore, present := uint64(featuresFPSSE), uint64(featuresFPSSE)
	if len(b) > legacyBytes {
		size := len(b) - magic2Bytes
		if le.Uint32(b[size:]) == fpxMagic2 {
			if !l.validHeader(b) {
				return x, false
			}
			restore = le.Uint64(b[swBytesOffset+8:]) & l.features
			present = le.Uint64(b[headerOffset:]) & restore
		}
	}
	if restore&0b110 != 0 { // SSE or AVX: MXCSR comes with either
		copy(out[offMXCSR:offMXCSR+4], b[offMXCSR:])
	}
	if present&1 != 0 {
		copy(out[:offMXCSR], b[:offMXCSR])
		copy(out[offMXCSRMask:x87Bytes], b[offMXCSRMask:x87Bytes])
	}
	if present&2 != 0 {
		copy(out[offXMM:offXMM+sseBytes], b[offXMM:])
	}
	for _, c := range l.components {
		if present&(1<<c.bit) != 0 && c.offset+c.size <= len(b)-magic2Bytes {
			copy(out[c.offset:c.offset+c.size], b[c.offset:])
		}
	}
	le.PutUint64(out[headerOffset:], present|featuresFPSSE)
	return kvm.XSaveOf(out), true
}

// xsaveNames names the XSAVE components of XCR0 bits, for messages.
func xsaveNames(bits uint64) string {
	names := map[uint]string{0: "x87", 1: "SSE", 2: "AVX", 3: "MPX bounds", 4: "MPX config", 5: "AVX-512 opmask",
		6: "AVX-512 upper ZMM", 7: "AVX-512 high ZMM", 9: "PKRU", 17: "AMX config", 18: "AMX tiles"}
	var out []string
	for bit := uint(0); bit < 64; bit++ {
		if bits&(1<<bit) != 0 {
			out = append(out, cmp.Or(names[bit], fmt.Sprintf("component %d", bit)))
		}
	}
	return strings.Join(out, ", ")
}
