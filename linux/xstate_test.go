package linux

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
)

// avx512CPUID is CPUID leaf 0xD of a CPU with AVX-512 and PKRU (XCR0
// 0x2e7) and AMX's tiles, which do not fit the 4 KiB image.
var avx512CPUID = []kvm.CPUIDEntry{
	{Function: 0xd, Index: 0, EAX: 0x602e7, EBX: 0xa88, ECX: 0x2b00},
	{Function: 0xd, Index: 2, EAX: 256, EBX: 576},
	{Function: 0xd, Index: 5, EAX: 64, EBX: 1088},
	{Function: 0xd, Index: 6, EAX: 512, EBX: 1152},
	{Function: 0xd, Index: 7, EAX: 1024, EBX: 1664},
	{Function: 0xd, Index: 9, EAX: 8, EBX: 2688},
	{Function: 0xd, Index: 17, EAX: 64, EBX: 2752},
	{Function: 0xd, Index: 18, EAX: 8192, EBX: 2816},
}

func TestXSaveLayout(t *testing.T) {
	l := newXSaveLayout(avx512CPUID, 0xffff)
	require.Equal(t, uint64(0x2e7), l.features, "AMX's tiles left out")
	require.Equal(t, 2696, l.size)
	require.Len(t, l.components, 5)

	none := newXSaveLayout(nil, 0)
	require.Equal(t, uint64(featuresFPSSE), none.features)
	require.Equal(t, 576, none.size)
	require.Equal(t, uint32(0xffbf), none.mxcsrMask, "the SDM's default mask")
}

// sample is an XSAVE image with every component of l present and
// distinct bytes in each.
func sample(l *xsaveLayout) kvm.XSave {
	b := make([]byte, kvm.XSaveBytes)
	fill := func(from, to int) {
		for i := from; i < to; i++ {
			b[i] = byte(i*7 + 1)
		}
	}
	fill(0, offXMM+sseBytes)
	for _, c := range l.components {
		fill(c.offset, c.offset+c.size)
	}
	le := binary.LittleEndian
	le.PutUint32(b[offMXCSR:], 0x1f80|0x40)
	le.PutUint64(b[headerOffset:], l.features)
	return kvm.XSaveOf(b)
}

// A frame round-trips: what rt_sigreturn restores from the fpstate a
// signal frame holds is the state it was made of.
func TestXSaveFrameRoundTrip(t *testing.T) {
	l := newXSaveLayout(avx512CPUID, 0xffff)
	x := sample(&l)
	frame := l.frame(&x)
	require.Len(t, frame, 2700)
	le := binary.LittleEndian
	require.Equal(t, uint32(fpxMagic1), le.Uint32(frame[swBytesOffset:]))
	require.Equal(t, uint32(2700), le.Uint32(frame[swBytesOffset+4:]), "extended_size")
	require.Equal(t, uint64(0x2e7), le.Uint64(frame[swBytesOffset+8:]), "xfeatures")
	require.Equal(t, uint32(2696), le.Uint32(frame[swBytesOffset+16:]), "xstate_size")
	require.Equal(t, uint32(fpxMagic2), le.Uint32(frame[2696:]))
	require.Equal(t, len(frame), l.frameSize(frame[:legacyBytes]))

	back, ok := l.fromFrame(frame)
	require.True(t, ok)
	want, got := x.Bytes(), back.Bytes()
	// MXCSR_MASK is no state (FXRSTOR ignores it): a frame holds the CPU's.
	le.PutUint32(want[offMXCSRMask:], l.mxcsrMask)
	require.Equal(t, want[:swBytesOffset], got[:swBytesOffset], "legacy area")
	require.Equal(t, want[headerOffset:l.size], got[headerOffset:l.size], "header and components")
}

// A frame whose components are absent from XSTATE_BV, or not asked for in
// its software bytes, restores them to their initial state, as XRSTOR
// does; one without the magic words is an FXSAVE frame.
func TestXSaveFrameInitialises(t *testing.T) {
	l := newXSaveLayout(avx512CPUID, 0xffff)
	x := sample(&l)
	le := binary.LittleEndian
	frame := l.frame(&x)
	le.PutUint64(frame[headerOffset:], featuresFPSSE|1<<2) // AVX only
	back, ok := l.fromFrame(frame)
	require.True(t, ok)
	got := back.Bytes()
	require.Equal(t, uint64(featuresFPSSE|1<<2), le.Uint64(got[headerOffset:]))
	require.Equal(t, frame[576:576+256], got[576:576+256], "AVX kept")
	require.Equal(t, make([]byte, 2696-1088), got[1088:2696], "opmask and ZMM initial")

	fx := l.frame(&x)
	le.PutUint32(fx[2696:], 0) // no second magic word
	back, ok = l.fromFrame(fx)
	require.True(t, ok)
	got = back.Bytes()
	require.Equal(t, uint64(featuresFPSSE), le.Uint64(got[headerOffset:]))
	require.Equal(t, fx[offXMM:offXMM+sseBytes], got[offXMM:offXMM+sseBytes], "XMM kept")
	require.Equal(t, make([]byte, 256), got[576:576+256], "AVX initial")

	legacy := make([]byte, legacyBytes)
	require.Equal(t, legacyBytes, l.frameSize(legacy), "no software bytes: FXSAVE only")
	le.PutUint32(legacy[swBytesOffset:], fpxMagic1)
	le.PutUint32(legacy[swBytesOffset+16:], 1<<20)
	require.Equal(t, legacyBytes, l.frameSize(legacy), "an xstate_size the CPU cannot have")
}

// What XRSTOR would refuse, rt_sigreturn refuses (SIGSEGV), before it can
// reach KVM_SET_XSAVE.
func TestXSaveFrameRefused(t *testing.T) {
	l := newXSaveLayout(avx512CPUID, 0xffbf)
	x := sample(&l)
	le := binary.LittleEndian
	for name, spoil := range map[string]func(b []byte){
		"reserved MXCSR bit": func(b []byte) { le.PutUint32(b[offMXCSR:], 0x1f80|1<<16) },
		"DAZ without it":     func(b []byte) { le.PutUint32(b[offMXCSR:], 0x1f80|0x40) },
		"unknown component":  func(b []byte) { le.PutUint64(b[headerOffset:], l.features|1<<17) },
		"compacted":          func(b []byte) { le.PutUint64(b[headerOffset+8:], 1<<63|l.features) },
		"reserved header":    func(b []byte) { b[headerOffset+20] = 1 },
	} {
		frame := l.frame(&x)
		le.PutUint32(frame[offMXCSR:], 0x1f80)
		spoil(frame)
		_, ok := l.fromFrame(frame)
		require.False(t, ok, name)
	}
}

func TestAltStackRules(t *testing.T) {
	var s altStack
	require.Equal(t, uint32(ssDisable), s.state(0x1000))
	require.Equal(t, uint32(ssDisable), s.raw())
	require.ErrorIs(t, s.set(altStack{sp: 0x10000, size: 1024}, 0), unix.ENOMEM)
	require.ErrorIs(t, s.set(altStack{sp: 0x10000, size: 8192, flags: 4}, 0), unix.EINVAL)
	require.NoError(t, s.set(altStack{sp: 0x10000, size: 8192}, 0x7000_0000))
	require.Equal(t, uint32(0), s.state(0x7000_0000))
	require.Equal(t, uint32(ssOnstack), s.state(0x11000))
	require.True(t, s.holds(0x12000), "its top is in it")
	require.False(t, s.holds(0x10000), "its bottom is not")
	require.ErrorIs(t, s.set(altStack{flags: ssDisable}, 0x11000), unix.EPERM, "not while on it")
	require.NoError(t, s.set(altStack{sp: 0x10000, size: 8192, flags: ssAutodisarm}, 0x7000_0000))
	require.Equal(t, uint32(0), s.state(0x11000), "a stack that disarms itself is never on")
	require.NoError(t, s.set(altStack{sp: 0x10000, size: 8192}, 0x11000), "so it can be changed from on it")
	require.NoError(t, s.set(altStack{sp: 0x1234, size: 99, flags: ssDisable}, 0))
	require.Equal(t, altStack{flags: ssDisable}, s)
	var b [stackTBytes]byte
	s.put(b[:])
	require.Equal(t, altStack{flags: ssDisable}, altStackOf(b[:]))
}

// XCR0 takes AVX-512's three components, and AMX's two, only together.
func TestXSaveLayoutGroups(t *testing.T) {
	noZMM := append([]kvm.CPUIDEntry(nil), avx512CPUID...)
	noZMM[4].EAX = 0 // Hi16_ZMM unknown
	l := newXSaveLayout(noZMM, 0xffff)
	require.Equal(t, uint64(0x207), l.features)
	require.Equal(t, 2696, l.size, "PKRU still at its offset")
}

// Two images of one state that differ only where the host decides — the
// MXCSR_MASK KVM fills only while SSE is in use, the XSTATE_BV bit of a
// component in its initial state — make the same frame: TestAlarm's
// recordings diverged from their replays, 1 in 10 with a jittered timer,
// on those two bytes of a signal frame.
func TestXSaveFrameIsTheHosts(t *testing.T) {
	l := newXSaveLayout(avx512CPUID, 0xffff)
	base := sample(&l)
	a, b := base.Bytes(), base.Bytes()
	le := binary.LittleEndian
	le.PutUint32(a[offMXCSRMask:], 0xffff)
	le.PutUint32(b[offMXCSRMask:], 0)
	avx := l.components[0] // in its initial state in both
	clear(a[avx.offset : avx.offset+avx.size])
	clear(b[avx.offset : avx.offset+avx.size])
	le.PutUint64(a[headerOffset:], le.Uint64(a[headerOffset:])|1<<avx.bit)
	le.PutUint64(b[headerOffset:], le.Uint64(b[headerOffset:])&^(1<<avx.bit))
	require.NotEqual(t, a, b)
	xa, xb := kvm.XSaveOf(a), kvm.XSaveOf(b)
	fa := l.frame(&xa)
	require.Equal(t, fa, l.frame(&xb))
	require.Zero(t, le.Uint64(fa[headerOffset:])&(1<<avx.bit), "a component in its initial state is absent")
	require.Equal(t, uint32(0xffff), le.Uint32(fa[offMXCSRMask:]), "the CPU's MXCSR_MASK")
}
