package probes

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/arch/x86/x86asm"
)

// Expr is an argument expression: a register, or the Width bytes at the
// address another expression evaluates to, plus a constant offset.
//
//	rdi            Expr{Reg: RDI}
//	rdi-0x8        Expr{Reg: RDI, Off: -8}
//	*(rdi+0x8):4   Expr{Deref: &Expr{Reg: RDI, Off: 8}, Width: 4}
//	**rdi+0x10     Expr{Deref: &Expr{Deref: &Expr{Reg: RDI}, Width: 8}, Width: 8, Off: 0x10}
type Expr struct {
	Reg   x86asm.Reg // the register read when Deref is nil
	Deref *Expr      // if non-nil: read Width bytes at the address it evaluates to
	Width int        // 1, 2, 4 or 8 for a dereference; 0 otherwise
	Off   int64      // added (modulo 2^64) to the register or the value read
}

// String formats e canonically (hex offsets, registers for argN and
// retval); ParseExpr accepts it back.
func (e Expr) String() string {
	var s string
	if e.Deref == nil {
		s = regName(e.Reg)
	} else {
		s = "*" + e.Deref.operand()
		if e.Width != 8 {
			s += ":" + strconv.Itoa(e.Width)
		}
	}
	switch {
	case e.Off > 0:
		s += "+" + hex(uint64(e.Off))
	case e.Off < 0:
		s += "-" + hex(-uint64(e.Off)) // two's complement also covers MinInt64
	}
	return s
}

// operand formats e as the operand of a '*': bare when that parses back
// as e, parenthesized otherwise.
func (e Expr) operand() string {
	if e.Off == 0 && (e.Deref == nil || e.Width == 8) {
		return e.String()
	}
	return "(" + e.String() + ")"
}

// Depth is the number of memory reads evaluating e takes.
func (e Expr) Depth() int {
	if e.Deref == nil {
		return 0
	}
	return 1 + e.Deref.Depth()
}

// registers maps the names an expression may use to registers.
var registers = map[string]x86asm.Reg{
	"rax": x86asm.RAX, "rbx": x86asm.RBX, "rcx": x86asm.RCX, "rdx": x86asm.RDX,
	"rsi": x86asm.RSI, "rdi": x86asm.RDI, "rbp": x86asm.RBP, "rsp": x86asm.RSP,
	"r8": x86asm.R8, "r9": x86asm.R9, "r10": x86asm.R10, "r11": x86asm.R11,
	"r12": x86asm.R12, "r13": x86asm.R13, "r14": x86asm.R14, "r15": x86asm.R15,
	"rip": x86asm.RIP,
	// SysV AMD64 integer arguments.
	"arg0": x86asm.RDI, "arg1": x86asm.RSI, "arg2": x86asm.RDX,
	"arg3": x86asm.RCX, "arg4": x86asm.R8, "arg5": x86asm.R9,
}

// Registers lists the registers an Expr may read (the 16 GPRs and RIP).
var Registers = []x86asm.Reg{
	x86asm.RAX, x86asm.RCX, x86asm.RDX, x86asm.RBX, x86asm.RSP, x86asm.RBP, x86asm.RSI, x86asm.RDI,
	x86asm.R8, x86asm.R9, x86asm.R10, x86asm.R11, x86asm.R12, x86asm.R13, x86asm.R14, x86asm.R15,
	x86asm.RIP,
}

func regName(r x86asm.Reg) string {
	if r == x86asm.RIP {
		return "rip"
	}
	return strings.ToLower(r.String())
}

func validReg(r x86asm.Reg) bool {
	return r == x86asm.RIP || r >= x86asm.RAX && r <= x86asm.R15
}

// expr parses a whole expression: it must use up the scanner's text.
func (sc *scanner) expr(depth int) (Expr, error) {
	sc.skipSpace()
	if sc.pos == sc.end {
		return Expr{}, sc.errAt(sc.pos, "missing expression")
	}
	e, err := sc.sum(depth)
	if err != nil {
		return Expr{}, err
	}
	sc.skipSpace()
	switch {
	case sc.pos == sc.end:
		return e, nil
	case sc.peek() == ')':
		return Expr{}, sc.errAt(sc.pos, "unbalanced parentheses: ')' without a matching '('")
	case sc.peek() == ':':
		return Expr{}, sc.errAt(sc.pos, "bad width: %q must follow the dereference directly (write *(EXPR+OFF):W)", sc.rest())
	}
	return Expr{}, sc.errAt(sc.pos, "trailing junk %q after the expression", sc.rest())
}

// sum := sized (('+'|'-') NUM)*
func (sc *scanner) sum(depth int) (Expr, error) {
	e, err := sc.sized(depth)
	if err != nil {
		return Expr{}, err
	}
	for {
		sc.skipSpace()
		op := sc.peek()
		if op != '+' && op != '-' {
			return e, nil
		}
		at := sc.pos
		sc.pos++
		sc.skipSpace()
		limit := uint64(math.MaxInt64)
		if op == '-' {
			limit++
		}
		n, err := sc.number(limit, "offset")
		if err != nil {
			return Expr{}, err
		}
		d := int64(n) // MinInt64 when n == 1<<63, which is right for '-'
		if op == '-' {
			d = -d
		}
		if d > 0 && e.Off > math.MaxInt64-d || d < 0 && e.Off < math.MinInt64-d {
			return Expr{}, sc.errAt(at, "offset overflow: the offsets add up to more than a signed 64-bit offset")
		}
		e.Off += d
	}
}

// sized := unary [':' WIDTH], the width only after a dereference.
func (sc *scanner) sized(depth int) (Expr, error) {
	star := sc.peek() == '*'
	e, err := sc.unary(depth)
	if err != nil {
		return Expr{}, err
	}
	if sc.peek() != ':' {
		return e, nil
	}
	colon := sc.pos
	sc.pos++
	w := sc.run(isAlnum)
	if !star {
		return Expr{}, sc.errAt(colon, "bad width: %q applies only to a memory dereference (*EXPR)", ":"+w)
	}
	switch w {
	case "1", "2", "4", "8":
		e.Width = int(w[0] - '0')
	default:
		return Expr{}, sc.errAt(colon, "bad width %q (want :1, :2, :4 or :8)", ":"+w)
	}
	return e, nil
}

// unary := '*' unary | primary
func (sc *scanner) unary(depth int) (Expr, error) {
	if depth >= maxDepth {
		return Expr{}, sc.errAt(sc.pos, "expression nested too deeply (more than %d levels)", maxDepth)
	}
	sc.skipSpace()
	if sc.peek() != '*' {
		return sc.primary(depth)
	}
	sc.pos++
	inner, err := sc.unary(depth + 1)
	if err != nil {
		return Expr{}, err
	}
	return Expr{Deref: &inner, Width: 8}, nil
}

// primary := REGISTER | argN | retval | '(' sum ')'
func (sc *scanner) primary(depth int) (Expr, error) {
	start := sc.pos
	if sc.peek() == '(' {
		sc.pos++
		sc.skipSpace()
		if sc.peek() == ')' {
			return Expr{}, sc.errAt(sc.pos, "missing expression inside ()")
		}
		e, err := sc.sum(depth + 1)
		if err != nil {
			return Expr{}, err
		}
		sc.skipSpace()
		switch {
		case sc.peek() == ')':
			sc.pos++
			return e, nil
		case sc.pos == sc.end:
			return Expr{}, sc.errAt(start, "unbalanced parentheses: this '(' is never closed")
		case sc.peek() == ':':
			return Expr{}, sc.errAt(sc.pos, "bad width: %q must follow the dereference directly (write *(EXPR+OFF):W)", sc.rest())
		}
		return Expr{}, sc.errAt(sc.pos, "unexpected %q inside the parentheses opened at column %d (want +OFF, -OFF or ')')",
			sc.rest(), utf8.RuneCountInString(sc.text[:start])+1)
	}
	w := sc.run(func(c byte) bool { return isAlnum(c) || c == '_' })
	switch {
	case w == "" && sc.pos == sc.end:
		return Expr{}, sc.errAt(start, "missing expression")
	case w == "" && sc.peek() == ')':
		return Expr{}, sc.errAt(start, "unbalanced parentheses: ')' without a matching '('")
	case w == "":
		return Expr{}, sc.errAt(start, "invalid character %q (want a register, argN, retval, '*' or '(')", firstRune(sc.rest()))
	case strings.EqualFold(w, "retval"):
		if !sc.ret {
			return Expr{}, sc.errAt(start, "retval is only defined at a %%return probe (use rax to read the register anyway)")
		}
		return Expr{Reg: registers["rax"]}, nil
	}
	r, ok := registers[strings.ToLower(w)]
	if !ok {
		return Expr{}, sc.errAt(start, "unknown register %q (want one of the 16 64-bit GPRs, rip, arg0..arg5 or retval)", w)
	}
	return Expr{Reg: r}, nil
}

func (e Expr) validate(depth int) error {
	if depth >= maxDepth {
		return fmt.Errorf("nested too deeply")
	}
	if e.Deref == nil {
		if !validReg(e.Reg) {
			return fmt.Errorf("unknown register %v", e.Reg)
		}
		if e.Width != 0 {
			return fmt.Errorf("bad width %d on a register", e.Width)
		}
		return nil
	}
	switch e.Width {
	case 1, 2, 4, 8:
	default:
		return fmt.Errorf("bad width %d (want 1, 2, 4 or 8)", e.Width)
	}
	return e.Deref.validate(depth + 1)
}
