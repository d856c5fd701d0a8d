package replayer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/host/scratch"
	"github.com/reprise-vm/reprise/symtab"
)

// A tape whose replay has checkpoints splits into segments: boot to the
// first checkpoint, each checkpoint to the next, the last to the end.
// Each segment replays on its own machine — on another core, or another
// host — from its first checkpoint, and is checked at its last, so the
// segments together are checked as a replay from boot is.

// Segments is how many segments the checkpoint file of o splits the
// replay into.
func Segments(o Options) (int, error) {
	rec, done, err := o.recording()
	if err != nil {
		return 0, err
	}
	defer done()
	f, err := checkpoint.Open(o.Checkpoints, checkpoint.RecordingOf(rec.Header))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return len(f.Checkpoints()) + 1, nil
}

// Group is the segments [From, To) that worker i of n replays: n
// consecutive groups of nearly equal numbers of segments.
func Group(segments, i, n int) (from, to int) {
	return segments * i / n, segments * (i + 1) / n
}

// SegmentsToDB replays segments [from, to) of o's tape into db as one
// run, each segment after the other (a worker's share of a split
// replay). The run's note says which segments it holds, of which tape
// and checkpoints (SegmentNote).
func SegmentsToDB(ctx context.Context, o Options, db *eventdb.DB, from, to, total int) (*Result, *eventdb.Run, error) {
	rec, done, err := o.recording()
	if err != nil {
		return nil, nil, err
	}
	defer done()
	o.Recording = rec
	split, err := SplitOf(rec, o.Checkpoints)
	if err != nil {
		return nil, nil, err
	}
	if split.Segments != total {
		return nil, nil, fmt.Errorf("replayer: %s splits the replay into %d segments, not %d", o.Checkpoints, split.Segments, total)
	}
	if from < 0 || to > total || from >= to {
		return nil, nil, fmt.Errorf("replayer: segments [%d, %d) of %d", from, to, total)
	}
	res, run, err := ToDB(ctx, o.segments(from, to, total), db)
	if err != nil {
		return res, run, err
	}
	return res, run, db.SetNote(run.ID, SegmentNote{From: from + 1, To: to, Split: split}.String())
}

// segments is o replaying segments [from, to) of total: from checkpoint
// from to checkpoint to, the last to the tape's end.
func (o Options) segments(from, to, total int) Options {
	o.Start, o.Until, o.splitting = from, to, true
	if to == total {
		o.Until = 0
	}
	return o
}

// Split identifies a split replay: the tape by its content, and the
// checkpoints its segments start and end at. Shares of one replay have
// the same Split; reprise merge joins no others.
type Split struct {
	Tape        [32]byte // SHA-256 of the tape file
	Checkpoints [32]byte // SHA-256 of the checkpoints' list: where each is
	Segments    int
}

// SplitOf reads the tape and the checkpoint file that split its replay.
func SplitOf(rec *Recording, checkpoints string) (Split, error) {
	f, err := checkpoint.Open(checkpoints, checkpoint.RecordingOf(rec.Header))
	if err != nil {
		return Split{}, err
	}
	defer f.Close()
	sums := f.Checkpoints()
	ck := sha256.New()
	for _, c := range sums {
		fmt.Fprintf(ck, "%d %d %d %d %d\n", c.Time, c.Events, c.Pos.Exit, c.Pos.Branch, c.Stop)
	}
	t, err := rec.tape.Whole()
	if err != nil {
		return Split{}, fmt.Errorf("replayer: %w", err)
	}
	th := sha256.New()
	if _, err := io.Copy(th, t); err != nil {
		return Split{}, fmt.Errorf("replayer: hashing %s: %w", rec.Path, err)
	}
	s := Split{Segments: len(sums) + 1}
	th.Sum(s.Tape[:0])
	ck.Sum(s.Checkpoints[:0])
	return s, nil
}

// SegmentNote is the note of a share's run: the segments it holds
// (1-based, inclusive) of which split.
type SegmentNote struct {
	From, To int
	Split    Split
}

func (n SegmentNote) String() string {
	return fmt.Sprintf("segments %d to %d of %d; tape sha256 %x; checkpoints sha256 %x", n.From, n.To, n.Split.Segments, n.Split.Tape, n.Split.Checkpoints)
}

// ParseSegmentNote reads a share's run note, and refuses one that names
// no segments of a split: 1 <= From <= To <= Segments.
func ParseSegmentNote(s string) (SegmentNote, error) {
	var (
		n      SegmentNote
		tp, ck []byte
	)
	k, err := fmt.Sscanf(s, "segments %d to %d of %d; tape sha256 %x; checkpoints sha256 %x", &n.From, &n.To, &n.Split.Segments, &tp, &ck)
	switch {
	case k != 5 || err != nil:
		return n, fmt.Errorf("note %q names no segments of a split replay", s)
	case len(tp) != 32 || len(ck) != 32:
		return n, fmt.Errorf("note %q: hashes of %d and %d bytes", s, len(tp), len(ck))
	case n.From < 1 || n.From > n.To || n.To > n.Split.Segments:
		return n, fmt.Errorf("note %q: segments %d to %d of %d", s, n.From, n.To, n.Split.Segments)
	}
	copy(n.Split.Tape[:], tp)
	copy(n.Split.Checkpoints[:], ck)
	return n, nil
}

// ParallelToDB replays o's tape into db as one run by replaying its
// segments on `jobs` machines at once, each into a spool of its own (a
// file in a scratch directory), and merging them in order as they end:
// the run holds the events a replay from boot would store, in its arrival
// order (host-view records, which a replay stores as it reads the tape,
// come with the last segment's), each written into a DB once.
func ParallelToDB(ctx context.Context, o Options, db *eventdb.DB, jobs int) (*Result, *eventdb.Run, error) {
	rec, done, err := o.recording()
	if err != nil {
		return nil, nil, err
	}
	defer done()
	o.Recording = rec // the segments' replays share it: one tape opened
	total, err := Segments(o)
	if err != nil {
		return nil, nil, err
	}
	st, err := newStored(&o) // and o.Image, a kit guest's, opened once
	if err != nil {
		return nil, nil, err
	}
	jobs = max(1, min(jobs, total))
	dir, err := scratch.Dir("segments")
	if err != nil {
		return nil, nil, fmt.Errorf("replayer: %w", err)
	}
	defer os.RemoveAll(dir)
	type part struct {
		segment spooledSegment
		res     *Result
		err     error
		done    chan struct{} // closed when the segment's replay has ended
	}
	parts := make([]part, total)
	for s := range parts {
		parts[s].done = make(chan struct{})
	}
	work := make(chan int, total)
	for s := range total {
		work <- s // in order: the merge below takes them in order as they end
	}
	close(work)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				p := &parts[s]
				p.segment = spooledSegment{n: s + 1, stored: *st}
				if p.segment.spool, p.err = eventdb.NewSpool(filepath.Join(dir, fmt.Sprint(s))); p.err == nil {
					so := o.segments(s, s+1, total)
					so.Console, so.Progress = nil, nil
					if s == total-1 {
						so.Console = o.Console // the last segment's output is the end of the recording's
					}
					p.res, p.err = replayInto(ctx, so, p.segment.spool, &p.segment.stored)
				}
				close(p.done)
			}
		}()
	}
	defer func() {
		wg.Wait()
		for _, p := range parts {
			if p.segment.spool != nil {
				p.segment.spool.Close()
			}
		}
	}()
	// The merge copies each segment's events as soon as it and those
	// before it have ended, while later segments still replay. A
	// segment that reached the end of a cut tape is the replay's last:
	// those after it start past the cut and have nothing to replay.
	var last *part
	run, err := Merge(db, rec.Path, func(yield func(Part, error) bool) {
		for s := range parts {
			p := &parts[s]
			<-p.done
			var cut *TapeCutError
			cutHere := errors.As(p.err, &cut)
			if p.err != nil && !cutHere {
				wg.Wait()
				var errs []error
				for s, p := range parts {
					if p.err != nil {
						errs = append(errs, fmt.Errorf("segment %d: %w", s+1, p.err))
					}
				}
				yield(Part{}, errors.Join(errs...))
				return
			}
			last = p
			if !yield(Part{segment: &p.segment, Last: s == total-1 || cutHere}, nil) || cutHere {
				return
			}
		}
	})
	if err != nil {
		return nil, run, err
	}
	return last.res, run, last.err // a cut tape's error says where it ends
}

// Part is one part of a split replay to merge, and whether it is the
// replay's last (it read the tape to its end): a complete run of its DB
// (a share replayed elsewhere: SegmentsToDB), or, within ParallelToDB, a
// segment's spool.
type Part struct {
	DB      *eventdb.DB
	Run     *eventdb.Run
	Last    bool
	segment *spooledSegment
}

// spooledSegment is a segment ParallelToDB replayed into a spool: its
// number (from 1), its events, what else it stored.
type spooledSegment struct {
	n      int
	spool  *eventdb.Spool
	stored stored
}

func (p Part) String() string {
	if p.segment != nil {
		return fmt.Sprintf("segment %d", p.segment.n)
	}
	return fmt.Sprintf("run %d", p.Run.ID)
}

// run is the part's run record: a spooled segment's is made of what it
// stored, complete (a segment that failed is never merged).
func (p Part) run() *eventdb.Run {
	if sg := p.segment; sg != nil {
		return &eventdb.Run{Probes: sg.stored.probes, Sampling: sg.stored.sampling, Events: sg.spool.Events(), Complete: true}
	}
	return p.Run
}

func (p Part) symbols() (*eventdb.Symbols, error) {
	if sg := p.segment; sg != nil {
		return sg.stored.symbols, nil
	}
	return p.DB.Symbols()
}

// host is the part's host view, nil if it has none.
func (p Part) host() *eventdb.Host {
	if sg := p.segment; sg != nil {
		return sg.stored.host
	}
	h, err := p.DB.Host(p.Run.ID)
	if err != nil {
		return nil
	}
	return h
}

// copyInto adds the part's events to in, those of kinds in rewrite
// through fix.
func (p Part) copyInto(in *eventdb.Ingest, rewrite []eventdb.Kind, fix func(*eventdb.Event)) error {
	if sg := p.segment; sg != nil {
		return in.CopySpool(sg.spool, rewrite, fix)
	}
	return in.Copy(p.DB, p.Run.ID, rewrite, fix)
}

// Merge stores the parts it is given — the segments of one replay, in
// order, each complete, all with the same probes and sampling — in db as
// one run: their events in arrival order, their symbol tables joined,
// and the host view of the last (the part that read the tape to its
// end). It copies each part as it is yielded, so a caller can yield parts
// as they end. The run is complete only when the last part yielded is the
// replay's last and nothing failed: a part's error, or parts that stop
// before the last, leave it incomplete (with the events copied) and
// return an error, and the run with it.
func Merge(db *eventdb.DB, tape string, parts iter.Seq2[Part, error]) (*eventdb.Run, error) {
	var (
		joined symbolJoin
		run    *eventdb.Run
		in     *eventdb.Ingest
		first  *eventdb.Run
		last   Part
	)
	defer func() {
		if in != nil {
			in.Close() // after Finish, nothing
		}
	}()
	stopped := func(err error) (*eventdb.Run, error) {
		if in == nil {
			return nil, err
		}
		if cerr := in.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return in.Run(), err
	}
	for p, err := range parts {
		if err != nil {
			return stopped(err)
		}
		r := p.run()
		if last.Last {
			return stopped(fmt.Errorf("replayer: merge: %v follows the replay's last part", p))
		}
		if !r.Complete {
			return stopped(fmt.Errorf("replayer: merge: %v of a part is incomplete", p))
		}
		if first == nil {
			first = r
		} else if err := SameOptions(first, r); err != nil {
			return stopped(fmt.Errorf("replayer: merge: %v: %w", p, err))
		}
		syms, err := p.symbols()
		if err != nil {
			return stopped(fmt.Errorf("replayer: merge: %w", err))
		}
		remap, objRemap, err := joined.add(syms)
		if err != nil {
			return stopped(fmt.Errorf("replayer: merge: %v: %w", p, err))
		}
		if in == nil {
			abs, _ := filepath.Abs(tape)
			if run, in, err = db.NewRun(abs, r.Probes, r.Sampling); err != nil {
				return nil, err
			}
		}
		err = p.copyInto(in, []eventdb.Kind{eventdb.KindMapping, eventdb.KindSample}, func(e *eventdb.Event) {
			if e.Kind == eventdb.KindMapping && len(e.Args) > 3 && e.Args[3] < uint64(len(remap)) {
				e.Args[3] = remap[e.Args[3]]
			}
			objs := e.SampleObjects()
			for i, ref := range objs {
				if ref != 0 && ref <= uint64(len(objRemap)) {
					objs[i] = objRemap[ref-1]
				}
			}
		})
		if err != nil {
			return stopped(fmt.Errorf("replayer: merge: %w", err))
		}
		last = p
	}
	switch {
	case in == nil:
		return nil, errors.New("replayer: merge: no part to merge")
	case !last.Last:
		return stopped(errors.New("replayer: merge: the parts end before the replay's last segment"))
	}
	if err := db.SetSymbols(joined.symbols()); err != nil {
		return stopped(err)
	}
	if h := last.host(); h != nil {
		if err := db.SetHost(run.ID, h); err != nil {
			return stopped(err)
		}
	}
	if err := in.Finish(); err != nil {
		return run, err
	}
	final, err := db.Run(run.ID)
	if err != nil {
		return nil, err
	}
	return &final, nil
}

// SameOptions checks that two parts' runs replayed with the same probes
// and sampling: a merged run has one probe table and one sampling.
func SameOptions(a, b *eventdb.Run) error {
	if a.Sampling != b.Sampling {
		return fmt.Errorf("sampled %q, another part %q", b.Sampling, a.Sampling)
	}
	if !slices.EqualFunc(a.Probes, b.Probes, func(x, y eventdb.Probe) bool {
		return x.ID == y.ID && x.Name == y.Name && x.Spec == y.Spec && x.Symbol == y.Symbol &&
			x.Addr == y.Addr && x.Return == y.Return && slices.Equal(x.Args, y.Args)
	}) {
		return errors.New("its probes are not another part's")
	}
	return nil
}

// symbolJoin joins the symbol tables of a split replay's parts into the
// one a replay from boot builds: each part's table holds the mappings
// restored at its start (an earlier part's) and those it saw made, so a
// mapping (or loaded file) already joined is found again and a new one
// appended, in the order they were made.
type symbolJoin struct {
	image string
	syms  []symtab.Symbol // a kit image's
	seen  map[symtab.Symbol]bool
	maps  []eventdb.Mapping
	objs  []eventdb.Object // a Linux program's, each with its symbols
	objOf map[objectKey]eventdb.ObjectRef
}

// objectKey identifies a loaded file across the parts.
type objectKey struct {
	path, buildID string
	start, end    uint64
}

// add joins s and returns, for each of its mappings, its index in the
// joined table, and for each of its objects, its ref there.
func (j *symbolJoin) add(s *eventdb.Symbols) (maps []uint64, objs []eventdb.ObjectRef, err error) {
	if j.seen == nil {
		j.image, j.seen, j.objOf = s.Image, map[symtab.Symbol]bool{}, map[objectKey]eventdb.ObjectRef{}
	}
	if s.Image != j.image {
		return nil, nil, fmt.Errorf("symbols of image %s, not %s: parts of another recording", s.Image, j.image)
	}
	if s.Table != nil && len(s.Objects) == 0 {
		for _, sym := range s.All() {
			if !j.seen[sym] {
				j.seen[sym] = true
				j.syms = append(j.syms, sym)
			}
		}
	}
	objs = make([]eventdb.ObjectRef, len(s.Objects))
	for i, o := range s.Objects {
		k := objectKey{o.Path, o.BuildID, o.Start, o.End}
		if j.objOf[k] == 0 {
			j.objs = append(j.objs, o)
			j.objOf[k] = eventdb.ObjectRef(len(j.objs))
		}
		objs[i] = j.objOf[k]
	}
	maps = make([]uint64, len(s.Mappings))
	for i, m := range s.Mappings {
		at := lastIndex(j.maps, m) // mapped again alike after an unmap: the latest
		if at < 0 {
			if len(j.maps) >= maxMappings {
				return nil, nil, fmt.Errorf("more than %d mappings", maxMappings)
			}
			at = len(j.maps)
			j.maps = append(j.maps, m)
		}
		maps[i] = uint64(at)
	}
	return maps, objs, nil
}

func (j *symbolJoin) symbols() *eventdb.Symbols {
	if len(j.objs) > 0 {
		return eventdb.NewObjectSymbols(j.image, j.maps, j.objs)
	}
	s := eventdb.NewSymbols(j.image, j.syms)
	s.Mappings = j.maps
	return s
}

func lastIndex[T comparable](s []T, v T) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}
