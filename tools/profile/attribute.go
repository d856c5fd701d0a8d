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
	ret  bool
}

// tally is one function's samples.
type tally struct{ self, total uint64 }

// edgeKey is a caller→callee pair.
type edgeKey struct{ caller, callee funcID }

// threadTally is one thread's samples per function.
type threadTally struct {
	samples uint64
	funcs   map[funcID]*tally
}

// attribution maps the distinct stacks to functions and counts their
// samples per function, per thread and per edge.
type attribution struct {
	syms   *eventdb.Symbols
	stacks []sampledStack

	fn     map[frameAddr]funcID // resolved frames
	byName map[string]funcID
	names  []string // by funcID

	funcs   []tally // by funcID
	threads map[uint32]*threadTally
	edges   map[edgeKey]uint64
}

func newAttribution(syms *eventdb.Symbols, stacks []sampledStack) *attribution {
	return &attribution{
		syms: syms, stacks: stacks,
		fn: make(map[frameAddr]funcID), byName: make(map[string]funcID),
		threads: make(map[uint32]*threadTally), edges: make(map[edgeKey]uint64),
	}
}

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
	name := a.syms.Describe(f.addr)
	if s, _, ok := a.syms.Resolve(look); ok && s.Func {
		name = s.Name
	} else if _, _, ok := a.syms.Resolve(f.addr); ok {
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
		tt := a.threads[s.thread()]
		if tt == nil {
			tt = &threadTally{funcs: make(map[funcID]*tally)}
			a.threads[s.thread()] = tt
		}
		tt.samples += s.count
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
				a.funcs[f].self += s.count
				ft.self += s.count
			}
			// A recursive function counts once per sample in total.
			if seen[f] != i {
				seen[f] = i
				a.funcs[f].total += s.count
				ft.total += s.count
			}
		}
		if callGraph {
			stackEdges = stackEdges[:0]
			for j := 1; j < len(fs); j++ {
				e := edgeKey{caller: fs[j], callee: fs[j-1]}
				if !slices.Contains(stackEdges, e) {
					stackEdges = append(stackEdges, e)
					a.edges[e] += s.count
				}
			}
		}
	}
	global := make(map[funcID]*tally, len(a.funcs))
	for id := range a.funcs {
		global[funcID(id)] = &a.funcs[id]
	}
	p.Functions = a.funcStats(global, p.Samples)
	for _, tid := range slices.Sorted(maps.Keys(a.threads)) {
		tt := a.threads[tid]
		p.Threads = append(p.Threads, ThreadProfile{Thread: tid, Samples: tt.samples,
			Pct: pct(tt.samples, p.Samples), Functions: a.funcStats(tt.funcs, tt.samples)})
	}
	if callGraph {
		p.CallGraph = a.callGraph(p.Samples)
	}
}

// funcStats names and sorts the functions' tallies: by self samples,
// then total samples, then name. whole is the samples they share.
func (a *attribution) funcStats(ts map[funcID]*tally, whole uint64) []FuncStat {
	out := make([]FuncStat, 0, len(ts))
	for id, t := range ts {
		out = append(out, FuncStat{Function: a.names[id], Self: t.self, SelfPct: pct(t.self, whole),
			Total: t.total, TotalPct: pct(t.total, whole)})
	}
	slices.SortFunc(out, func(x, y FuncStat) int {
		return cmp.Or(cmp.Compare(y.Self, x.Self), cmp.Compare(y.Total, x.Total), cmp.Compare(x.Function, y.Function))
	})
	return out
}

// callGraph names and sorts the edges: by samples, then caller and
// callee names.
func (a *attribution) callGraph(whole uint64) []Edge {
	out := make([]Edge, 0, len(a.edges))
	for e, n := range a.edges {
		out = append(out, Edge{Caller: a.names[e.caller], Callee: a.names[e.callee], Samples: n, Pct: pct(n, whole)})
	}
	slices.SortFunc(out, func(x, y Edge) int {
		return cmp.Or(cmp.Compare(y.Samples, x.Samples), cmp.Compare(x.Caller, y.Caller), cmp.Compare(x.Callee, y.Callee))
	})
	return out
}

// pct is part as a percentage of whole.
func pct(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
