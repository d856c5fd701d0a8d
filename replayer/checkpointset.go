package replayer

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/reprise-vm/reprise/checkpoint"
)

// CheckpointSet is the checkpoints a debugging session's replays start
// from, one replay after another (Options.CheckpointSet): the tape's
// checkpoint file's, if it has one, and those the replays take as they go
// (Options.KeepCheckpoint), in a file of the session's own that Close
// removes. Each file is opened and indexed once, and a checkpoint's RAM
// is hashed against its recorded SHA-256 the first time a replay starts
// from it, not each time: hashing the whole of RAM is most of a restore
// (the session's own were hashed as they were taken). Afterwards the
// files' frame checksums guard what is read again, and each replay is
// still checked at its events and its end.
//
// A checkpoint keeps its number (Options.Start, Options.Until): the
// file's come first, in order, then the session's, in the order taken —
// not the order of the run.
type CheckpointSet struct {
	mu       sync.Mutex
	file     *checkpoint.File // the tape's, or nil
	own      *checkpoint.File // the session's, or nil
	w        *checkpoint.Writer
	ownPath  string
	list     []setEntry
	byPlace  []int // indices into list, in the run's order
	verified map[int]bool
	full     string // why the session takes no more, once it does not
	cost     time.Duration
}

// setEntry is one checkpoint of the set: where it is, and which file
// holds it at which index.
type setEntry struct {
	sum checkpoint.Summary
	own bool
	i   int
}

// Bounds on the checkpoints a session takes: each is tens to hundreds of
// KiB of a temporary file (the pages that changed since the ones before).
const (
	maxOwnCheckpoints = 256
	maxOwnBytes       = 2 << 30
)

// OpenCheckpointSet opens the checkpoints of rec's recording a debugging
// session starts replays from: those of the checkpoint file at path (none
// if path is empty), and, with own, a file in the temporary directory for
// those its replays take.
func OpenCheckpointSet(rec *Recording, path string, own bool) (*CheckpointSet, error) {
	c := &CheckpointSet{verified: map[int]bool{}}
	r := checkpoint.RecordingOf(rec.Header)
	if path != "" {
		f, err := checkpoint.Open(path, r)
		if err != nil {
			return nil, err
		}
		c.file = f
		for i, s := range f.Checkpoints() {
			c.list = append(c.list, setEntry{sum: s, i: i})
		}
	}
	if own {
		if err := c.create(r); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	c.sort()
	return c, nil
}

// create makes the session's own file.
func (c *CheckpointSet) create(r checkpoint.Recording) error {
	f, err := os.CreateTemp("", "reprise-session-*.ckpt")
	if err != nil {
		return fmt.Errorf("the session's checkpoints: %w", err)
	}
	c.ownPath = f.Name()
	f.Close()
	if c.w, err = checkpoint.Create(c.ownPath, r); err != nil {
		return err
	}
	c.w.SkipPassChecks() // the set's own are only started from
	c.own, err = checkpoint.Open(c.ownPath, r)
	return err
}

// Checkpoints are the set's checkpoints, by number (less one).
func (c *CheckpointSet) Checkpoints() []checkpoint.Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]checkpoint.Summary, len(c.list))
	for i, e := range c.list {
		out[i] = e.sum
	}
	return out
}

// Taken is how many of the set's checkpoints the session took, and, once
// it takes no more, why.
func (c *CheckpointSet) Taken() (n int, full string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.list {
		if e.own {
			n++
		}
	}
	return n, c.full
}

// Close closes the files and removes the session's own.
func (c *CheckpointSet) Close() error {
	var err error
	for _, f := range []*checkpoint.File{c.file, c.own} {
		if f != nil {
			err = errors.Join(err, f.Close())
		}
	}
	if c.w != nil {
		err = errors.Join(err, c.w.Close())
	}
	if c.ownPath != "" {
		err = errors.Join(err, os.Remove(c.ownPath))
	}
	return err
}

// sort orders byPlace by where in the run each checkpoint is.
func (c *CheckpointSet) sort() {
	c.byPlace = c.byPlace[:0]
	for i := range c.list {
		c.byPlace = append(c.byPlace, i)
	}
	slices.SortStableFunc(c.byPlace, func(a, b int) int { return checkpoint.Compare(c.list[a].sum, c.list[b].sum) })
}

// latest is the last checkpoint of the set at or before here, nil if
// none is.
func (c *CheckpointSet) latest(here checkpoint.Summary) *checkpoint.Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, _ := slices.BinarySearchFunc(c.byPlace, here, func(i int, h checkpoint.Summary) int {
		if checkpoint.Compare(c.list[i].sum, h) <= 0 {
			return -1
		}
		return 1
	})
	if n == 0 {
		return nil
	}
	s := c.list[c.byPlace[n-1]].sum
	return &s
}

// entry is checkpoint i (0-based) and the file holding it.
func (c *CheckpointSet) entry(i int) (setEntry, *checkpoint.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.list) {
		return setEntry{}, nil, fmt.Errorf("replayer: the session has %d checkpoints, no checkpoint %d", len(c.list), i+1)
	}
	e := c.list[i]
	if e.own {
		return e, c.own, nil
	}
	return e, c.file, nil
}

// canTake says whether the session may take another checkpoint.
func (c *CheckpointSet) canTake() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w != nil && c.full == ""
}

// take adds a checkpoint of e's Linux program to the session's file,
// at record time t: RAM as recorded, the debugger's int3s and debug stack
// shown as they were. A machine that cannot be captured here (a disk
// request in flight) is tried again at a later stop; one the file does
// not take ends the session's taking.
func (c *CheckpointSet) take(e *engine, t time.Duration) error {
	var sum checkpoint.Summary
	var ok bool
	began := time.Now()
	err := e.kernel.WithoutBreakpoints(func() (err error) {
		sum, ok, err = c.w.Capture(e.m, t, e.engineState())
		return err
	})
	var skip *checkpoint.SkipError
	switch {
	case errors.As(err, &skip):
		c.skip(skip.Why)
		return nil
	case err != nil || !ok:
		return err
	}
	return c.added(sum, time.Since(began))
}

// lastCost is what taking the session's last checkpoint took (0: none
// taken).
func (c *CheckpointSet) lastCost() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cost
}

// added notes the checkpoint the session's writer just wrote, summed up
// as sum, in cost of host time, and stops taking more at the bounds.
func (c *CheckpointSet) added(sum checkpoint.Summary, cost time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cost = cost
	if err := c.own.Refresh(); err != nil {
		return err
	}
	own := c.own.Checkpoints()
	if len(own) == 0 || checkpoint.Compare(own[len(own)-1], sum) != 0 {
		return errors.New("replayer: the session's checkpoint file does not list the checkpoint just written")
	}
	c.verified[len(c.list)] = true // hashed as it was taken
	c.list = append(c.list, setEntry{sum: own[len(own)-1], own: true, i: len(own) - 1})
	c.sort()
	var bytes int64
	for _, s := range own {
		bytes += s.Bytes
	}
	switch {
	case len(own) >= maxOwnCheckpoints:
		c.full = fmt.Sprintf("it took %d, as many as it keeps", len(own))
	case bytes >= maxOwnBytes:
		c.full = fmt.Sprintf("its checkpoints take %d MiB, as much as it keeps", bytes>>20)
	}
	return nil
}

// skip stops the session taking more checkpoints, for why.
func (c *CheckpointSet) skip(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.full = why
}

// isVerified reports whether checkpoint i's RAM was checked (never for
// a file of one replay's own: nil).
func (c *CheckpointSet) isVerified(i int) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verified[i]
}

func (c *CheckpointSet) setVerified(i int) {
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.verified[i] = true
	}
}
