package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// bufferKB is the per-CPU ring buffer size of an instance. Filtered
// scheduler events of a few vCPU threads are small; this leaves room for
// the reader to fall behind for a while without losing events.
const bufferKB = 2048

// instanceSeq numbers the instances of this process so that several
// sessions can coexist.
var instanceSeq atomic.Int64

// Session is one trace instance recording scheduler events of a set of
// threads. Methods are safe for concurrent use.
type Session struct {
	dir    string   // the instance directory
	events []string // enabled event names (sched_waking is optional)

	mu      sync.Mutex
	started bool
	closed  bool
	pipe    *os.File
	done    chan struct{} // closed when the reader has drained and exited

	onSwitch func(Switch)
	onWakeup func(Wakeup)

	stopping  atomic.Bool
	lost      atomic.Int64
	malformed atomic.Int64
	readErr   error // set by the reader before done is closed
}

// Stats counts what went wrong while reading.
type Stats struct {
	Lost      int64 // events dropped by the kernel (buffer overflow)
	Malformed int64 // lines that could not be parsed
}

// Open finds tracefs, creates a private trace instance and configures it
// (mono clock, buffer size, sched events enabled with a filter that
// matches nothing until SetTIDs). Tracing is off until Start.
//
// If tracefs cannot be used the error is an *UnavailableError saying what
// is missing.
func Open() (*Session, error) { return openIn(roots) }

func openIn(candidates []string) (*Session, error) {
	root, err := findRoot(candidates)
	if err != nil {
		return nil, err
	}
	instances := filepath.Join(root, "instances")
	if _, err := os.Stat(instances); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, &UnavailableError{Reason: fmt.Sprintf("no permission to access %s: run as root", instances), Err: err}
		}
		return nil, &UnavailableError{Reason: fmt.Sprintf("tracefs at %s has no instances directory (kernel too old)", root), Err: err}
	}
	dir := filepath.Join(instances, fmt.Sprintf("reprise-%d-%d", os.Getpid(), instanceSeq.Add(1)))
	if err := os.Mkdir(dir, 0o750); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, &UnavailableError{Reason: fmt.Sprintf("no permission to create a trace instance in %s: run as root", instances), Err: err}
		}
		return nil, fmt.Errorf("tracefs: create trace instance: %w", err)
	}
	s := &Session{dir: dir}
	if err := s.configure(); err != nil {
		// Do not leak the instance: it would hold kernel memory until reboot.
		if rerr := unix.Rmdir(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove trace instance %s: %w", dir, rerr))
		}
		return nil, err
	}
	return s, nil
}

func (s *Session) configure() error {
	if err := writeFile(filepath.Join(s.dir, "tracing_on"), "0"); err != nil {
		return fmt.Errorf("tracefs: stop new instance: %w", err)
	}
	for _, ev := range []string{"sched_switch", "sched_wakeup", "sched_waking"} {
		if _, err := os.Stat(eventDir(s.dir, ev)); err != nil {
			if ev == "sched_waking" { // added in Linux 4.3; wakeup suffices
				continue
			}
			return &UnavailableError{Reason: fmt.Sprintf("kernel has no sched/%s tracepoint", ev), Err: err}
		}
		s.events = append(s.events, ev)
	}
	if err := writeFile(filepath.Join(s.dir, "trace_clock"), "mono"); err != nil {
		if errors.Is(err, unix.EINVAL) {
			return &UnavailableError{Reason: "kernel does not support trace_clock mono", Err: err}
		}
		return fmt.Errorf("tracefs: set trace clock: %w", err)
	}
	if err := writeFile(filepath.Join(s.dir, "buffer_size_kb"), fmt.Sprint(bufferKB)); err != nil {
		return fmt.Errorf("tracefs: set buffer size: %w", err)
	}
	if err := s.writeFilters(nil); err != nil {
		return err
	}
	// Enabling now (tracing_on is 0) keeps Start to a single write.
	for _, ev := range s.events {
		if err := writeFile(filepath.Join(eventDir(s.dir, ev), "enable"), "1"); err != nil {
			return fmt.Errorf("tracefs: enable %s: %w", ev, err)
		}
	}
	return nil
}

// Dir returns the trace instance directory (for diagnostics).
func (s *Session) Dir() string { return s.dir }

// SetTIDs replaces the set of traced thread IDs. It may be called before
// or during tracing: vCPU threads are created after recording starts.
// An empty set traces nothing.
func (s *Session) SetTIDs(tids []int) error {
	tids = slices.Clone(tids)
	slices.Sort(tids)
	tids = slices.Compact(tids)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("tracefs: SetTIDs on closed session")
	}
	return s.writeFilters(tids)
}

func (s *Session) writeFilters(tids []int) error {
	for _, ev := range s.events {
		f := wakeupFilter(tids)
		if ev == "sched_switch" {
			f = switchFilter(tids)
		}
		path := filepath.Join(eventDir(s.dir, ev), "filter")
		if err := writeFile(path, f); err != nil {
			// The kernel explains a rejected filter in the file itself.
			if msg, rerr := os.ReadFile(path); rerr == nil && len(msg) > 0 {
				err = fmt.Errorf("%w (kernel says: %q)", err, msg)
			}
			return fmt.Errorf("tracefs: set %s filter: %w", ev, err)
		}
	}
	return nil
}

// Start begins tracing. onSwitch and onWakeup (either may be nil) are
// called from a single reader goroutine, in trace order; they should be
// quick, or the kernel buffer overflows and events are lost (see Stats).
func (s *Session) Start(onSwitch func(Switch), onWakeup func(Wakeup)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.started {
		return errors.New("tracefs: Start on a started or closed session")
	}
	pipe, err := os.Open(filepath.Join(s.dir, "trace_pipe"))
	if err != nil {
		return fmt.Errorf("tracefs: open trace_pipe: %w", classify(s.dir, err))
	}
	// Stop relies on read deadlines to interrupt a blocked read; they only
	// work if the runtime poller accepted the file.
	if err := pipe.SetReadDeadline(noDeadline); err != nil {
		pipe.Close()
		return fmt.Errorf("tracefs: trace_pipe is not pollable: %w", err)
	}
	s.pipe, s.onSwitch, s.onWakeup = pipe, onSwitch, onWakeup
	s.done = make(chan struct{})
	go s.read()
	if err := writeFile(filepath.Join(s.dir, "tracing_on"), "1"); err != nil {
		s.stopReader()
		return fmt.Errorf("tracefs: start tracing: %w", err)
	}
	s.started = true
	return nil
}

// Stats returns the loss and parse-error counters so far.
func (s *Session) Stats() Stats {
	return Stats{Lost: s.lost.Load(), Malformed: s.malformed.Load()}
}

// Close stops tracing, delivers the events still buffered to the
// callbacks, and removes the trace instance. It is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if err := writeFile(filepath.Join(s.dir, "tracing_on"), "0"); err != nil {
		errs = append(errs, fmt.Errorf("tracefs: stop tracing: %w", err))
	}
	if s.pipe != nil {
		if err := s.stopReader(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ev := range s.events {
		if err := writeFile(filepath.Join(eventDir(s.dir, ev), "enable"), "0"); err != nil {
			errs = append(errs, fmt.Errorf("tracefs: disable %s: %w", ev, err))
		}
	}
	if err := unix.Rmdir(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("tracefs: remove trace instance %s: %w", s.dir, err))
	}
	return errors.Join(errs...)
}
