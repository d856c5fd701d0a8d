package profile

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/google/pprof/profile"

	"github.com/reprise-vm/reprise/eventdb"
)

// WritePprof writes the profile in pprof's format (gzipped protobuf) for
// `go tool pprof` and flame graphs: one pprof sample per distinct stack
// and thread, valued in samples (and, for a weighted profile, in
// estimated cycles, pprof's default), leaf first, labelled "thread" with the
// guest thread id (pprof -tagfocus thread=3, -tagroot thread). Functions
// carry their names, so pprof needs no binary to symbolize. The call
// stacks are written whether or not the profile was built with
// Options.CallGraph. A Linux program's profile has one mapping per file
// it loaded (path, build-id, address range), so pprof shows which
// executable or library each location is in.
func (p *Profile) WritePprof(w io.Writer) error {
	pp, err := p.pprof()
	if err != nil {
		return err
	}
	if err := pp.Write(w); err != nil {
		return fmt.Errorf("profile: write pprof: %w", err)
	}
	return nil
}

// pprofBuilder turns the attribution's stacks into pprof records, one
// Location per frame address and one Function per name.
type pprofBuilder struct {
	a       *attribution
	out     *profile.Profile
	image   *profile.Mapping   // the kit's image, or what no loaded file holds
	objects []*profile.Mapping // a Linux program's loaded files
	locs    map[frameAddr]*profile.Location
	funcs   map[funcID]*profile.Function
	threads map[uint32]map[string][]string // label sets, shared by a thread's samples
}

func (p *Profile) pprof() (*profile.Profile, error) {
	b := &pprofBuilder{
		a: p.attr,
		out: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
			TimeNanos:  p.created.UnixNano(),
			// Samples carry the recording's host time: the span is the
			// recorded run's, not the replay's.
			DurationNanos: p.span.Nanoseconds(),
			Comments:      []string{"reprise " + p.Describe(), "tape " + p.Tape},
		},
		image:   &profile.Mapping{File: "guest-image", BuildID: p.attr.syms.Image, HasFunctions: true},
		locs:    make(map[frameAddr]*profile.Location),
		funcs:   make(map[funcID]*profile.Function),
		threads: make(map[uint32]map[string][]string),
	}
	// The first mapping is the one pprof calls the main binary: a Linux
	// program's executable (its first file loaded), or the kit's image.
	for _, o := range p.attr.syms.Objects {
		m := &profile.Mapping{ID: uint64(len(b.objects) + 1), Start: o.Start, Limit: o.End, File: o.Path, BuildID: o.BuildID, HasFunctions: true}
		b.objects = append(b.objects, m)
	}
	b.out.Mapping = b.objects
	b.out.Sample = make([]*profile.Sample, 0, len(p.attr.stacks))
	for i := range p.attr.stacks {
		b.add(&p.attr.stacks[i])
	}
	if p.Weighted {
		b.out.SampleType = append(b.out.SampleType, &profile.ValueType{Type: "cycles", Unit: "count"})
		b.out.DefaultSampleType = "cycles"
	}
	if b.spanImage() {
		b.image.ID = uint64(len(b.out.Mapping) + 1)
		b.out.Mapping = append(b.out.Mapping, b.image)
	}
	if err := b.out.CheckValid(); err != nil {
		return nil, fmt.Errorf("profile: build pprof: %w", err)
	}
	return b.out, nil
}

// add appends the pprof sample of one stack.
func (b *pprofBuilder) add(s *sampledStack) {
	locs := make([]*profile.Location, s.depth())
	for i := range locs {
		locs[i] = b.location(s.frame(i))
	}
	value := []int64{int64(s.count)}
	if b.a.weighted() {
		value = append(value, int64(math.Round(b.a.weight(s)/eventdb.SampleCost)))
	}
	b.out.Sample = append(b.out.Sample, &profile.Sample{
		Location: locs,
		Value:    value,
		Label:    b.threadLabel(s.thread()),
	})
}

func (b *pprofBuilder) location(f frameAddr) *profile.Location {
	if l, ok := b.locs[f]; ok {
		return l
	}
	l := &profile.Location{
		ID: uint64(len(b.out.Location) + 1), Mapping: b.mappingOf(f), Address: f.addr,
		Line: []profile.Line{{Function: b.function(b.a.function(f))}},
	}
	b.out.Location = append(b.out.Location, l)
	b.locs[f] = l
	return l
}

// mappingOf is the mapping of the loaded file the frame was in (the one
// holding its address when the sample does not say), else the image's.
func (b *pprofBuilder) mappingOf(f frameAddr) *profile.Mapping {
	if ref := b.a.syms.Locate(eventdb.ObjectRef(f.obj), f.addr); ref != 0 {
		return b.objects[ref-1] // one mapping per object, in their order
	}
	return b.image
}

// spanImage makes the image's mapping cover every address sampled that
// no loaded file holds, and reports whether there is one.
func (b *pprofBuilder) spanImage() bool {
	used := false
	for f, l := range b.locs {
		if l.Mapping != b.image {
			continue
		}
		used = true
		if b.image.Limit == 0 || f.addr < b.image.Start {
			b.image.Start = f.addr
		}
		b.image.Limit = max(b.image.Limit, f.addr+1)
	}
	return used || len(b.objects) == 0
}

func (b *pprofBuilder) function(id funcID) *profile.Function {
	if f, ok := b.funcs[id]; ok {
		return f
	}
	name := b.a.names[id]
	f := &profile.Function{ID: uint64(len(b.out.Function) + 1), Name: name, SystemName: name}
	b.out.Function = append(b.out.Function, f)
	b.funcs[id] = f
	return f
}

func (b *pprofBuilder) threadLabel(tid uint32) map[string][]string {
	l, ok := b.threads[tid]
	if !ok {
		l = map[string][]string{"thread": {strconv.FormatUint(uint64(tid), 10)}}
		b.threads[tid] = l
	}
	return l
}
