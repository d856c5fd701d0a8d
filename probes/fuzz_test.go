package probes

import (
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzParse: ParseSpec never panics, every error is a *SpecError whose
// column lies in the text, and every spec it accepts prints (String) as a
// spec that parses back to the same probe.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"mutex_lock",
		"acq=mutex_lock+0x10 lock=rdi n=*(arg0+8):4 o=**rdi @tid=2,3",
		"f%return ok=retval x=*(*(rsp+0x10)-4):2",
		"f a=*( rdi + 8 ):1 b=rdi-0x8000000000000000",
		"f a=*(rdi+8",
		"f a=rdi)",
		"f+0x1ffffffffffffffff",
		"=f",
		"f @tid=1,,2",
		"f a=" + "((((((((rdi))))))))",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSpec(text)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %T is not a *SpecError: %v", text, err, err)
			}
			if se.Col < 0 || se.Col > utf8.RuneCountInString(text)+1 {
				t.Fatalf("%q: column %d outside the text: %v", text, se.Col, err)
			}
			return
		}
		if s.Name == "" || s.Symbol == "" {
			t.Fatalf("%q: accepted without a name or symbol: %+v", text, s)
		}
		if err := s.validate(); err != nil {
			t.Fatalf("%q: accepted but invalid: %v", text, err)
		}
		canon := s.String()
		again, err := ParseSpec(canon)
		if err != nil {
			t.Fatalf("%q: canonical form %q does not parse: %v", text, canon, err)
		}
		if again.String() != canon {
			t.Fatalf("%q: canonical form %q reparses as %q", text, canon, again.String())
		}
		for i, a := range s.Args {
			if a.Expr.String() != again.Args[i].Expr.String() {
				t.Fatalf("%q: arg %s changed: %v vs %v", text, a.Name, a.Expr, again.Args[i].Expr)
			}
		}
	})
}
