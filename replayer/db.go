package replayer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/symtab"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/door"
)

// ToDB replays o's tape with its probe plan and sampling and writes what
// they see into db as a new run: one event per probe hit (with its thread,
// position, record time and arguments) and per sample (RIP and stack).
// The run is marked complete only if the replay matched its recording; a
// diverged or interrupted replay leaves an incomplete run with the events
// it produced. o.OnHit, o.OnSample, o.OnTrace and o.OnHost are replaced.
func ToDB(ctx context.Context, o Options, db *eventdb.DB) (*Result, *eventdb.Run, error) {
	rec, done, err := o.recording()
	if err != nil {
		return nil, nil, err
	}
	defer done()
	o.Recording = rec
	st, err := newStored(&o)
	if err != nil {
		return nil, nil, err
	}
	if st.symbols != nil { // a kit image's: refused here by a DB of another
		if err := db.SetSymbols(st.symbols); err != nil {
			return nil, nil, err
		}
	}
	abs, _ := filepath.Abs(rec.Path)
	run, in, err := db.NewRun(abs, st.probes, st.sampling)
	if err != nil {
		return nil, nil, err
	}
	// A replay that stops early (interrupted, diverged) still commits the
	// events it produced: the run stays incomplete, and holds them. After
	// Finish, Close does nothing.
	defer in.Close()
	res, err := replayInto(ctx, o, in, st)
	var cut *TapeCutError
	if err != nil && !errors.As(err, &cut) {
		return res, run, err // the run stays incomplete
	}
	if st.host != nil {
		if herr := db.SetHost(run.ID, st.host); herr != nil {
			return res, run, herr // the run stays incomplete
		}
	}
	if rec.Header.Linux != nil { // the files the program mapped, known now
		if serr := db.SetSymbols(st.symbols); serr != nil {
			return res, run, serr
		}
	}
	if ferr := in.Finish(); ferr != nil {
		return res, run, ferr
	}
	final, ferr := db.Run(run.ID)
	if ferr == nil {
		run = &final
	}
	return res, run, err
}

// eventSink takes a replay's events in the order they arrive: a run's
// Ingest, or a split replay's segment's spool.
type eventSink interface {
	Add(*eventdb.Event) error
}

// stored is what a replay into a DB keeps besides its events: the run's
// probe table and sampling, known before it starts, and its symbols and
// host view, known when it ends (replayInto) — no host view for a
// segment that ends at a checkpoint, which has not read the tape whole.
type stored struct {
	probes   []eventdb.Probe
	sampling string
	symbols  *eventdb.Symbols
	host     *eventdb.Host
}

// newStored is what a replay of o.Recording keeps, as far as it is known
// before the replay: for a kit guest, its image's symbols too (o.Image
// opened if not given).
func newStored(o *Options) (*stored, error) {
	st := &stored{}
	switch {
	case o.Plan != nil:
		st.probes = probeTable(o.Plan.Probes)
	case o.Set != nil:
		st.probes = probeTable(o.Set.Probes)
	}
	var modes []string
	if o.SampleEvery != 0 {
		modes = append(modes, fmt.Sprintf("every %d user-mode branch counts (deterministic)", o.SampleEvery))
	}
	if o.SamplePeriod != 0 {
		modes = append(modes, fmt.Sprintf("every %v of replay time", o.SamplePeriod))
	}
	st.sampling = strings.Join(modes, "; ")
	if o.Recording.Header.Linux == nil {
		if o.Image == nil {
			img, err := o.Recording.Image()
			if err != nil {
				return nil, err
			}
			o.Image = img
		}
		st.symbols = imageSymbols(o.Image)
	}
	return st, nil
}

// replayInto replays o (a kit guest's Image opened: newStored) with its
// events going to sink, and completes st: a Linux program's symbols
// (those of the files it mapped) and, if the replay read the tape to its
// end, the host view. A cut tape's error is returned with st complete.
func replayInto(ctx context.Context, o Options, sink eventSink, st *stored) (*Result, error) {
	rec := o.Recording
	h := rec.Header
	var mapped *mappedSymbols
	tidSym, haveTID := elffile.Symbol{}, false
	if h.Linux != nil {
		// The symbols are those of the files the program maps: stored
		// when the replay has seen them all.
		mapped = &mappedSymbols{image: fmt.Sprintf("%x", h.Image.SHA256), refs: map[LoadedFile]eventdb.ObjectRef{}}
		o.OnMapping = func(m linux.Mapping, f *elffile.File, pos vmm.Position, at time.Duration) error {
			index := len(mapped.maps)
			if err := mapped.add(m, f); err != nil || index == len(mapped.maps) {
				return err // past the bound: not kept
			}
			if m.Restored && o.splitting {
				return nil // an earlier share stored its event; Merge joins the tables
			}
			exec := uint64(0)
			if m.Exec {
				exec = 1
			}
			return sink.Add(&eventdb.Event{Kind: eventdb.KindMapping, Thread: uint32(m.PID), Pos: eventdb.Position(pos), Time: at,
				Addr: m.Start, Args: []uint64{m.End, m.Offset, exec, uint64(index)}})
		}
	} else {
		tidSym, haveTID = o.Image.Lookup(abi.CurrentTIDSymbol)
	}
	o.OnHit = func(h Hit) error {
		args := make([]uint64, len(h.Args))
		for i, v := range h.Args {
			args[i] = v.Value // a failed read records 0; the probe table names the arguments
		}
		kind := eventdb.KindProbeEntry
		if h.Probe.Return {
			kind = eventdb.KindProbeReturn
		}
		return sink.Add(&eventdb.Event{Kind: kind, Thread: h.Thread, Pos: eventdb.Position(h.Pos),
			Time: h.Time, Probe: h.Probe.ID + 1, Addr: h.Site, Args: args})
	}
	o.OnSample = func(s *Sample, mem vmm.GuestMemory) error {
		thread := s.Thread
		if thread == 0 {
			thread = currentThread(mem, tidSym, haveTID)
		}
		var objs []eventdb.ObjectRef
		if s.Files != nil {
			objs = make([]eventdb.ObjectRef, len(s.Files))
			for i, f := range s.Files {
				objs[i] = mapped.ref(f)
			}
		}
		args := eventdb.SampleArgs(uint64(math.Round(s.Cost*eventdb.SampleCost)), s.System, objs)
		return sink.Add(&eventdb.Event{Kind: eventdb.KindSample, Thread: thread,
			Pos: eventdb.Position(s.Pos), Time: s.Time, Addr: s.RIP, Stack: s.Stack, Args: args})
	}
	o.OnTrace = func(r *TraceRecord) error {
		e := traceEvent(r)
		if e == nil {
			return nil
		}
		return sink.Add(e)
	}
	if h.Linux != nil {
		o.OnTrace = nil // no guest kernel, no trace ring
		o.OnFrame = func(frame []byte, sent bool, pos vmm.Position, at time.Duration) error {
			m, err := door.Parse(frame)
			if err != nil {
				return err
			}
			op := uint64(connOp[m.Op])
			if sent {
				op += eventdb.ConnSent
			}
			return sink.Add(&eventdb.Event{Kind: eventdb.KindConn, Thread: m.Conn, Pos: eventdb.Position(pos), Time: at,
				Addr: op, Args: []uint64{uint64(len(m.Data)), m.Offset}})
		}
	}
	// The host view is whole only in a replay that reads the tape to its
	// end: a segment that ends at a checkpoint stores none.
	host := newHostCopier(sink)
	o.OnHost = host.frame
	if o.Until != 0 {
		o.OnHost = nil
	}
	res, err := Replay(ctx, o)
	var cut *TapeCutError
	if err != nil && !errors.As(err, &cut) {
		return res, err
	}
	if o.Until == 0 {
		view, herr := host.view(rec.Path)
		if herr != nil {
			return res, herr
		}
		st.host = view
	}
	if mapped != nil {
		st.symbols = mapped.symbols()
	}
	return res, err
}

// probeTable is the run's probe table: ids from 1, 0 meaning none.
func probeTable(ps []probes.Probe) []eventdb.Probe {
	var table []eventdb.Probe
	for _, p := range ps {
		names := make([]string, len(p.Args))
		for i, a := range p.Args {
			names[i] = a.Name
		}
		table = append(table, eventdb.Probe{ID: p.ID + 1, Name: p.Name, Spec: p.Spec, Symbol: p.Symbol,
			Addr: p.Addr, Return: p.Return, Args: names})
	}
	return table
}

// Bounds on what a Linux program's replay stores to name its addresses.
const (
	maxMappings = 1 << 16
	maxSymbols  = 1 << 22
)

// mappedSymbols collects the symbols of the files a Linux program maps,
// at the addresses it maps them at: each file's symbols once per load
// address, a shared library's named SYMBOL@LIBRARY, kept per object so
// that where processes map different files at one address (after an
// exec) a sample, which names the file of each address, is named after
// its own.
type mappedSymbols struct {
	image string
	refs  map[LoadedFile]eventdb.ObjectRef
	nsyms int
	maps  []eventdb.Mapping
	objs  []eventdb.Object
}

func (c *mappedSymbols) add(m linux.Mapping, f *elffile.File) error {
	if len(c.maps) < maxMappings {
		em := eventdb.Mapping{PID: uint32(m.PID), Start: m.Start, End: m.End, Offset: m.Offset, Path: m.Path, Exec: m.Exec}
		if f != nil {
			em.BuildID = f.BuildID
		}
		c.maps = append(c.maps, em)
	}
	if f == nil || !m.Exec {
		return nil
	}
	base, ok := f.Base(m.Start, m.Offset)
	key := LoadedFile{Path: m.Path, Base: base}
	if !ok || c.refs[key] != 0 || len(c.objs) >= maxMappings {
		return nil
	}
	var syms []symtab.Symbol
	for _, s := range f.Symbols.All() {
		if c.nsyms >= maxSymbols {
			break
		}
		if f.Shared {
			s.Name += "@" + f.Name()
		}
		s.Addr += base
		syms = append(syms, s)
		c.nsyms++
	}
	c.objs = append(c.objs, eventdb.Object{Path: m.Path, BuildID: f.BuildID, Start: base, End: base + f.Span(), Symbols: symtab.New(syms)})
	c.refs[key] = eventdb.ObjectRef(len(c.objs))
	return nil
}

// ref names the object a file loaded at a base is (0: none collected).
func (c *mappedSymbols) ref(f LoadedFile) eventdb.ObjectRef { return c.refs[f] }

func (c *mappedSymbols) symbols() *eventdb.Symbols {
	return eventdb.NewObjectSymbols(c.image, c.maps, c.objs)
}

// imageSymbols is the table tools name addresses with, keyed by the
// image's SHA-256 so that a DB never mixes recordings of two images.
func imageSymbols(img *elffile.Image) *eventdb.Symbols {
	return &eventdb.Symbols{Image: fmt.Sprintf("%x", img.SHA256), Table: img.SymbolTable()}
}

// traceEvent turns a trace-ring record into an event (nil for kinds the
// DB does not know).
func traceEvent(r *TraceRecord) *eventdb.Event {
	e := &eventdb.Event{Thread: r.TID, Pos: eventdb.Position(r.Pos), Time: r.Time}
	switch {
	case r.Kind == abi.TraceSwitch: // from TID to A, reason B
		e.Kind, e.Addr, e.Args = eventdb.KindSwitch, r.A, []uint64{r.B}
	case r.Kind == abi.TraceCreate: // TID created A, starting at B
		e.Kind, e.Addr, e.Args = eventdb.KindThreadCreate, r.A, []uint64{r.B}
	case r.Kind == abi.TraceExit: // TID exited with A
		e.Kind, e.Args = eventdb.KindThreadExit, []uint64{r.A}
	case r.Kind&abi.TraceUser != 0: // SYS_TRACE(kind, a, b)
		e.Kind, e.Addr, e.Args = eventdb.KindUser, uint64(r.Kind&0xFFFF), []uint64{r.A, r.B}
	default:
		return nil
	}
	return e
}

// connOp is what a door message did, as the event DB keeps it.
var connOp = map[door.Op]int{door.Open: eventdb.ConnOpen, door.Connect: eventdb.ConnOpen, door.Connected: eventdb.ConnOpen,
	door.Data: eventdb.ConnData, door.Fin: eventdb.ConnEnd, door.Close: eventdb.ConnEnd, door.Reset: eventdb.ConnEnd}
