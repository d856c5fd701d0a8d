package probes

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Spec is one probe as the user wrote it, parsed but not yet resolved
// against an image.
type Spec struct {
	Name   string // never empty after parsing: defaults to DefaultName
	Symbol string // the function probed
	Off    uint64 // byte offset into Symbol (0 for Return)
	// Object names the file that defines Symbol, for a Linux program: a
	// shared library's base name (libc.so.6) or a path. "": every file
	// the program maps that defines it.
	Object  string
	Return  bool     // probe the function's return (%return)
	Args    []Arg    // in the order written
	Threads []uint32 // report only hits by these thread ids; empty = all
	// Text is where the spec came from: the command-line text, or the
	// canonical form of a file entry (String()).
	Text string
	// Source locates Text for messages: "" for the command line,
	// "probes.yaml:7:3" for a file entry.
	Source string
}

// Arg is one named argument a probe reports at each hit.
type Arg struct {
	Name string
	Expr Expr
}

// DefaultName is the name a probe gets when the spec gives none:
// SYMBOL, SYMBOL+0xOFF, SYMBOL_return.
func DefaultName(symbol string, off uint64, ret bool) string {
	n := symbol
	if off != 0 {
		n += "+" + hex(off)
	}
	if ret {
		n += "_return"
	}
	return n
}

// At formats the probed location: SYMBOL[+0xOFF][@OBJECT][%return].
func (s *Spec) At() string {
	a := s.Symbol
	if s.Off != 0 {
		a += "+" + hex(s.Off)
	}
	if s.Object != "" {
		a += "@" + s.Object
	}
	if s.Return {
		a += "%return"
	}
	return a
}

// String formats s in the command-line syntax; ParseSpec accepts it back.
func (s *Spec) String() string {
	var b strings.Builder
	b.WriteString(s.Name)
	b.WriteByte('=')
	b.WriteString(s.At())
	for _, a := range s.Args {
		fmt.Fprintf(&b, " %s=%s", a.Name, a.Expr)
	}
	if len(s.Threads) > 0 {
		b.WriteString(" @tid=")
		for i, t := range s.Threads {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatUint(uint64(t), 10))
		}
	}
	return b.String()
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// SpecError is a malformed spec: the text, the 1-based column in it where
// the problem is (0 when it concerns the whole spec) and why.
type SpecError struct {
	Source string // "" for the command line, else "file:line:col"
	Text   string
	Col    int
	Msg    string
}

func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString("probes: ")
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	if e.Text != "" {
		b.WriteString(strconv.Quote(e.Text))
		if e.Col > 0 {
			fmt.Fprintf(&b, " column %d", e.Col)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// validate checks what the parsers guarantee, for specs built in code.
func (s *Spec) validate() error {
	bad := func(format string, args ...any) error {
		text := s.Text
		if text == "" {
			text = s.String()
		}
		return &SpecError{Source: s.Source, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Name == "":
		return bad("empty probe name")
	case strings.IndexFunc(s.Name, func(r rune) bool { return r >= utf8.RuneSelf || !isNameChar(byte(r)) }) >= 0:
		return bad("invalid character in probe name %q", s.Name)
	case s.Symbol == "":
		return bad("missing symbol")
	case s.Return && s.Off != 0:
		return bad("%%return probes the function's return from its entry: write %s%%return, without +OFF", s.Symbol)
	}
	seen := map[string]bool{}
	for _, a := range s.Args {
		switch {
		case a.Name == "":
			return bad("empty argument name")
		case seen[a.Name]:
			return bad("duplicate argument name %q", a.Name)
		}
		seen[a.Name] = true
		if err := a.Expr.validate(0); err != nil {
			return bad("argument %q: %v", a.Name, err)
		}
	}
	return nil
}
