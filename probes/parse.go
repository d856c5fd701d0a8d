package probes

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of '*' and '(' in one expression.
const maxDepth = 32

// ParseSpec parses one probe written in the command-line syntax:
//
//	[NAME=]SYMBOL[+OFF][%return] [ARGNAME=EXPR | @tid=N[,M...]]...
//
// Errors are *SpecError.
func ParseSpec(text string) (Spec, error) {
	return parseLine(text, "")
}

// ParseSpecs parses several command-line specs and checks that their
// names are unique.
func ParseSpecs(texts []string) ([]Spec, error) {
	specs := make([]Spec, 0, len(texts))
	for _, t := range texts {
		s, err := ParseSpec(t)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	if err := checkNames(specs); err != nil {
		return nil, err
	}
	return specs, nil
}

// ParseExpr parses one argument expression. ret says whether the probe is
// at a return, the only place retval may be used.
func ParseExpr(text string, ret bool) (Expr, error) {
	sc := &scanner{text: text, end: len(text), ret: ret}
	return sc.expr(0)
}

// checkNames refuses two specs with one name; the error points at the
// second.
func checkNames(specs []Spec) error {
	seen := make(map[string]int, len(specs))
	for i, s := range specs {
		if j, dup := seen[s.Name]; dup {
			col := 0
			if toks := tokens(s.Text); s.Source == "" && len(toks) > 0 {
				col = utf8.RuneCountInString(s.Text[:toks[0].start]) + 1
			}
			return &SpecError{Source: s.Source, Text: s.Text, Col: col,
				Msg: fmt.Sprintf("duplicate probe name %q (probe %d, %q, has it too)", s.Name, j+1, specs[j].Text)}
		}
		seen[s.Name] = i
	}
	return nil
}

// scanner reads text[pos:end]; errors point into text.
type scanner struct {
	text     string
	pos, end int
	ret      bool   // retval allowed
	source   string // SpecError.Source
}

func (sc *scanner) errAt(pos int, format string, args ...any) *SpecError {
	pos = min(max(pos, 0), len(sc.text))
	return &SpecError{Source: sc.source, Text: sc.text, Col: utf8.RuneCountInString(sc.text[:pos]) + 1,
		Msg: fmt.Sprintf(format, args...)}
}

func (sc *scanner) peek() byte {
	if sc.pos < sc.end {
		return sc.text[sc.pos]
	}
	return 0
}

func (sc *scanner) skipSpace() {
	for sc.pos < sc.end && isBlank(sc.text[sc.pos]) {
		sc.pos++
	}
}

// run consumes the longest run of bytes ok accepts.
func (sc *scanner) run(ok func(byte) bool) string {
	start := sc.pos
	for sc.pos < sc.end && ok(sc.text[sc.pos]) {
		sc.pos++
	}
	return sc.text[start:sc.pos]
}

// rest is the unconsumed text, for messages.
func (sc *scanner) rest() string { return sc.text[sc.pos:sc.end] }

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
func isSymbolChar(c byte) bool  { return isAlnum(c) || c == '_' || c == '.' || c == '$' }
func isArgNameChar(c byte) bool { return isAlnum(c) || c == '_' || c == '.' }
func isNameChar(c byte) bool    { return isSymbolChar(c) || c == '+' || c == '-' }
func isObjectChar(c byte) bool  { return isSymbolChar(c) || c == '+' || c == '-' || c == '/' }

// token is text[start:end] of a spec line.
type token struct{ start, end int }

// tokens splits a line at blanks outside parentheses, so "x=*(rdi + 8)"
// stays one token.
func tokens(text string) []token {
	var toks []token
	depth, start := 0, -1
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case isBlank(c) && depth == 0:
			if start >= 0 {
				toks = append(toks, token{start, i})
				start = -1
			}
			continue
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		toks = append(toks, token{start, len(text)})
	}
	return toks
}

func parseLine(text, source string) (Spec, error) {
	toks := tokens(text)
	if len(toks) == 0 {
		return Spec{}, &SpecError{Source: source, Text: text, Msg: "empty spec"}
	}
	s := Spec{Text: text, Source: source}
	sc := &scanner{text: text, pos: toks[0].start, end: toks[0].end, source: source}
	if err := sc.target(&s, true); err != nil {
		return Spec{}, err
	}
	seen := map[string]bool{}
	for _, t := range toks[1:] {
		sc := &scanner{text: text, pos: t.start, end: t.end, ret: s.Return, source: source}
		if sc.peek() == '@' {
			tids, err := sc.filter()
			if err != nil {
				return Spec{}, err
			}
			s.Threads = addThreads(s.Threads, tids)
			continue
		}
		a, err := sc.arg()
		if err != nil {
			return Spec{}, err
		}
		if seen[a.Name] {
			return Spec{}, sc.errAt(t.start, "duplicate argument name %q", a.Name)
		}
		seen[a.Name] = true
		s.Args = append(s.Args, a)
	}
	return s, nil
}

func addThreads(have, add []uint32) []uint32 {
	for _, t := range add {
		dup := false
		for _, h := range have {
			dup = dup || h == t
		}
		if !dup {
			have = append(have, t)
		}
	}
	return have
}

// target parses [NAME=]SYMBOL[+OFF][@OBJECT][%return] into s; NAME= only if
// allowName.
func (sc *scanner) target(s *Spec, allowName bool) error {
	start := sc.pos
	if eq := strings.IndexByte(sc.rest(), '='); eq >= 0 {
		if !allowName {
			return sc.errAt(sc.pos+eq, "unexpected '=' in a location (want SYMBOL[+OFF][%%return])")
		}
		name := sc.text[sc.pos : sc.pos+eq]
		if name == "" {
			return sc.errAt(start, "empty probe name before '='")
		}
		if i := strings.IndexFunc(name, func(r rune) bool { return r >= utf8.RuneSelf || !isNameChar(byte(r)) }); i >= 0 {
			return sc.errAt(sc.pos+i, "invalid character %q in probe name (want letters, digits and _ . $ + -)", firstRune(name[i:]))
		}
		s.Name = name
		sc.pos += eq + 1
	}
	symStart := sc.pos
	s.Symbol = sc.run(isSymbolChar)
	if s.Symbol == "" {
		if sc.pos == sc.end {
			return sc.errAt(sc.pos, "missing symbol")
		}
		return sc.errAt(sc.pos, "invalid character %q where a symbol should start", firstRune(sc.rest()))
	}
	plus := -1
	if sc.peek() == '+' {
		plus = sc.pos
		sc.pos++
		off, err := sc.number(math.MaxUint64, "offset")
		if err != nil {
			return err
		}
		s.Off = off
	}
	if sc.peek() == '@' {
		at := sc.pos
		sc.pos++
		if s.Object = sc.run(isObjectChar); s.Object == "" {
			return sc.errAt(at, "missing file name after '@' (want SYMBOL@LIBRARY, e.g. pthread_mutex_lock@libc.so.6)")
		}
	}
	if sc.peek() == '%' {
		pct := sc.pos
		sc.pos++
		if w := sc.run(isAlnum); w != "return" {
			return sc.errAt(pct, "unknown suffix %q (want %%return)", "%"+w)
		}
		s.Return = true
		if s.Off != 0 {
			return sc.errAt(plus, "%%return probes the function's return from its entry: write %s%%return, without +OFF", s.Symbol)
		}
	}
	if sc.pos < sc.end {
		return sc.errAt(sc.pos, "trailing junk %q after %q", sc.rest(), sc.text[symStart:sc.pos])
	}
	if s.Name == "" {
		s.Name = DefaultName(s.Symbol, s.Off, s.Return)
	}
	return nil
}

// number parses a decimal or 0x-hex number no larger than limit.
// what names the number in messages: "offset" or "thread id".
func (sc *scanner) number(limit uint64, what string) (uint64, error) {
	start := sc.pos
	w := sc.run(isAlnum)
	if w == "" {
		if sc.pos == sc.end {
			return 0, sc.errAt(start, "missing %s", what)
		}
		return 0, sc.errAt(start, "invalid character %q where the %s should start", firstRune(sc.rest()), what)
	}
	var v uint64
	var err error
	if len(w) > 1 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X') {
		v, err = strconv.ParseUint(w[2:], 16, 64)
	} else {
		v, err = strconv.ParseUint(w, 10, 64)
		if err == nil && len(w) > 1 && w[0] == '0' {
			return 0, sc.errAt(start, "bad %s %q: a leading 0 is not octal here; write it in decimal or 0x hex", what, w)
		}
	}
	if errors.Is(err, strconv.ErrRange) || err == nil && v > limit {
		if what == "offset" {
			return 0, sc.errAt(start, "offset overflow: %s does not fit in %s", w, limitName(limit))
		}
		return 0, sc.errAt(start, "%s %s does not fit in %s", what, w, limitName(limit))
	}
	if err != nil {
		return 0, sc.errAt(start, "bad %s %q (want decimal or 0x hex)", what, w)
	}
	return v, nil
}

func limitName(limit uint64) string {
	switch limit {
	case math.MaxUint64:
		return "64 bits"
	case math.MaxUint32:
		return "32 bits"
	case math.MaxInt64:
		return "a signed 64-bit offset"
	case math.MaxInt64 + 1:
		return "a signed 64-bit offset (at most 0x8000000000000000 below)"
	}
	return "range"
}

// filter parses @tid=N[,M...].
func (sc *scanner) filter() ([]uint32, error) {
	at := sc.pos
	sc.pos++ // '@'
	key := sc.run(isAlnum)
	if key != "tid" || sc.peek() != '=' {
		return nil, sc.errAt(at, "unknown filter %q (want @tid=N[,M...])", sc.text[at:sc.end])
	}
	sc.pos++
	var tids []uint32
	for {
		v, err := sc.number(math.MaxUint32, "thread id")
		if err != nil {
			return nil, err
		}
		tids = append(tids, uint32(v))
		if sc.peek() != ',' {
			break
		}
		sc.pos++
	}
	if sc.pos < sc.end {
		return nil, sc.errAt(sc.pos, "trailing junk %q after the thread ids", sc.rest())
	}
	return tids, nil
}

// arg parses NAME=EXPR.
func (sc *scanner) arg() (Arg, error) {
	start := sc.pos
	eq := strings.IndexByte(sc.rest(), '=')
	if eq < 0 {
		return Arg{}, sc.errAt(start, "argument %q has no name: write NAME=EXPR", sc.rest())
	}
	name := sc.text[start : start+eq]
	if err := sc.argName(start, name); err != nil {
		return Arg{}, err
	}
	sc.pos += eq + 1
	if sc.pos == sc.end {
		return Arg{}, sc.errAt(sc.pos, "missing expression after %q", name+"=")
	}
	e, err := sc.expr(0)
	if err != nil {
		return Arg{}, err
	}
	return Arg{Name: name, Expr: e}, nil
}

func (sc *scanner) argName(at int, name string) error {
	if name == "" {
		return sc.errAt(at, "empty argument name")
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return r >= utf8.RuneSelf || !isArgNameChar(byte(r)) }); i >= 0 {
		return sc.errAt(at+i, "invalid character %q in argument name (want letters, digits, _ and .)", firstRune(name[i:]))
	}
	return nil
}

func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}
