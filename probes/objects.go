package probes

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/symtab"
)

// Set is the probes of a Linux program's replay. A program maps many
// files — its executable, its loader, the libraries it needs or opens at
// run time — so a probe is resolved in each file as the program maps it:
// in every file that defines its symbol, or in the one its @OBJECT names.
type Set struct {
	// Probes[i].ID == i. Addr is 0: a probe's address depends on where
	// each file is mapped.
	Probes []Probe
	specs  []Spec
}

// NewSet checks specs and numbers them; the error joins one error per
// bad spec.
func NewSet(specs []Spec) (*Set, error) {
	var errs []error
	if err := checkNames(specs); err != nil {
		errs = append(errs, err)
	}
	set := &Set{specs: specs}
	for i := range specs {
		s := &specs[i]
		if err := s.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		text := s.Text
		if text == "" {
			text = s.String()
		}
		set.Probes = append(set.Probes, Probe{
			ID: uint32(len(set.Probes)), Name: s.Name, Spec: text, Symbol: s.Symbol, Off: s.Off, Return: s.Return,
			Args: append([]Arg(nil), s.Args...), Threads: append([]uint32(nil), s.Threads...),
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return set, nil
}

// Probe returns the probe with the given id.
func (s *Set) Probe(id uint32) (*Probe, bool) {
	if uint64(id) >= uint64(len(s.Probes)) {
		return nil, false
	}
	return &s.Probes[id], true
}

// In resolves the set in file f: the sites of the probes whose symbol f
// defines, at f's virtual addresses, sorted. A %return probe's site is
// its function's entry (the replay watches the return from there). A
// probe whose @OBJECT names f is an error if f cannot satisfy it.
func (s *Set) In(f *elffile.File) ([]Site, error) {
	var errs []error
	var sites []Site
	at := map[uint64]int{}
	for i := range s.specs {
		sp := &s.specs[i]
		named := sp.Object != "" && f.Matches(sp.Object)
		if sp.Object != "" && !named {
			continue
		}
		if _, ok := f.Symbols.Lookup(sp.Symbol); !ok && !named {
			continue
		}
		off := sp.Off
		if sp.Return {
			off = 0
		}
		entry := *sp
		entry.Off = off
		site, err := resolveOne(&entry, objectCode{f})
		if err != nil {
			errs = append(errs, &ResolveError{Probe: sp.Name, Text: sp.Text, Source: sp.Source, Msg: fmt.Sprintf("in %s: %v", f.Path, err)})
			continue
		}
		if j, ok := at[site.Addr]; ok {
			sites[j].Probes = append(sites[j].Probes, uint32(i))
			continue
		}
		site.Probes = []uint32{uint32(i)}
		at[site.Addr] = len(sites)
		sites = append(sites, site)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(sites, func(i, j int) bool { return sites[i].Addr < sites[j].Addr })
	return sites, nil
}

// Check resolves the set in files, the ones known before the program
// runs (its executable and the libraries it needs): each probe must be
// satisfied by one of them, unless its @OBJECT names none of them (a
// library the program opens at run time). The error joins one error per
// probe, naming the files searched.
func (s *Set) Check(files []*elffile.File) error {
	found := make([]bool, len(s.specs))
	var errs []error
	for _, f := range files {
		sites, err := s.In(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, site := range sites {
			for _, id := range site.Probes {
				found[id] = true
			}
		}
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name()
	}
	for i, sp := range s.specs {
		if found[i] || sp.Object != "" && !matchesAny(files, sp.Object) {
			continue
		}
		msg := fmt.Sprintf("no function %s in %s", sp.Symbol, strings.Join(names, ", "))
		if near := nearestIn(files, sp.Symbol); len(near) > 0 {
			msg += " (nearest: " + strings.Join(near, ", ") + ")"
		}
		errs = append(errs, &ResolveError{Probe: sp.Name, Text: sp.Text, Source: sp.Source, Msg: msg})
	}
	return errors.Join(errs...)
}

func matchesAny(files []*elffile.File, name string) bool {
	for _, f := range files {
		if f.Matches(name) {
			return true
		}
	}
	return false
}

// nearestIn are the names closest to name among files' symbols.
func nearestIn(files []*elffile.File, name string) []string {
	var out []string
	for _, f := range files {
		out = append(out, nearest(objectCode{f}, name, 3)...)
	}
	return out[:min(len(out), 5)]
}

// objectCode is a program's file as code.
type objectCode struct{ f *elffile.File }

func (o objectCode) SymbolTable() *symtab.Table { return o.f.Symbols }

func (o objectCode) execBytes(addr uint64) (uint64, []byte, bool) { return o.f.ExecSegment(addr) }

// Defines reports whether one of files defines symbol.
func Defines(files []*elffile.File, symbol string) bool {
	for _, f := range files {
		if _, ok := f.Symbols.Lookup(symbol); ok {
			return true
		}
	}
	return false
}

// Available parses texts and keeps the specs whose symbol one of files
// defines: a standard set (the C library's lock probes) trimmed to what
// a program's C library has.
func Available(texts []string, files []*elffile.File) ([]Spec, error) {
	var keep []string
	for _, text := range texts {
		s, err := ParseSpec(text)
		if err != nil {
			return nil, err
		}
		if Defines(files, s.Symbol) {
			keep = append(keep, text)
		}
	}
	return ParseSpecs(keep)
}
