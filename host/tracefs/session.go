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
// the reader to fall behind for a while without losing events. With
// Options.AllSwitches it still holds ~25k switches per CPU, seconds of a
// busy CPU, more than the reader's batching interval (see readInterval).
const bufferKB = 2048

// Tracepoints used. The optional ones are skipped on kernels without them;
// Session.Events says which were enabled.
var sessionEvents = []struct {
	name     string
	optional bool
}{
	{"sched_switch", false},
	{"sched_wakeup", false},
	{"sched_waking", true},       // added in Linux 4.3; wakeup suffices
	{"sched_migrate_task", true}, // only explains why a thread changed CPU
}

// instanceSeq numbers the instances of this process so that several
// sessions can coexist.
var instanceSeq atomic.Int64

// Options configure a Session.
type Options struct {
	// AllSwitches records sched_switch on every CPU for all threads, not
	// only those where a traced thread leaves or enters a CPU, so that an
	// analysis can tell which host threads ran on a CPU while a vCPU
	// thread waited there. Wakeups and migrations stay filtered to the
	// traced threads. It costs many more events: a busy host makes
	// thousands of switches per second.
	AllSwitches bool
}

// Handlers receive a Session's events. Any may be nil. They are called
// from a single reader goroutine, in trace order (a Lost before the event
// that follows the loss); they should be quick, or the kernel buffer
// overflows and events are lost. They must not call SetTIDs or Close:
// Close waits for them with the session locked.
type Handlers struct {
	Switch  func(Switch)
	Wakeup  func(Wakeup)
	Migrate func(Migrate)
	Lost    func(Lost)
}

// Session is one trace instance recording scheduler events of a set of
// threads. Methods are safe for concurrent use.
type Session struct {
	dir    string   // the instance directory
	pooled *os.File // the pool's instance's directory, flocked; nil for one of its own
	opts   Options
	events []string // enabled event names (see sessionEvents)

	mu      sync.Mutex
	started bool
	closed  bool
	pipe    *pipeReader   // trace_pipe while reading
	stop    chan struct{} // closed by stopReader
	done    chan struct{} // closed when the reader has drained and exited

	handlers  Handlers
	lost      atomic.Int64
	uncounted atomic.Int64
	malformed atomic.Int64
	readErr   error // set by the reader before done is closed
}

// Stats counts what went wrong while reading.
type Stats struct {
	Lost          int64 // events dropped by the kernel (buffer overflow)
	LostUncounted int64 // loss reports that did not say how many were lost
	Malformed     int64 // lines that could not be parsed
}

// Open is OpenWith(Options{}): only events of the traced threads.
func Open() (*Session, error) { return OpenWith(Options{}) }

// OpenWith finds tracefs, creates a private trace instance and configures
// it (mono clock, buffer size, sched events enabled with a filter that
// matches nothing until SetTIDs, or none on sched_switch with
// AllSwitches). Tracing is off until Start.
//
// If tracefs cannot be used the error is an *UnavailableError saying what
// is missing.
func OpenWith(opts Options) (*Session, error) { return openIn(roots, opts) }

func openIn(candidates []string, opts Options) (*Session, error) {
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
	reapStale(instances)
	dir, lock, err := claimPooled(instances)
	if err == nil && lock == nil {
		dir, err = ownInstance(instances)
	}
	if err != nil {
		return nil, err
	}
	s := &Session{dir: dir, pooled: lock, opts: opts}
	if err := s.configure(); err != nil {
		// Do not leak an instance of its own: it would hold kernel memory
		// until reboot.
		return nil, errors.Join(err, s.release())
	}
	return s, nil
}

// ownInstance makes a trace instance of this process's own in instances,
// for a session when every instance of the pool is held.
func ownInstance(instances string) (string, error) {
	dir := filepath.Join(instances, fmt.Sprintf("reprise-%d-%d", os.Getpid(), instanceSeq.Add(1)))
	err := os.Mkdir(dir, 0o750)
	if errors.Is(err, fs.ErrExist) {
		// Left by a killed process that had this pid before: this process
		// numbers its instances from 1 again. It is nobody's now.
		_ = unix.Rmdir(dir)
		err = os.Mkdir(dir, 0o750)
	}
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "", &UnavailableError{Reason: fmt.Sprintf("no permission to create a trace instance in %s: run as root", instances), Err: err}
	case err != nil:
		return "", fmt.Errorf("tracefs: create trace instance: %w", err)
	}
	return dir, nil
}

// release lets go of the session's instance: the pool's is left idle (its
// buffers are empty: the reader drained them, or tracing never began), one
// of its own removed.
func (s *Session) release() error {
	if s.pooled != nil {
		if err := s.pooled.Close(); err != nil {
			return fmt.Errorf("tracefs: release %s: %w", s.dir, err)
		}
		return nil
	}
	if err := unix.Rmdir(s.dir); err != nil {
		return fmt.Errorf("tracefs: remove trace instance %s: %w", s.dir, err)
	}
	return nil
}

// reapStale removes the trace instances of reprise processes that are
// gone: a recorder killed with SIGKILL cannot remove its own, and an
// instance holds kernel memory until it is removed. An instance whose pid
// is alive (reprise's or, after pid reuse, another program's) is left.
func reapStale(instances string) {
	entries, err := os.ReadDir(instances)
	if err != nil {
		return
	}
	for _, e := range entries {
		var pid, n int
		if _, err := fmt.Sscanf(e.Name(), "reprise-%d-%d", &pid, &n); err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			_ = unix.Rmdir(filepath.Join(instances, e.Name()))
		}
	}
}

func (s *Session) configure() error {
	if err := writeFile(filepath.Join(s.dir, "tracing_on"), "0"); err != nil {
		return fmt.Errorf("tracefs: stop new instance: %w", err)
	}
	if s.pooled != nil {
		if err := reset(s.dir); err != nil {
			return err
		}
	}
	for _, ev := range sessionEvents {
		if _, err := os.Stat(eventDir(s.dir, ev.name)); err != nil {
			if ev.optional {
				continue
			}
			return &UnavailableError{Reason: fmt.Sprintf("kernel has no sched/%s tracepoint", ev.name), Err: err}
		}
		s.events = append(s.events, ev.name)
	}
	if !clocked(s.dir, "mono") {
		if err := writeFile(filepath.Join(s.dir, "trace_clock"), "mono"); err != nil {
			if errors.Is(err, unix.EINVAL) {
				return &UnavailableError{Reason: "kernel does not support trace_clock mono", Err: err}
			}
			return fmt.Errorf("tracefs: set trace clock: %w", err)
		}
	}
	if !sized(s.dir, bufferKB) {
		if err := writeFile(filepath.Join(s.dir, "buffer_size_kb"), fmt.Sprint(bufferKB)); err != nil {
			return fmt.Errorf("tracefs: set buffer size: %w", err)
		}
	}
	if s.opts.AllSwitches {
		// A new instance has no filter, a pooled one may have an earlier
		// session's: it is cleared.
		if err := s.writeFilter("sched_switch", noFilter); err != nil {
			return err
		}
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

// Events returns the names of the enabled tracepoints, so that a recorder
// can tell "no migrations" from "migrations not recorded".
func (s *Session) Events() []string { return slices.Clone(s.events) }

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

// writeFilters sets the TID filters. With AllSwitches, sched_switch is
// left alone: its filter was cleared by configure and must stay so.
func (s *Session) writeFilters(tids []int) error {
	for _, ev := range s.events {
		f := pidFilter(tids)
		if ev == "sched_switch" {
			if s.opts.AllSwitches {
				continue
			}
			f = switchFilter(tids)
		}
		if err := s.writeFilter(ev, f); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) writeFilter(ev, filter string) error {
	path := filepath.Join(eventDir(s.dir, ev), "filter")
	if err := writeFile(path, filter); err != nil {
		// The kernel explains a rejected filter in the file itself.
		if msg, rerr := os.ReadFile(path); rerr == nil && len(msg) > 0 {
			err = fmt.Errorf("%w (kernel says: %q)", err, msg)
		}
		return fmt.Errorf("tracefs: set %s filter: %w", ev, err)
	}
	return nil
}

// Start begins tracing, delivering events to h (see Handlers).
func (s *Session) Start(h Handlers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.started {
		return errors.New("tracefs: Start on a started or closed session")
	}
	s.done, s.stop = make(chan struct{}), make(chan struct{})
	pipe, err := s.openPipe()
	if err != nil {
		return fmt.Errorf("tracefs: open trace_pipe: %w", err)
	}
	s.pipe, s.handlers = pipe, h
	go s.read(pipe)
	if err := writeFile(filepath.Join(s.dir, "tracing_on"), "1"); err != nil {
		return errors.Join(fmt.Errorf("tracefs: start tracing: %w", err), s.stopReader())
	}
	s.started = true
	return nil
}

// Stats returns the loss and parse-error counters so far.
func (s *Session) Stats() Stats {
	return Stats{Lost: s.lost.Load(), LostUncounted: s.uncounted.Load(), Malformed: s.malformed.Load()}
}

// Close stops tracing, delivers the events still buffered to the
// handlers, and leaves the pool's instance idle or removes one of its
// own. It is idempotent.
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
	if err := s.release(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
