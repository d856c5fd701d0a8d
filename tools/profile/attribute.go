package profile

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/reprise-vm/reprise/eventdb"
)

// funcID numbers the functions of one profile.
type funcID int32

// frameAddr is an address of a stack: the leaf, or a return address,
// which is looked up one byte earlier, in the call instruction, because
// a call that ends its function returns to the next function's first
// byte.
type frameAddr struct {
	addr uint64
	obj  uint32 // the eventdb.ObjectRef of the file it was in (0: not known)
	ret  bool
}

// share is samples and the time they stand for (weight: see
// attribution.weight).
type share struct {
	samples uint64
	weight  float64
}

func (s *share) add(n uint64, w float64) { s.samples, s.weight = s.samples+n, s.weight+w }

// tally is one function's samples.
type tally struct{ self, total share }

// edgeKey is a caller→callee pair.
type edgeKey struct{ caller, callee funcID }

// threadTally is one thread's samples per function.
type threadTally struct {
	share
	funcs map[funcID]*tally
}

// attribution maps the distinct stacks to functions and counts their
// samples per function, per thread and per edge.
type attribution struct {
	syms   *eventdb.Symbols
	stacks []sampledStack
	// meanCost is the mean cost of the samples that carry one (0: none
	// does, and every sample weighs one).
	meanCost float64

	fn     map[frameAddr]funcID // resolved frames
	byName map[string]funcID
	names  []string // by funcID

	funcs   []tally // by funcID
	threads map[uint32]*threadTally
	edges   map[edgeKey]*share
}

func newAttribution(syms *eventdb.Symbols, set *stackSet) *attribution {
	a := &attribution{
		syms: syms, stacks: set.stacks,
		fn: make(map[frameAddr]funcID), byName: make(map[string]funcID),
		threads: make(map[uint32]*threadTally), edges: make(map[edgeKey]*share),
	}
	if set.costed > 0 {
		a.meanCost = float64(set.cost) / float64(set.costed)
	}
	return a
}

// weight is the time a stack's samples stand for, in sample costs: a
// deterministic sample weighs its cost (the estimated cycles it stands for),
// a sample without one (a timed sample, which stands for its period) the
// mean of those, so that a run sampled both ways mixes them as samples.
// Without costs every sample weighs one.
func (a *attribution) weight(s *sampledStack) float64 {
	if a.meanCost == 0 {
		return float64(s.count)
	}
	return float64(s.cost) + float64(s.count-s.costed)*a.meanCost
}

// weighted reports whether the profile's shares are of estimated time
// rather than of samples.
func (a *attribution) weighted() bool { return a.meanCost != 0 }

// id returns the function called name, numbering it if new.
func (a *attribution) id(name string) funcID {
	if id, ok := a.byName[name]; ok {
		return id
	}
	id := funcID(len(a.names))
	a.byName[name] = id
	a.names = append(a.names, name)
	a.funcs = append(a.funcs, tally{})
	return id
}

// function resolves a frame to its function: the function symbol holding
// it, or the frame's own address — FILE+0xOFFSET in a Linux program's
// file without a symbol for it (as perf names it), else hex.
func (a *attribution) function(f frameAddr) funcID {
	if id, ok := a.fn[f]; ok {
		return id
	}
	look := f.addr
	if f.ret && look > 0 {
		look--
	}
	ref := eventdb.ObjectRef(f.obj)
	name := a.syms.DescribeIn(ref, f.addr)
	if s, _, ok := a.syms.ResolveIn(ref, look); ok && s.Func {
		name = s.Name
	} else if _, _, ok := a.syms.ResolveIn(ref, f.addr); ok {
		name = fmt.Sprintf("%#x", f.addr) // inside a data or unsized symbol: no function
	}
	id := a.id(name)
	a.fn[f] = id
	return id
}

// frames appends the functions of stack s, leaf first.
func (a *attribution) frames(dst []funcID, s *sampledStack) []funcID {
	for i := range s.depth() {
		dst = append(dst, a.function(s.frame(i)))
	}
	return dst
}

// fill counts every stack and stores the sorted results in p.
func (a *attribution) fill(p *Profile, callGraph bool) {
	var fs []funcID
	var seen []int // by funcID: the last stack index counted in total
	var stackEdges []edgeKey
	for i := range a.stacks {
		s := &a.stacks[i]
		fs = a.frames(fs[:0], s)
		w := a.weight(s)
		tt := a.threads[s.thread()]
		if tt == nil {
			tt = &threadTally{funcs: make(map[funcID]*tally)}
			a.threads[s.thread()] = tt
		}
		tt.add(s.count, w)
		for len(seen) < len(a.names) {
			seen = append(seen, -1)
		}
		for j, f := range fs {
			ft := tt.funcs[f]
			if ft == nil {
				ft = &tally{}
				tt.funcs[f] = ft
			}
			if j == 0 {
				a.funcs[f].self.add(s.count, w)
				ft.self.add(s.count, w)
			}
			// A recursive function counts once per sample in total.
			if seen[f] != i {
				seen[f] = i
				a.funcs[f].total.add(s.count, w)
				ft.total.add(s.count, w)
			}
		}
		if callGraph {
			stackEdges = stackEdges[:0]
			for j := 1; j < len(fs); j++ {
				e := edgeKey{caller: fs[j], callee: fs[j-1]}
				if !slices.Contains(stackEdges, e) {
					stackEdges = append(stackEdges, e)
					if a.edges[e] == nil {
						a.edges[e] = &share{}
					}
					a.edges[e].add(s.count, w)
				}
			}
		}
	}
	global := make(map[funcID]*tally, len(a.funcs))
	for id := range a.funcs {
		global[funcID(id)] = &a.funcs[id]
	}
	var whole float64
	for _, tt := range a.threads {
		whole += tt.weight
	}
	p.Functions = a.funcStats(global, whole)
	p.Files = a.fileStats(whole)
	for _, tid := range slices.Sorted(maps.Keys(a.threads)) {
		tt := a.threads[tid]
		p.Threads = append(p.Threads, ThreadProfile{Thread: tid, Samples: tt.samples,
			Pct: pct(tt.weight, whole), Functions: a.funcStats(tt.funcs, tt.weight)})
	}
	if callGraph {
		p.CallGraph = a.callGraph(whole)
	}
}

// funcStats names and sorts the functions' tallies: by self share, then
// total share, then name. whole is the weight they share.
func (a *attribution) funcStats(ts map[funcID]*tally, whole float64) []FuncStat {
	type ranked struct {
		FuncStat
		self, total float64
	}
	rs := make([]ranked, 0, len(ts))
	for id, t := range ts {
		rs = append(rs, ranked{FuncStat{Function: a.names[id], Self: t.self.samples, SelfPct: pct(t.self.weight, whole),
			Total: t.total.samples, TotalPct: pct(t.total.weight, whole)}, t.self.weight, t.total.weight})
	}
	slices.SortFunc(rs, func(x, y ranked) int {
		return cmp.Or(cmp.Compare(y.self, x.self), cmp.Compare(y.total, x.total), cmp.Compare(x.Function, y.Function))
	})
	out := make([]FuncStat, len(rs))
	for i, r := range rs {
		out[i] = r.FuncStat
	}
	return out
}

// unknownFile holds the samples in no loaded file, as perf names it.
const unknownFile = "[unknown]"

// fileStats tallies the samples by the file their leaf was in, sorted by
// share, then path; nil for a kit image, which loads no files.
func (a *attribution) fileStats(whole float64) []FileStat {
	if len(a.syms.Objects) == 0 {
		return nil
	}
	byFile := map[string]*share{}
	for i := range a.stacks {
		s := &a.stacks[i]
		leaf := s.frame(0)
		file := unknownFile
		if o := a.syms.Object(a.syms.Locate(eventdb.ObjectRef(leaf.obj), leaf.addr)); o != nil {
			file = o.Path
		}
		if byFile[file] == nil {
			byFile[file] = &share{}
		}
		byFile[file].add(s.count, a.weight(s))
	}
	out := make([]FileStat, 0, len(byFile))
	for f, n := range byFile {
		out = append(out, FileStat{File: f, Self: n.samples, SelfPct: pct(n.weight, whole)})
	}
	slices.SortFunc(out, func(x, y FileStat) int {
		return cmp.Or(cmp.Compare(y.SelfPct, x.SelfPct), cmp.Compare(x.File, y.File))
	})
	return out
}

// callGraph names and sorts the edges: by share, then caller and callee
// names.
func (a *attribution) callGraph(whole float64) []Edge {
	type ranked struct {
		Edge
		weight float64
	}
	rs := make([]ranked, 0, len(a.edges))
	for e, n := range a.edges {
		rs = append(rs, ranked{Edge{Caller: a.names[e.caller], Callee: a.names[e.callee], Samples: n.samples, Pct: pct(n.weight, whole)}, n.weight})
	}
	slices.SortFunc(rs, func(x, y ranked) int {
		return cmp.Or(cmp.Compare(y.weight, x.weight), cmp.Compare(x.Caller, y.Caller), cmp.Compare(x.Callee, y.Callee))
	})
	out := make([]Edge, len(rs))
	for i, r := range rs {
		out[i] = r.Edge
	}
	return out
}

// pct is part as a percentage of whole.
func pct(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * part / whole
}
