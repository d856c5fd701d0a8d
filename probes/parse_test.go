package probes

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"
)

func TestParseSpec(t *testing.T) {
	type arg struct{ name, expr string } // expr in canonical form
	for _, tc := range []struct {
		text    string
		name    string
		symbol  string
		off     uint64
		ret     bool
		args    []arg
		threads []uint32
	}{
		{text: "mutex_lock", name: "mutex_lock", symbol: "mutex_lock"},
		{text: "  mutex_lock\t", name: "mutex_lock", symbol: "mutex_lock"},
		{text: "mutex_lock+0", name: "mutex_lock", symbol: "mutex_lock"},
		{text: "mutex_lock+0x10", name: "mutex_lock+0x10", symbol: "mutex_lock", off: 0x10},
		{text: "mutex_lock+16", name: "mutex_lock+0x10", symbol: "mutex_lock", off: 0x10},
		{text: "f.cold.1+0X2", name: "f.cold.1+0x2", symbol: "f.cold.1", off: 2},
		{text: "mutex_lock%return ok=retval", name: "mutex_lock_return", symbol: "mutex_lock", ret: true,
			args: []arg{{"ok", "rax"}}},
		{text: "acq=mutex_lock lock=rdi n=arg1 c=*(arg0+8):4 o=**rdi @tid=2,3 @tid=3,4",
			name: "acq", symbol: "mutex_lock",
			args:    []arg{{"lock", "rdi"}, {"n", "rsi"}, {"c", "*(rdi+0x8):4"}, {"o", "**rdi"}},
			threads: []uint32{2, 3, 4}},
		{text: "x=f a=*(rdi-8) b=*(*(rsp+0x10)+4):2 c=rdi+8-8 d=*( rdi + 8 ):1 e=*rdi+8",
			name: "x", symbol: "f",
			args: []arg{{"a", "*(rdi-0x8)"}, {"b", "*(*(rsp+0x10)+0x4):2"}, {"c", "rdi"}, {"d", "*(rdi+0x8):1"}, {"e", "*rdi+0x8"}}},
		{text: "f a=arg0 b=arg1 c=arg2 d=arg3 e=arg4 g=arg5", name: "f", symbol: "f",
			args: []arg{{"a", "rdi"}, {"b", "rsi"}, {"c", "rdx"}, {"d", "rcx"}, {"e", "r8"}, {"g", "r9"}}},
		{text: "f a=RBX b=r15 c=rip d=rbp e=rsp g=rax h=r10", name: "f", symbol: "f",
			args: []arg{{"a", "rbx"}, {"b", "r15"}, {"c", "rip"}, {"d", "rbp"}, {"e", "rsp"}, {"g", "rax"}, {"h", "r10"}}},
		{text: "f a=**rdi:4 b=*(*rdi:4) c=rdi-0x8000000000000000 d=((rdi))", name: "f", symbol: "f",
			args: []arg{{"a", "**rdi:4"}, {"b", "*(*rdi:4)"}, {"c", "rdi-0x8000000000000000"}, {"d", "rdi"}}},
		{text: "my.probe-1=f @tid=0", name: "my.probe-1", symbol: "f", threads: []uint32{0}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			s, err := ParseSpec(tc.text)
			require.NoError(t, err)
			require.Equal(t, tc.name, s.Name)
			require.Equal(t, tc.symbol, s.Symbol)
			require.Equal(t, tc.off, s.Off)
			require.Equal(t, tc.ret, s.Return)
			require.Equal(t, tc.threads, s.Threads)
			require.Equal(t, tc.text, s.Text)
			require.Len(t, s.Args, len(tc.args))
			for i, a := range tc.args {
				require.Equal(t, a.name, s.Args[i].Name)
				require.Equal(t, a.expr, s.Args[i].Expr.String())
			}
			// The canonical form parses back to the same probe.
			again, err := ParseSpec(s.String())
			require.NoError(t, err, s.String())
			again.Text, s.Text = "", ""
			require.Equal(t, s, again)
		})
	}
}

func TestParseExprStructure(t *testing.T) {
	e, err := ParseExpr("*(*(arg0+8)-4):2+1", false)
	require.NoError(t, err)
	require.Equal(t, Expr{
		Deref: &Expr{Deref: &Expr{Reg: x86asm.RDI, Off: 8}, Width: 8, Off: -4},
		Width: 2, Off: 1,
	}, e)
	require.Equal(t, 3, (&Expr{Deref: &e, Width: 8}).Depth())

	e, err = ParseExpr("retval", true)
	require.NoError(t, err)
	require.Equal(t, Expr{Reg: x86asm.RAX}, e)
}

func TestParseSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		text string
		col  int
		msg  string
	}{
		{"", 0, "empty spec"},
		{"   ", 0, "empty spec"},
		// unknown register
		{"f a=eax", 5, `unknown register "eax"`},
		{"f a=*(arg6+8)", 7, `unknown register "arg6"`},
		// bad width
		{"f a=*rdi:3", 9, `bad width ":3" (want :1, :2, :4 or :8)`},
		{"f a=*rdi:", 9, `bad width ":"`},
		{"f a=*(rdi):16", 11, `bad width ":16"`},
		{"f a=rdi:4", 8, `bad width: ":4" applies only to a memory dereference`},
		{"f%return a=retval:4", 18, `bad width: ":4" applies only to a memory dereference`},
		{"f a=(*rdi):4", 11, `bad width: ":4" applies only to a memory dereference`},
		{"f a=*rdi+8:4", 11, `bad width: ":4" must follow the dereference directly`},
		// empty names, bad names
		{"=f", 1, "empty probe name"},
		{"f =rdi", 3, "empty argument name"},
		{"a!b=f", 2, `invalid character "!" in probe name`},
		{"f a!=rdi", 4, `invalid character "!" in argument name`},
		// duplicate argument
		{"f a=rdi b=rsi a=rdx", 15, `duplicate argument name "a"`},
		// retval not at return
		{"f a=retval", 5, "retval is only defined at a %return probe"},
		{"f+4 a=*(retval+8)", 9, "retval is only defined at a %return probe"},
		// unbalanced parentheses
		{"f a=*(rdi+8", 6, "unbalanced parentheses: this '(' is never closed"},
		{"f a=*(rdi+8 b=rsi", 13, `unexpected "b=rsi" inside the parentheses opened at column 6`},
		{"f a=rdi)", 8, "unbalanced parentheses: ')' without a matching '('"},
		{"f a=*(rdi+8))", 13, "unbalanced parentheses: ')' without a matching '('"},
		{"f a=)", 5, "unbalanced parentheses: ')' without a matching '('"},
		// trailing junk
		{"f a=*rdi]", 9, `trailing junk "]" after the expression`},
		{"f+8!", 4, `trailing junk "!" after "f+8"`},
		{"f a=rdi rsi", 9, `argument "rsi" has no name: write NAME=EXPR`},
		{"f @tid=1x", 8, `bad thread id "1x"`},
		{"f @tid=1;", 9, `trailing junk ";" after the thread ids`},
		// offset overflow
		{"f+0x1ffffffffffffffff", 3, "offset overflow: 0x1ffffffffffffffff does not fit in 64 bits"},
		{"f+18446744073709551616", 3, "offset overflow"},
		{"f a=*(rdi+0x8000000000000000)", 11, "offset overflow: 0x8000000000000000 does not fit in a signed 64-bit offset"},
		{"f a=rdi-0x8000000000000001", 9, "offset overflow"},
		{"f a=rdi+0x7fffffffffffffff+1", 27, "offset overflow: the offsets add up"},
		{"f a=rdi-0x8000000000000000-1", 27, "offset overflow: the offsets add up"},
		{"f @tid=4294967296", 8, "thread id 4294967296 does not fit in 32 bits"},
		// %return
		{"f+8%return", 2, "%return probes the function's return from its entry: write f%return, without +OFF"},
		{"f%ret", 2, `unknown suffix "%ret" (want %return)`},
		{"f%", 2, `unknown suffix "%" (want %return)`},
		// other
		{"+8", 1, "invalid character \"+\" where a symbol should start"},
		{"x=", 3, "missing symbol"},
		{"f+", 3, "missing offset"},
		{"f+010", 3, "a leading 0 is not octal"},
		{"f+0xg", 3, `bad offset "0xg"`},
		{"f a=", 5, `missing expression after "a="`},
		{"f a=*", 6, "missing expression"},
		{"f a=()", 6, "missing expression inside ()"},
		{"f a=rdi+", 9, "missing offset"},
		{"f a=rdi+rsi", 9, `bad offset "rsi"`},
		{"f a=&rdi", 5, `invalid character "&"`},
		{"f a=" + strings.Repeat("*", 40) + "rdi", 37, "expression nested too deeply"},
		{"f a=" + strings.Repeat("(", 40) + "rdi" + strings.Repeat(")", 40), 37, "expression nested too deeply"},
		{"f @tid=", 8, "missing thread id"},
		{"f @tid=1,,2", 10, `invalid character "," where the thread id should start`},
		{"f @pid=3", 3, `unknown filter "@pid=3" (want @tid=N[,M...])`},
		{"f x=Ωrdi", 5, `invalid character "Ω"`},
		{"Ωf a=eax", 1, `invalid character "Ω" where a symbol should start`},
		{"fΩ a=eax", 2, `trailing junk "Ω" after "f"`},
		{"f b=Ω a=eax", 5, `invalid character "Ω"`},
		{"f Ω=rdi a=eax", 3, `invalid character "Ω" in argument name`},
		{"ff Ω=rdi", 4, `invalid character "Ω" in argument name`},
		{"Ω=f b=eax", 1, `invalid character "Ω" in probe name`},
		{"f a=rdi b=Ωx", 11, `invalid character "Ω"`},
		{"f c=*rdi:Ω", 9, `bad width ":"`},
		{"ΩΩ=f", 1, `invalid character "Ω" in probe name`},
		{"f ΩΩ a=rdi", 3, `argument "ΩΩ" has no name`},
		{"f a=rdi ΩΩ=x", 9, `invalid character "Ω" in argument name`},
	} {
		t.Run(tc.text, func(t *testing.T) {
			_, err := ParseSpec(tc.text)
			require.Error(t, err)
			var se *SpecError
			require.True(t, errors.As(err, &se), "%T", err)
			require.Equal(t, tc.text, se.Text)
			require.Contains(t, se.Msg, tc.msg)
			require.Equal(t, tc.col, se.Col, "%v", err)
			require.True(t, strings.HasPrefix(err.Error(), "probes: "), err.Error())
		})
	}
}

func TestSpecErrorMessage(t *testing.T) {
	_, err := ParseSpec("mutex_lock n=*(arg0+8):3")
	require.EqualError(t, err, `probes: "mutex_lock n=*(arg0+8):3" column 23: bad width ":3" (want :1, :2, :4 or :8)`)
}

func TestParseSpecsDuplicateNames(t *testing.T) {
	for _, tc := range []struct {
		texts []string
		msg   string
		col   int
	}{
		{[]string{"f", "f a=rdi"}, `duplicate probe name "f" (probe 1, "f", has it too)`, 1},
		{[]string{"x=f", "g", "  x=g a=rdi"}, `duplicate probe name "x" (probe 1, "x=f", has it too)`, 3},
		{[]string{"f+0x10", "f+16"}, `duplicate probe name "f+0x10"`, 1},
		{[]string{"f%return", "f_return=g"}, `duplicate probe name "f_return"`, 1},
	} {
		_, err := ParseSpecs(tc.texts)
		var se *SpecError
		require.True(t, errors.As(err, &se), "%v", err)
		require.Contains(t, se.Msg, tc.msg)
		require.Equal(t, tc.col, se.Col)
	}
	specs, err := ParseSpecs([]string{"f", "f%return", "f+4"})
	require.NoError(t, err)
	require.Len(t, specs, 3)
}

func TestExprCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"arg0", "rdi"},
		{"*(arg0+8):4", "*(rdi+0x8):4"},
		{"**rdi", "**rdi"},
		{"**rdi:4", "**rdi:4"},
		{"*(*rdi:4)", "*(*rdi:4)"},
		{"*(*rdi+1)", "*(*rdi+0x1)"},
		{"*(rdi-8)+16", "*(rdi-0x8)+0x10"},
		{"(rdi+8)+8", "rdi+0x10"},
		{"rdi+8-8", "rdi"},
		{"*((rdi))", "*rdi"},
		{"* ( rsp + 0x10 ) : 8", "*(rsp+0x10)"},
		{"rdi-0x8000000000000000", "rdi-0x8000000000000000"},
		{"*(rdi+0x7fffffffffffffff):1", "*(rdi+0x7fffffffffffffff):1"},
	} {
		e, err := ParseExpr(tc.in, false)
		if tc.in == "* ( rsp + 0x10 ) : 8" {
			// Blanks are fine inside, but the width must touch its ':'.
			require.Error(t, err)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, e.String(), tc.in)
		back, err := ParseExpr(e.String(), false)
		require.NoError(t, err)
		require.Equal(t, e, back)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		msg  string
	}{
		{Spec{Symbol: "f"}, "empty probe name"},
		{Spec{Name: "a b", Symbol: "f"}, "invalid character in probe name"},
		{Spec{Name: "x"}, "missing symbol"},
		{Spec{Name: "x", Symbol: "f", Off: 4, Return: true}, "write f%return, without +OFF"},
		{Spec{Name: "x", Symbol: "f", Args: []Arg{{Name: "", Expr: Expr{Reg: x86asm.RDI}}}}, "empty argument name"},
		{Spec{Name: "x", Symbol: "f", Args: []Arg{{Name: "a", Expr: Expr{Reg: x86asm.RDI}}, {Name: "a", Expr: Expr{Reg: x86asm.RSI}}}}, `duplicate argument name "a"`},
		{Spec{Name: "x", Symbol: "f", Args: []Arg{{Name: "a", Expr: Expr{Reg: x86asm.EAX}}}}, "unknown register"},
		{Spec{Name: "x", Symbol: "f", Args: []Arg{{Name: "a", Expr: Expr{Deref: &Expr{Reg: x86asm.RDI}, Width: 3}}}}, "bad width 3"},
		{Spec{Name: "x", Symbol: "f", Args: []Arg{{Name: "a", Expr: Expr{Reg: x86asm.RDI, Width: 4}}}}, "bad width 4 on a register"},
	} {
		err := tc.spec.validate()
		require.ErrorContains(t, err, tc.msg)
	}
	ok := Spec{Name: "x", Symbol: "f", Args: []Arg{{Name: "a", Expr: Expr{Deref: &Expr{Reg: x86asm.R12, Off: -8}, Width: 2}}}}
	require.NoError(t, ok.validate())
	require.Equal(t, "x=f a=*(r12-0x8):2", ok.String())
}

// SYMBOL@LIBRARY names the file that defines the symbol; the name keeps
// only the symbol, and the spec prints back as it was written.
func TestParseObject(t *testing.T) {
	for _, tc := range []struct {
		text, name, symbol, object string
		off                        uint64
		ret                        bool
	}{
		{text: "pthread_mutex_lock@libc.so.6", name: "pthread_mutex_lock", symbol: "pthread_mutex_lock", object: "libc.so.6"},
		{text: "l=f+0x4@libstdc++.so.6 a=arg0", name: "l", symbol: "f", object: "libstdc++.so.6", off: 4},
		{text: "r=crc32@/lib/x86_64-linux-gnu/libz.so.1%return", name: "r", symbol: "crc32", object: "/lib/x86_64-linux-gnu/libz.so.1", ret: true},
	} {
		s, err := ParseSpec(tc.text)
		require.NoError(t, err, tc.text)
		require.Equal(t, tc.name, s.Name, tc.text)
		require.Equal(t, tc.symbol, s.Symbol, tc.text)
		require.Equal(t, tc.object, s.Object, tc.text)
		require.Equal(t, tc.off, s.Off, tc.text)
		require.Equal(t, tc.ret, s.Return, tc.text)
		back, err := ParseSpec(s.String())
		require.NoError(t, err)
		require.Equal(t, s.Object, back.Object)
	}
	_, err := ParseSpec("f@")
	require.ErrorContains(t, err, "missing file name after '@'")
}
