package probes

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/elffile"
)

// The instruction classes of testdata/insts.S, one function each.
func TestSiteClassification(t *testing.T) {
	img := testImage(t)
	for _, tc := range []struct {
		fn       string
		len      int
		branch   BranchKind
		indirect bool
		target   string // symbol (+off) of a relative branch's target
		ripRel   int
		cond     int // -1: not a jcc
	}{
		{"i_nop", 1, BranchNone, false, "", -1, -1},
		{"i_push", 1, BranchNone, false, "", -1, -1},
		{"i_movabs", 10, BranchNone, false, "", -1, -1},
		{"i_ret", 1, BranchRet, false, "", -1, -1},
		{"i_ret_imm", 3, BranchRet, false, "", -1, -1},
		{"i_call_rel", 5, BranchCall, false, "i_ret", -1, -1},
		{"i_call_reg", 2, BranchCall, true, "", -1, -1},
		{"i_call_rip", 6, BranchCall, true, "", 2, -1},
		{"i_call_rsp", 4, BranchCall, true, "", -1, -1},
		{"i_jmp_rel8", 2, BranchJmp, false, "i_jmp_rel8+0x2", -1, -1},
		{"i_jmp_rel32", 5, BranchJmp, false, "i_jmp_reg", -1, -1},
		{"i_jmp_reg", 2, BranchJmp, true, "", -1, -1},
		{"i_jcc8", 2, BranchJcc, false, "i_jcc8+0x2", -1, 0x4},
		{"i_jcc32", 6, BranchJcc, false, "i_jcc_hint", -1, 0x5},
		{"i_jcc_hint", 3, BranchJcc, false, "i_loop", -1, 0x4}, // 3e 74 00: a prefixed je
		{"i_loop", 2, BranchOther, false, "i_loop+0x2", -1, -1},
		{"i_jrcxz", 2, BranchOther, false, "i_jrcxz+0x2", -1, -1},
		{"i_lea_rip", 7, BranchNone, false, "", 3, -1},
		{"i_cmp_rip_imm", 7, BranchNone, false, "", 2, -1}, // disp32 then imm8
		{"i_avx_rip", 8, BranchNone, false, "", 4, -1},     // VEX: the decoder alone misses it
	} {
		t.Run(tc.fn, func(t *testing.T) {
			p := resolve1(t, img, tc.fn)
			require.Len(t, p.Sites, 1)
			s := p.Sites[0]
			require.Equal(t, sym(t, img, tc.fn).Addr, s.Addr)
			require.Equal(t, tc.len, s.Len)
			require.Len(t, s.Orig, tc.len)
			require.Equal(t, tc.branch, s.Branch, "%v", s.String())
			require.Equal(t, tc.indirect, s.Indirect)
			require.Equal(t, tc.ripRel, s.RIPRelDispOff)
			if tc.target == "" {
				require.Zero(t, s.Target)
			} else {
				require.Equal(t, tc.target, img.Describe(s.Target))
			}
			cc, ok := s.Cond()
			require.Equal(t, tc.cond >= 0, ok)
			if ok {
				require.Equal(t, byte(tc.cond), cc)
			}
			if s.RIPRelDispOff >= 0 {
				// The displacement reaches the variable from the next
				// instruction, as the CPU computes it.
				disp := int64(int32(binary.LittleEndian.Uint32(s.Orig[s.RIPRelDispOff:])))
				want := sym(t, img, "counter").Addr
				if tc.fn == "i_call_rip" {
					want = sym(t, img, "fptr").Addr
				}
				require.Equal(t, want, s.Next()+uint64(disp))
			}
		})
	}
}

func TestSiteRefusals(t *testing.T) {
	img := testImage(t)
	for fn, why := range map[string]string{
		"i_int3":    `cannot probe "int3" (cc): int3 is already a breakpoint`,
		"i_int80":   `cannot probe "int $0x80" (cd 80): int n enters the guest kernel`,
		"i_syscall": `cannot probe "syscall" (0f 05): a system call`,
		"i_ud2":     `cannot probe "ud2" (0f 0b): ud2 is the guest kit's system call`,
		"i_hlt":     `cannot probe "hlt" (f4): the interrupt that ends hlt`,
		"i_iretq":   `(48 cf): far control transfers`,
		"i_xbegin":  `xbegin's abort target is relative`,
		"i_loop67":  `(67 e2 00): its address-size prefix (0x67) makes it count with the 32-bit ecx`,
		"i_lea_eip": `(67 48 8d 05`,
		"i_jmp16":   `its operand-size prefix (0x66)`,
	} {
		t.Run(fn, func(t *testing.T) {
			err := resolveErr(t, img, fn)
			require.ErrorContains(t, err, fmt.Sprintf(`probes: probe %q: %s: `, fn, fn))
			require.ErrorContains(t, err, why)
		})
	}
	err := resolveErr(t, img, "i_lea_eip")
	require.ErrorContains(t, err, "makes its operand EIP-relative")
}

func TestResolveCompiledCode(t *testing.T) {
	img := testImage(t)
	// read_global: mov counter(%rip),%eax at its entry.
	p := resolve1(t, img, "read_global n=rdi")
	s := p.Sites[0]
	require.Equal(t, BranchNone, s.Branch)
	require.GreaterOrEqual(t, s.RIPRelDispOff, 0, "%v", s.String())
	disp := int64(int32(binary.LittleEndian.Uint32(s.Orig[s.RIPRelDispOff:])))
	require.Equal(t, sym(t, img, "counter").Addr, s.Next()+uint64(disp))

	// Every instruction boundary of the compiled functions resolves, and
	// every call there is classified with its target.
	for _, fn := range []string{"read_global", "helper", "pick", "sum", "_start", "call_twin"} {
		f := sym(t, img, fn)
		for _, b := range boundaries(t, img, f) {
			p := resolve1(t, img, DefaultName(fn, b, false))
			s := p.Sites[0]
			require.Equal(t, f.Addr+b, s.Addr)
			if s.Inst.Op == x86asm.CALL {
				require.Equal(t, BranchCall, s.Branch)
				require.NotZero(t, s.Target)
				_, _, ok := img.Resolve(s.Target)
				require.True(t, ok)
			}
		}
	}
}

// boundaries decodes f and lists its instruction offsets.
func boundaries(t *testing.T, img *elffile.Image, f elffile.Symbol) []uint64 {
	t.Helper()
	seg, ok := img.ExecSegment(f.Addr)
	require.True(t, ok)
	code := seg.Data[f.Addr-seg.Addr : f.Addr-seg.Addr+f.Size]
	var offs []uint64
	for pc := 0; pc < len(code); {
		inst, err := x86asm.Decode(code[pc:], 64)
		require.NoError(t, err)
		offs = append(offs, uint64(pc))
		pc += inst.Len
	}
	return offs
}

func TestResolveErrors(t *testing.T) {
	img := testImage(t)
	for _, tc := range []struct {
		spec string
		msg  string // the whole error
	}{
		{"read_globl", `probes: probe "read_globl": unknown symbol "read_globl" (nearest: read_global)`},
		{"i_jmp", `probes: probe "i_jmp": unknown symbol "i_jmp" (nearest: i_jmp16, i_jmp_reg, i_jmp_rel8, i_jmp_rel32, i_nop)`},
		{"i_c", `probes: probe "i_c": unknown symbol "i_c" (nearest: i_call_reg, i_call_rel, i_call_rip, i_call_rsp, i_cmp_rip_imm)`},
		{"zzqqxxyyvv", `probes: probe "zzqqxxyyvv": unknown symbol "zzqqxxyyvv" (no function has a similar name)`},
		{"x=counter a=rdi", `probes: probe "x" (x=counter a=rdi): counter is not a function (a data or untyped symbol; asm code needs .type counter, @function)`},
		{"untyped", `probes: probe "untyped": untyped is not a function (a data or untyped symbol; asm code needs .type untyped, @function)`},
		{"i_movabs+3", `probes: probe "i_movabs+0x3" (i_movabs+3): i_movabs+0x3 is inside the instruction at +0x0 (10 bytes: mov $0x1122334455667788,%rax); boundaries are +0x0 and +0xa`},
		{"i_bad", `probes: probe "i_bad": i_bad: cannot decode the instruction (bytes 66 e9 00 00): invalid instruction`},
		{"i_bad2+1", `probes: probe "i_bad2+0x1" (i_bad2+1): cannot tell whether i_bad2+0x1 is an instruction boundary: the bytes at +0x0 (06 c3) do not decode (unrecognized instruction)`},
		{"i_movabs+0xb", `probes: probe "i_movabs+0xb": i_movabs+0xb is past the end of i_movabs (0xb bytes)`},
		{"i_movabs+0xffffffffffffffff", `probes: probe "i_movabs+0xffffffffffffffff": i_movabs+0xffffffffffffffff is past the end of i_movabs (0xb bytes)`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			err := resolveErr(t, img, tc.spec)
			require.EqualError(t, err, tc.msg)
			var re *ResolveError
			require.ErrorAs(t, err, &re)
		})
	}

	// Two static functions called twin.
	err := resolveErr(t, img, "twin")
	require.ErrorContains(t, err, "2 functions are named twin (at 0x")

	// %return takes no offset, even from a Spec built in code.
	_, err = Resolve([]Spec{{Name: "r", Symbol: "pick", Off: 5, Return: true}}, img)
	require.ErrorContains(t, err, "%return probes the function's return from its entry: write pick%return, without +OFF")

	// Every bad spec is reported, not just the first.
	err = resolveErr(t, img, "nosuch", "i_int3", "pick")
	require.ErrorContains(t, err, `probe "nosuch": unknown symbol`)
	require.ErrorContains(t, err, `probe "i_int3": i_int3: cannot probe "int3"`)
	require.Equal(t, 2, strings.Count(err.Error(), "probes: "))

	// Names must be unique across everything resolved together.
	_, err = Resolve([]Spec{{Name: "a", Symbol: "pick"}, {Name: "a", Symbol: "sum"}}, img)
	require.ErrorContains(t, err, `duplicate probe name "a"`)

	// A symbol inside another function's instruction: each decodes fine
	// alone, but their sites would overlap.
	ss, err := ParseSpecs([]string{"i_movabs", "i_alias"})
	require.NoError(t, err)
	_, err = Resolve(ss, img)
	require.ErrorContains(t, err, `probes: the site at i_movabs (10 bytes, probe "i_movabs") overlaps the site at i_alias (probe "i_alias")`)

	_, err = Resolve(nil, nil)
	require.EqualError(t, err, "probes: no guest image to resolve against")
}

func TestResolveSharedSites(t *testing.T) {
	img := testImage(t)
	p := resolve1(t, img,
		"b=sum a=rdi",
		"a=pick",
		"pick%return r=retval @tid=3",
		"c=pick+0 x=*rdi:4",
		"sum+0x3",
	)
	require.Len(t, p.Probes, 5)
	for i, pr := range p.Probes {
		require.Equal(t, uint32(i), pr.ID)
		got, ok := p.Probe(pr.ID)
		require.True(t, ok)
		require.Equal(t, pr.Name, got.Name)
	}
	_, ok := p.Probe(5)
	require.False(t, ok)

	pick, sumSym := sym(t, img, "pick"), sym(t, img, "sum")
	require.Len(t, p.Sites, 3, "pick's entry, sum's entry and sum+3: one site each")
	require.Equal(t, []uint64{pick.Addr, sumSym.Addr, sumSym.Addr + 3},
		[]uint64{p.Sites[0].Addr, p.Sites[1].Addr, p.Sites[2].Addr}, "sites are sorted by address")
	require.Equal(t, []uint32{1, 2, 3}, p.Sites[0].Probes, "entry, return and +0 probes share pick's entry site")
	require.Equal(t, []uint32{0}, p.Sites[1].Probes)
	require.Equal(t, []uint32{4}, p.Sites[2].Probes)

	ret := p.Probes[2]
	require.Equal(t, "pick_return", ret.Name)
	require.True(t, ret.Return)
	require.Equal(t, pick.Addr, ret.Addr, "a %return probe's site is the entry")
	require.Equal(t, []uint32{3}, ret.Threads)
	require.Equal(t, "pick%return r=retval @tid=3", ret.Spec)
	require.Equal(t, "pick", ret.Symbol)

	s, ok := p.SiteAt(pick.Addr)
	require.True(t, ok)
	require.Same(t, &p.Sites[0], s)
	_, ok = p.SiteAt(pick.Addr + 1)
	require.False(t, ok)
	_, ok = p.SiteAt(0)
	require.False(t, ok)
	_, ok = p.SiteAt(^uint64(0))
	require.False(t, ok)

	// The site holds the bytes the VMM checks before patching.
	seg, _ := img.ExecSegment(pick.Addr)
	require.Equal(t, seg.Data[pick.Addr-seg.Addr:pick.Addr-seg.Addr+uint64(s.Len)], s.Orig)
}

func TestReturnSite(t *testing.T) {
	img := testImage(t)
	p := resolve1(t, img, "pick%return")
	start := sym(t, img, "_start")
	// Find a call in _start, and a boundary that does not follow one.
	var retAddr, notRet uint64
	prevCall := false
	for _, off := range boundaries(t, img, start) {
		s, err := DecodeSite(img, start.Addr+off)
		require.NoError(t, err)
		if prevCall && retAddr == 0 {
			retAddr = s.Addr
		} else if !prevCall && off > 0 && notRet == 0 {
			notRet = s.Addr
		}
		prevCall = s.Branch == BranchCall
	}
	require.NotZero(t, retAddr)
	require.NotZero(t, notRet)

	s, err := p.ReturnSite(retAddr)
	require.NoError(t, err)
	require.Equal(t, retAddr, s.Addr)
	require.Empty(t, s.Probes)

	_, err = p.ReturnSite(notRet)
	require.ErrorContains(t, err, "is not a return address: no call instruction ends there")
	_, err = p.ReturnSite(0x10)
	require.ErrorContains(t, err, "probes: 0x10 is not in the code of an executable segment")
	_, err = (&Plan{}).ReturnSite(retAddr)
	require.Error(t, err)
}

func TestBranchKindString(t *testing.T) {
	for k, s := range map[BranchKind]string{BranchNone: "none", BranchCall: "call", BranchJmp: "jmp",
		BranchJcc: "jcc", BranchRet: "ret", BranchOther: "other", 9: "BranchKind(9)"} {
		require.Equal(t, s, k.String())
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"mutex_lok", "mutex_lock", 1}, {"kitten", "sitting", 3}} {
		require.Equal(t, tc.d, editDistance(tc.a, tc.b))
		require.Equal(t, tc.d, editDistance(tc.b, tc.a))
	}
}
