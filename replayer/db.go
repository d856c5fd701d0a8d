package replayer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elfimage"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/vmm"
)

// ToDB replays o.Tape with its probe plan and sampling and writes what
// they see into db as a new run: one event per probe hit (with its thread,
// position, record time and arguments) and per sample (RIP and stack).
// The run is marked complete only if the replay matched its recording; a
// diverged or interrupted replay leaves an incomplete run with the events
// it produced. o.OnHit, o.OnSample, o.OnTrace and o.OnHost are replaced.
func ToDB(ctx context.Context, o Options, db *eventdb.DB) (*Result, *eventdb.Run, error) {
	var table []eventdb.Probe
	if o.Plan != nil {
		for _, p := range o.Plan.Probes {
			names := make([]string, len(p.Args))
			for i, a := range p.Args {
				names[i] = a.Name
			}
			table = append(table, eventdb.Probe{ID: p.ID + 1, Name: p.Name, Spec: p.Spec, Symbol: p.Symbol,
				Addr: p.Addr, Return: p.Return, Args: names})
		}
	}
	var modes []string
	if o.SampleEvery != 0 {
		modes = append(modes, fmt.Sprintf("every %d user-mode basic blocks (deterministic)", o.SampleEvery))
	}
	if o.SamplePeriod != 0 {
		modes = append(modes, fmt.Sprintf("every %v of replay time", o.SamplePeriod))
	}
	sampling := strings.Join(modes, "; ")
	if o.Image == nil {
		var err error
		if o.Image, err = TapeImage(o.Tape); err != nil {
			return nil, nil, err
		}
	}
	img := o.Image
	if err := db.SetSymbols(imageSymbols(img)); err != nil {
		return nil, nil, err
	}
	abs, _ := filepath.Abs(o.Tape)
	run, in, err := db.NewRun(abs, table, sampling)
	if err != nil {
		return nil, nil, err
	}
	// A replay that stops early (interrupted, diverged) still commits the
	// events it produced: the run stays incomplete, and holds them. After
	// Finish, Close does nothing.
	defer in.Close()
	tidSym, haveTID := img.Lookup(currentTIDSymbol)
	o.OnHit = func(h Hit) error {
		args := make([]uint64, len(h.Args))
		for i, v := range h.Args {
			args[i] = v.Value // a failed read records 0; the probe table names the arguments
		}
		kind := eventdb.KindProbeEntry
		if h.Probe.Return {
			kind = eventdb.KindProbeReturn
		}
		return in.Add(&eventdb.Event{Kind: kind, Thread: h.Thread, Pos: eventdb.Position(h.Pos),
			Time: h.Time, Probe: h.Probe.ID + 1, Addr: h.Site, Args: args})
	}
	o.OnSample = func(s *Sample, mem vmm.GuestMemory) error {
		return in.Add(&eventdb.Event{Kind: eventdb.KindSample, Thread: currentThread(mem, tidSym, haveTID),
			Pos: eventdb.Position(s.Pos), Time: s.Time, Addr: s.RIP, Stack: s.Stack})
	}
	o.OnTrace = func(r *TraceRecord) error {
		e := traceEvent(r)
		if e == nil {
			return nil
		}
		return in.Add(e)
	}
	host := newHostCopier(in)
	o.OnHost = host.frame
	res, err := Replay(ctx, o)
	var cut *TapeCutError
	if err != nil && !errors.As(err, &cut) {
		return res, run, err // the run stays incomplete
	}
	if herr := host.finish(db, run.ID, o.Tape); herr != nil {
		return res, run, herr // the run stays incomplete
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

// imageSymbols is the table tools name addresses with, keyed by the
// image's SHA-256 so that a DB never mixes recordings of two images.
func imageSymbols(img *elfimage.Image) *eventdb.Symbols {
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
