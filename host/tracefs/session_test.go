package tracefs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openOrSkip opens a session, skipping when tracefs is unavailable unless
// CI=true, where a missing tracefs means a broken CI host.
func openOrSkip(t *testing.T) *Session { t.Helper(); return openWithOrSkip(t, Options{}) }

func openWithOrSkip(t *testing.T, opts Options) *Session {
	t.Helper()
	s, err := OpenWith(opts)
	if IsUnavailable(err) && os.Getenv("CI") != "true" {
		t.Skipf("host scheduling not recorded: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func monoNow(t *testing.T) time.Duration {
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts))
	return time.Duration(ts.Nano())
}

// recorder collects a session's events.
type recorder struct {
	mu       sync.Mutex
	switches []Switch
	wakeups  []Wakeup
	migrates []Migrate
	losts    []Lost
	all      []Event // everything, in delivery order
}

func (r *recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, e)
	switch e := e.(type) {
	case Switch:
		r.switches = append(r.switches, e)
	case Wakeup:
		r.wakeups = append(r.wakeups, e)
	case Migrate:
		r.migrates = append(r.migrates, e)
	case Lost:
		r.losts = append(r.losts, e)
	}
}

func (r *recorder) handlers() Handlers {
	return Handlers{
		Switch:  func(e Switch) { r.add(e) },
		Wakeup:  func(e Wakeup) { r.add(e) },
		Migrate: func(e Migrate) { r.add(e) },
		Lost:    func(e Lost) { r.add(e) },
	}
}

// sleepySpinner runs on a locked OS thread, sends its TID, waits for go,
// then sleeps and spins so the scheduler switches it out and in.
//
// Its CPU is never idle: the thread is pinned to the first CPU this
// process may use, with a SCHED_IDLE busy process that runs there whenever
// nothing else does. Some kernels trace nothing a CPU's idle task does,
// sched_switch away from it included: on a 6.18 Firecracker guest, CPU 1
// leaving idle was never traced (0 of thousands), so a thread resumed on
// an idle CPU 1 had only 0–9 of its ~20 switches in recorded, though all
// its switches out. Waking onto a busy CPU, the switch into the thread is
// from a task, which every kernel traces, so the tests can count them.
func sleepySpinner(t *testing.T, tidc chan<- int, start <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// Never unlocked: the thread's affinity is changed, so it must not
	// return to the runtime's pool; it exits with this goroutine.
	runtime.LockOSThread()
	cpu, err := firstCPU()
	if err == nil {
		var hog *exec.Cmd
		hog, err = busyIdle(cpu)
		if hog != nil {
			defer func() { _ = hog.Process.Kill(); _ = hog.Wait() }()
		}
	}
	if err == nil {
		err = pin(0, cpu)
	}
	if err != nil {
		t.Errorf("keep CPU %d busy: %v", cpu, err)
	}
	tidc <- unix.Gettid()
	<-start
	for range 20 {
		time.Sleep(time.Millisecond)
		for end := time.Now().Add(200 * time.Microsecond); time.Now().Before(end); {
		}
	}
}

// busyIdle starts a process that spins on cpu with policy SCHED_IDLE: it
// keeps cpu out of its idle task, and any other task that wakes there
// preempts it at once. It is a process, not a goroutine, so that it does
// not hold one of the runtime's Ps. The caller kills it.
func busyIdle(cpu int) (*exec.Cmd, error) {
	hog := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := hog.Start(); err != nil {
		return nil, err
	}
	pid := hog.Process.Pid
	return hog, errors.Join(pin(pid, cpu), unix.SchedSetAttr(pid, &unix.SchedAttr{Policy: unix.SCHED_IDLE}, 0))
}

// firstCPU is the first CPU this process may run on.
func firstCPU() (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, err
	}
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			return c, nil
		}
	}
	return 0, errors.New("no CPU in this process's affinity")
}

// pin moves thread tid (0: the calling one) to cpu.
func pin(tid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(tid, &set)
}

// checkThread asserts that rec saw tid switched out and in, and woken,
// with increasing timestamps inside [lo, hi], and nothing about other
// threads.
func checkThread(t *testing.T, rec *recorder, tid int, lo, hi time.Duration) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out, in int
	var last time.Duration
	for _, e := range rec.switches {
		require.True(t, e.PrevPID == tid || e.NextPID == tid, "foreign switch %+v", e)
		if e.PrevPID == tid {
			out++
		}
		if e.NextPID == tid {
			in++
		}
		// Microsecond output resolution: allow lo to be truncated.
		assert.GreaterOrEqual(t, e.Time, lo.Truncate(time.Microsecond), "switch before test window: %+v", e)
		assert.LessOrEqual(t, e.Time, hi, "switch after test window: %+v", e)
		assert.GreaterOrEqual(t, e.Time, last, "timestamps not increasing: %+v", e)
		last = e.Time
	}
	for _, e := range rec.wakeups {
		require.Equal(t, tid, e.PID, "foreign wakeup %+v", e)
		assert.GreaterOrEqual(t, e.Time, lo.Truncate(time.Microsecond))
		assert.LessOrEqual(t, e.Time, hi)
	}
	assert.GreaterOrEqual(t, out, 10, "switches out of %d", tid)
	assert.GreaterOrEqual(t, in, 10, "switches into %d", tid)
	// On a CPU kept busy (see sleepySpinner) every switch in is traced:
	// only the first may come before SetTIDs, and the last out after Close.
	assert.InDelta(t, out, in, 1, "switches out of and into %d", tid)
	assert.GreaterOrEqual(t, len(rec.wakeups), 10, "wakeups of %d", tid)
	t.Logf("tid %d: %d switches (%d out, %d in), %d wakeups", tid, len(rec.switches), out, in, len(rec.wakeups))
}

func TestSessionCapturesThread(t *testing.T) {
	s := openOrSkip(t)
	rec := &recorder{}
	lo := monoNow(t)
	// Start before the thread is known, like a recorder before vCPUs exist.
	require.NoError(t, s.Start(rec.handlers()))

	tidc, start, done := make(chan int), make(chan struct{}), make(chan struct{})
	go sleepySpinner(t, tidc, start, done)
	tid := <-tidc
	require.NoError(t, s.SetTIDs([]int{tid}))
	close(start)
	<-done
	require.NoError(t, s.Close())
	hi := monoNow(t)

	checkThread(t, rec, tid, lo, hi)
	assert.Zero(t, s.Stats().Malformed)
	idleOrGone(t, s.Dir())
	assert.NoError(t, s.Close(), "second Close")
}

// idleOrGone requires the instance at dir, closed, to be removed (a
// session's own) or idle in the pool: held by nobody, tracing off,
// nothing enabled or buffered.
func idleOrGone(t *testing.T, dir string) {
	t.Helper()
	if !strings.HasPrefix(filepath.Base(dir), poolPrefix+"-") {
		_, err := os.Stat(dir)
		assert.ErrorIs(t, err, os.ErrNotExist, "instance not removed")
		return
	}
	f, err := os.Open(dir)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB), "the pooled instance is let go")
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	for file, want := range map[string]string{"tracing_on": "0", "events/sched/sched_switch/enable": "0", "events/sched/sched_wakeup/enable": "0"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		assert.Equal(t, want, strings.TrimSpace(string(b)), file)
	}
	assert.Empty(t, bufferedEvents(t, dir), "events left in the idle instance")
}

// bufferedEvents are the event lines the instance at dir holds.
func bufferedEvents(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "trace"))
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// A closed session's instance is the next session's: it starts with
// nothing enabled or buffered, and two sessions at once hold two. The
// pool here is this test's own (poolPrefix), so that recordings in other
// processes do not take its instances meanwhile.
func TestInstancesArePooled(t *testing.T) {
	probe := openOrSkip(t)
	instances := filepath.Dir(probe.Dir())
	require.NoError(t, probe.Close())
	old := poolPrefix
	poolPrefix = fmt.Sprintf("reprise-test-%d-pool", os.Getpid())
	t.Cleanup(func() {
		poolPrefix = old
		dirs, _ := filepath.Glob(filepath.Join(instances, fmt.Sprintf("reprise-test-%d-pool-*", os.Getpid())))
		for _, d := range dirs {
			_ = unix.Rmdir(d)
		}
	})

	first, second := openOrSkip(t), openOrSkip(t)
	assert.NotEqual(t, first.Dir(), second.Dir(), "two sessions, two instances")
	rec := &recorder{}
	require.NoError(t, first.Start(rec.handlers()))
	tidc, start, done := make(chan int), make(chan struct{}), make(chan struct{})
	go sleepySpinner(t, tidc, start, done)
	require.NoError(t, first.SetTIDs([]int{<-tidc}))
	close(start)
	<-done
	require.NoError(t, first.Close())
	require.NotEmpty(t, rec.switches, "the first session traced something")
	idleOrGone(t, first.Dir())

	third := openOrSkip(t)
	assert.Equal(t, first.Dir(), third.Dir(), "the idle instance is taken again")
	assert.Empty(t, bufferedEvents(t, third.Dir()))
	require.NoError(t, second.Close())
	require.NoError(t, third.Close())
}

func TestSessionsDoNotInterfere(t *testing.T) {
	const n = 2
	var sessions [n]*Session
	var recs [n]recorder
	var tids [n]int
	start := make(chan struct{})
	var dones [n]chan struct{}
	lo := monoNow(t)
	for i := range n {
		sessions[i] = openOrSkip(t)
		tidc := make(chan int)
		dones[i] = make(chan struct{})
		go sleepySpinner(t, tidc, start, dones[i])
		tids[i] = <-tidc
		require.NoError(t, sessions[i].SetTIDs([]int{tids[i]}))
		require.NoError(t, sessions[i].Start(recs[i].handlers()))
	}
	assert.NotEqual(t, sessions[0].Dir(), sessions[1].Dir())
	close(start)
	for i := range n {
		<-dones[i]
	}
	for i := range n {
		require.NoError(t, sessions[i].Close())
	}
	hi := monoNow(t)
	for i := range n {
		checkThread(t, &recs[i], tids[i], lo, hi)
	}
}

func TestOpenUnavailable(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "tracing"), filepath.Join(dir, "debug", "tracing")
	_, err := openIn([]string{a, b}, Options{})
	var u *UnavailableError
	require.ErrorAs(t, err, &u)
	assert.Equal(t, "tracefs not mounted at "+a+" or "+b+" (mount -t tracefs nodev "+a+")", u.Error())
}

// filter returns the instance's filter of ev as the kernel shows it.
func filter(t *testing.T, s *Session, ev string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventDir(s.Dir(), ev), "filter"))
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func TestAllSwitches(t *testing.T) {
	s := openWithOrSkip(t, Options{AllSwitches: true})
	rec := &recorder{}
	lo := monoNow(t)
	require.NoError(t, s.Start(rec.handlers()))

	// Two threads doing the same; only the first is traced. The second's
	// switches can only be recorded if the sched_switch filter is cleared.
	start := make(chan struct{})
	tidc, done := make(chan int), make(chan struct{})
	go sleepySpinner(t, tidc, start, done)
	tid := <-tidc
	otherc, otherDone := make(chan int), make(chan struct{})
	go sleepySpinner(t, otherc, start, otherDone)
	other := <-otherc
	// The threads run on a busy CPU from here (see sleepySpinner); before,
	// switches are unfiltered but tid may have resumed on an idle CPU.
	pinned := monoNow(t)
	require.NoError(t, s.SetTIDs([]int{tid}))
	assert.Equal(t, "none", filter(t, s, "sched_switch"), "SetTIDs filtered sched_switch")
	assert.Equal(t, fmt.Sprintf("pid == %d", tid), filter(t, s, "sched_wakeup"))
	close(start)
	<-done
	<-otherDone
	require.NoError(t, s.Close())
	hi := monoNow(t)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Zero(t, s.Stats(), "losses or malformed lines")
	var out, in, otherOnly, gaps int
	onCPU := map[int]Switch{} // last switch per CPU
	for _, e := range rec.switches {
		assert.GreaterOrEqual(t, e.Time, lo.Truncate(time.Microsecond), "switch before test window: %+v", e)
		assert.LessOrEqual(t, e.Time, hi, "switch after test window: %+v", e)
		if e.PrevPID == tid && e.Time >= pinned {
			out++
		}
		if e.NextPID == tid && e.Time >= pinned {
			in++
		}
		if (e.PrevPID == other || e.NextPID == other) && e.PrevPID != tid && e.NextPID != tid {
			otherOnly++
		}
		// Only logged: some kernels do not emit every switch even with
		// nothing lost (a Firecracker guest kernel never showed CPU 1
		// leaving idle), so this measures the kernel, not the package.
		if prev, ok := onCPU[e.CPU]; ok && prev.NextPID != e.PrevPID {
			gaps++
		}
		onCPU[e.CPU] = e
	}
	assert.GreaterOrEqual(t, out, 10, "switches out of traced %d", tid)
	assert.GreaterOrEqual(t, in, 10, "switches into traced %d", tid)
	assert.InDelta(t, out, in, 1, "switches out of and into traced %d (see checkThread)", tid)
	assert.GreaterOrEqual(t, otherOnly, 10, "switches of untraced %d not involving %d", other, tid)
	for _, e := range rec.wakeups {
		require.Equal(t, tid, e.PID, "wakeups must stay filtered: %+v", e)
	}
	assert.GreaterOrEqual(t, len(rec.wakeups), 10)
	for _, e := range rec.migrates {
		require.Equal(t, tid, e.PID, "migrations must stay filtered: %+v", e)
	}
	t.Logf("%d switches on %d CPUs (%d of untraced %d), %d wakeups, %d migrations",
		len(rec.switches), len(onCPU), otherOnly, other, len(rec.wakeups), len(rec.migrates))
	if gaps > 0 {
		t.Logf("%d switches did not start from the task the previous one on their CPU switched to: this kernel does not trace every switch", gaps)
	}
}

// twoCPUs returns two CPUs this process may run on, or skips.
func twoCPUs(t *testing.T) [2]int {
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < 2; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		t.Skip("needs two CPUs to migrate between")
	}
	return [2]int{cpus[0], cpus[1]}
}

func TestMigrate(t *testing.T) {
	cpus := twoCPUs(t)
	s := openOrSkip(t)
	if !slices.Contains(s.Events(), "sched_migrate_task") {
		t.Skip("kernel has no sched_migrate_task")
	}
	rec := &recorder{}
	lo := monoNow(t)
	require.NoError(t, s.Start(rec.handlers()))

	const hops = 10
	tidc, start, errc := make(chan int), make(chan struct{}), make(chan error, 1)
	go func() {
		// Never unlocked: the thread's affinity is changed, so it must not
		// return to the runtime's pool; it exits with this goroutine.
		runtime.LockOSThread()
		tidc <- unix.Gettid()
		<-start
		for i := range hops {
			var set unix.CPUSet
			set.Set(cpus[i%2])
			// Returns once the thread runs on the new CPU.
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errc <- fmt.Errorf("move to CPU %d: %w", cpus[i%2], err)
				return
			}
		}
		errc <- nil
	}()
	tid := <-tidc
	require.NoError(t, s.SetTIDs([]int{tid}))
	close(start)
	require.NoError(t, <-errc)
	require.NoError(t, s.Close())
	hi := monoNow(t)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	var toCPU [2]int
	for i, ev := range rec.all {
		m, ok := ev.(Migrate)
		if !ok {
			continue
		}
		require.Equal(t, tid, m.PID, "foreign migration %+v", m)
		assert.NotEqual(t, m.OrigCPU, m.DestCPU, "%+v", m)
		assert.GreaterOrEqual(t, m.Time, lo.Truncate(time.Microsecond), "migration before test window: %+v", m)
		assert.LessOrEqual(t, m.Time, hi, "migration after test window: %+v", m)
		for j, c := range cpus {
			if m.DestCPU == c {
				toCPU[j]++
			}
		}
		// The thread next leaves the CPU it was moved to. (Checked on
		// switches out: some kernels do not trace a CPU leaving idle, so
		// the switch into the thread may be missing.)
		for _, ev := range rec.all[i+1:] {
			if sw, ok := ev.(Switch); ok && sw.PrevPID == tid {
				assert.Equal(t, m.DestCPU, sw.CPU, "after %+v, %d left CPU %d", m, tid, sw.CPU)
				break
			}
		}
	}
	// The first move is a no-op if the thread already ran there.
	assert.GreaterOrEqual(t, toCPU[0], hops/2-1, "migrations to CPU %d", cpus[0])
	assert.GreaterOrEqual(t, toCPU[1], hops/2-1, "migrations to CPU %d", cpus[1])
	t.Logf("%d migrations of %d (%d to CPU %d, %d to CPU %d)", len(rec.migrates), tid, toCPU[0], cpus[0], toCPU[1], cpus[1])
}

func TestLostEventsReported(t *testing.T) {
	s := openWithOrSkip(t, Options{AllSwitches: true})
	// A tiny buffer and a handler that stalls make the kernel drop events.
	require.NoError(t, writeFile(filepath.Join(s.Dir(), "buffer_size_kb"), "8"))
	rec := &recorder{}
	h := rec.handlers()
	stalled := make(chan struct{})
	var once sync.Once
	h.Switch = func(e Switch) {
		once.Do(func() {
			close(stalled)
			time.Sleep(300 * time.Millisecond)
		})
		rec.add(e)
	}
	lo := monoNow(t)
	require.NoError(t, s.Start(h))
	<-stalled
	// Thousands of switches while the reader is stalled.
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		time.Sleep(20 * time.Microsecond)
	}
	require.NoError(t, s.Close())
	hi := monoNow(t)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	st := s.Stats()
	require.NotEmpty(t, rec.losts, "no loss reported; stats %+v", st)
	var sum int64
	for i, ev := range rec.all {
		l, ok := ev.(Lost)
		if !ok {
			continue
		}
		sum += int64(l.Count)
		assert.GreaterOrEqual(t, l.Time, lo.Truncate(time.Microsecond), "%+v", l)
		assert.LessOrEqual(t, l.Time, hi, "%+v", l)
		// Delivered right before the first event read after the loss.
		for _, next := range rec.all[i+1:] {
			if sw, ok := next.(Switch); ok && sw.CPU == l.CPU {
				assert.Equal(t, sw.Time, l.Time, "%+v is not followed by its CPU's next event", l)
				break
			}
		}
	}
	assert.Equal(t, st.Lost, sum, "Stats.Lost and delivered counts differ")
	assert.Positive(t, st.Lost+st.LostUncounted)
	t.Logf("%d loss reports, %d events lost (stats %+v), %d switches read", len(rec.losts), sum, st, len(rec.switches))
}

// TestAllSwitchesReaderIsQuiet guards against the reader waking itself:
// each of its wakeups is a traced switch, and a reader that waits for
// trace_pipe in the kernel (blocking read or the runtime's epoll) is woken
// by them, ~190k switches/s on an idle host (see readInterval).
func TestAllSwitchesReaderIsQuiet(t *testing.T) {
	s := openWithOrSkip(t, Options{AllSwitches: true})
	rec := &recorder{}
	require.NoError(t, s.Start(rec.handlers()))
	const window = 300 * time.Millisecond
	time.Sleep(window)
	require.NoError(t, s.Close())

	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	self := map[int]bool{}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		require.NoError(t, err)
		self[tid] = true
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	mine := 0
	for _, e := range rec.switches {
		if self[e.PrevPID] || self[e.NextPID] {
			mine++
		}
	}
	// Polling costs a few switches per readInterval (~70 in the window);
	// the feedback loop costs tens of thousands.
	assert.Less(t, mine, 3000, "this process switched %d times in %v of idle tracing", mine, window)
	t.Logf("%d switches in %v, %d of this process", len(rec.switches), window, mine)
}

// A recorder killed with SIGKILL leaves its trace instance behind, which
// holds kernel memory; the next session removes the instances of
// processes that are gone, and one named after this process's pid (left
// by a dead process that had it) does not stop it from opening.
func TestStaleInstancesAreRemoved(t *testing.T) {
	defer func(n int) { maxPooled = n }(maxPooled)
	maxPooled = 0 // sessions of their own, named after their process
	probe := openOrSkip(t)
	instances := filepath.Dir(probe.Dir())
	require.NoError(t, probe.Close())

	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	stale := filepath.Join(instances, fmt.Sprintf("reprise-%d-1", dead.Process.Pid))
	require.NoError(t, os.Mkdir(stale, 0o750))
	mine := filepath.Join(instances, fmt.Sprintf("reprise-%d-%d", os.Getpid(), instanceSeq.Load()+1))
	require.NoError(t, os.Mkdir(mine, 0o750))

	s := openOrSkip(t)
	defer s.Close()
	_, err := os.Stat(stale)
	require.ErrorIs(t, err, os.ErrNotExist, "the dead process's instance is removed")
	require.Equal(t, mine, s.Dir(), "this pid's leftover is taken over")
}
