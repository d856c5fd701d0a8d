package probes

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/symtab"
)

// ResolveError is a well-formed spec the image cannot satisfy.
type ResolveError struct {
	Probe  string // the probe's name
	Text   string // its spec
	Source string // "" for the command line, else "file:line:col"
	Msg    string
}

func (e *ResolveError) Error() string {
	var b strings.Builder
	b.WriteString("probes: ")
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "probe %q", e.Probe)
	if e.Text != "" && e.Text != e.Probe {
		fmt.Fprintf(&b, " (%s)", strings.TrimSpace(e.Text))
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Resolve places specs in img and plans their sites. Every spec is
// checked; the error joins one error per bad spec.
func Resolve(specs []Spec, img *elffile.Image) (*Plan, error) {
	if img == nil {
		return nil, errors.New("probes: no guest image to resolve against")
	}
	var errs []error
	if err := checkNames(specs); err != nil {
		errs = append(errs, err)
	}
	plan := &Plan{img: img}
	siteOf := map[uint64]int{} // address -> index in plan.Sites
	for i := range specs {
		s := &specs[i]
		if err := s.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		site, err := resolveOne(s, guestImage{img})
		if err != nil {
			errs = append(errs, &ResolveError{Probe: s.Name, Text: s.Text, Source: s.Source, Msg: err.Error()})
			continue
		}
		id := uint32(len(plan.Probes))
		text := s.Text
		if text == "" {
			text = s.String()
		}
		plan.Probes = append(plan.Probes, Probe{
			ID: id, Name: s.Name, Spec: text, Symbol: s.Symbol, Off: s.Off,
			Addr: site.Addr, Return: s.Return,
			Args: append([]Arg(nil), s.Args...), Threads: append([]uint32(nil), s.Threads...),
		})
		if j, ok := siteOf[site.Addr]; ok {
			plan.Sites[j].Probes = append(plan.Sites[j].Probes, id)
			continue
		}
		site.Probes = []uint32{id}
		siteOf[site.Addr] = len(plan.Sites)
		plan.Sites = append(plan.Sites, site)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(plan.Sites, func(i, j int) bool { return plan.Sites[i].Addr < plan.Sites[j].Addr })
	// Boundaries come from decoding each function from its own start, so
	// two symbols that overlap oddly could still yield overlapping sites.
	for i := 1; i < len(plan.Sites); i++ {
		a, b := &plan.Sites[i-1], &plan.Sites[i]
		if a.Next() > b.Addr {
			return nil, fmt.Errorf("probes: the site at %s (%d bytes, probe %q) overlaps the site at %s (probe %q)",
				img.Describe(a.Addr), a.Len, plan.Probes[a.Probes[0]].Name, img.Describe(b.Addr), plan.Probes[b.Probes[0]].Name)
		}
	}
	ChoosePatches(img, plan.Sites)
	return plan, nil
}

// resolveOne finds s's site: its function, its address, and the check
// that the address starts an instruction the VMM can handle.
func resolveOne(s *Spec, img code) (Site, error) {
	sym, err := function(img, s.Symbol)
	if err != nil {
		return Site{}, err
	}
	at := DefaultName(s.Symbol, s.Off, false) // SYMBOL+0xOFF
	if sym.Size != 0 && s.Off >= sym.Size {
		return Site{}, fmt.Errorf("%s is past the end of %s (%#x bytes)", at, s.Symbol, sym.Size)
	}
	addr := sym.Addr + s.Off
	if addr < sym.Addr {
		return Site{}, fmt.Errorf("offset overflow: %s+%#x wraps around the address space", s.Symbol, s.Off)
	}
	segAddr, segData, ok := img.execBytes(sym.Addr)
	if !ok {
		return Site{}, fmt.Errorf("%s at %#x is not in the code of an executable segment", s.Symbol, sym.Addr)
	}
	// The function's bytes: to its size, or for an unsized symbol to the
	// next symbol, never past the segment's file bytes.
	end := segAddr + uint64(len(segData))
	if sym.Size != 0 {
		end = min(end, sym.Addr+sym.Size)
	} else if next, ok := nextSymbol(img, sym.Addr); ok {
		end = min(end, next)
	}
	if addr >= end {
		return Site{}, fmt.Errorf("%s (%#x) is past the code of %s, which ends at %#x", at, addr, s.Symbol, end)
	}
	fn := segData[sym.Addr-segAddr : end-segAddr]
	if err := boundary(fn, s.Symbol, sym.Addr, s.Off); err != nil {
		return Site{}, err
	}
	site, err := DecodeBytes(addr, fn[s.Off:])
	if err == nil {
		err = counterLoadRefusal(img.SymbolTable(), site)
	}
	if err != nil {
		return Site{}, fmt.Errorf("%s: %w", at, err)
	}
	return site, nil
}

// function finds the one function symbol called name.
func function(img code, name string) (elffile.Symbol, error) {
	var funcs []elffile.Symbol
	other := false
	for _, s := range img.SymbolTable().All() {
		if s.Name != name {
			continue
		}
		if !s.Func {
			other = true
			continue
		}
		if len(funcs) == 0 || funcs[len(funcs)-1].Addr != s.Addr {
			funcs = append(funcs, s)
		}
	}
	switch {
	case len(funcs) == 1:
		return funcs[0], nil
	case len(funcs) > 1:
		addrs := make([]string, len(funcs))
		for i, f := range funcs {
			addrs[i] = fmt.Sprintf("%#x", f.Addr)
		}
		return elffile.Symbol{}, fmt.Errorf("%d functions are named %s (at %s); rename all but one to probe it", len(funcs), name, strings.Join(addrs, ", "))
	case other:
		return elffile.Symbol{}, fmt.Errorf("%s is not a function (a data or untyped symbol; asm code needs .type %s, @function)", name, name)
	}
	msg := fmt.Sprintf("unknown symbol %q", name)
	if near := nearest(img, name, 5); len(near) > 0 {
		msg += " (nearest: " + strings.Join(near, ", ") + ")"
	} else {
		msg += " (no function has a similar name)"
	}
	return elffile.Symbol{}, errors.New(msg)
}

// nextSymbol is the address of the first symbol above addr.
func nextSymbol(img code, addr uint64) (uint64, bool) {
	syms := img.SymbolTable().All()
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > addr })
	if i < len(syms) {
		return syms[i].Addr, true
	}
	return 0, false
}

// boundary checks that off starts an instruction of the function whose
// bytes are code, by decoding from the function's start.
func boundary(code []byte, sym string, base, off uint64) error {
	pc := uint64(0)
	for pc < off {
		inst, err := decode(code[pc:])
		if err != nil {
			return fmt.Errorf("cannot tell whether %s is an instruction boundary: the bytes at +%#x (% x) do not decode (%v)",
				DefaultName(sym, off, false), pc, code[pc:min(uint64(len(code)), pc+8)], err)
		}
		n := uint64(inst.Len)
		if pc+n > off {
			return fmt.Errorf("%s is inside the instruction at +%#x (%d bytes: %s); boundaries are +%#x and +%#x",
				DefaultName(sym, off, false), pc, n, x86asm.GNUSyntax(inst, base+pc, nil), pc, pc+n)
		}
		pc += n
	}
	return nil
}

// nearest lists up to n function names close to name: those it is a
// prefix of, then those containing it, then by edit distance.
func nearest(img code, name string, n int) []string {
	type cand struct {
		name        string
		class, dist int
	}
	q := strings.ToLower(name)
	if len(q) > 128 {
		q = q[:128]
	}
	seen := map[string]bool{}
	var cs []cand
	for _, s := range img.SymbolTable().All() {
		if !s.Func || seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		l := strings.ToLower(s.Name)
		c := cand{name: s.Name, class: 2, dist: editDistance(q, l)}
		switch {
		case q != "" && strings.HasPrefix(l, q):
			c.class = 0
		case q != "" && strings.Contains(l, q):
			c.class = 1
		case c.dist > max(2, len(q)/2):
			continue
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.class != b.class {
			return a.class < b.class
		}
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		return a.name < b.name
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	if len(b) > 256 {
		b = b[:256]
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// code is what a probe resolves against: symbols, and the file bytes of
// the executable segment that holds an address.
type code interface {
	SymbolTable() *symtab.Table
	execBytes(addr uint64) (segAddr uint64, data []byte, ok bool)
}

// guestImage is a guest kit image as code.
type guestImage struct{ *elffile.Image }

func (k guestImage) execBytes(addr uint64) (uint64, []byte, bool) {
	seg, ok := k.ExecSegment(addr)
	return seg.Addr, seg.Data, ok
}
