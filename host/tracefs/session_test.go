package tracefs

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openOrSkip opens a session, skipping when tracefs is unavailable unless
// CI=true, where a missing tracefs means a broken CI host.
func openOrSkip(t *testing.T) *Session {
	t.Helper()
	s, err := Open()
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
}

func (r *recorder) onSwitch(e Switch) { r.mu.Lock(); r.switches = append(r.switches, e); r.mu.Unlock() }
func (r *recorder) onWakeup(e Wakeup) { r.mu.Lock(); r.wakeups = append(r.wakeups, e); r.mu.Unlock() }

// sleepySpinner runs on a locked OS thread, sends its TID, waits for go,
// then sleeps and spins so the scheduler switches it out and in.
func sleepySpinner(tidc chan<- int, start <-chan struct{}, done chan<- struct{}) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tidc <- unix.Gettid()
	<-start
	for range 20 {
		time.Sleep(time.Millisecond)
		for end := time.Now().Add(200 * time.Microsecond); time.Now().Before(end); {
		}
	}
	close(done)
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
	assert.GreaterOrEqual(t, len(rec.wakeups), 10, "wakeups of %d", tid)
	t.Logf("tid %d: %d switches (%d out, %d in), %d wakeups", tid, len(rec.switches), out, in, len(rec.wakeups))
}

func TestSessionCapturesThread(t *testing.T) {
	s := openOrSkip(t)
	rec := &recorder{}
	lo := monoNow(t)
	// Start before the thread is known, like a recorder before vCPUs exist.
	require.NoError(t, s.Start(rec.onSwitch, rec.onWakeup))

	tidc, start, done := make(chan int), make(chan struct{}), make(chan struct{})
	go sleepySpinner(tidc, start, done)
	tid := <-tidc
	require.NoError(t, s.SetTIDs([]int{tid}))
	close(start)
	<-done
	require.NoError(t, s.Close())
	hi := monoNow(t)

	checkThread(t, rec, tid, lo, hi)
	assert.Zero(t, s.Stats().Malformed)
	_, err := os.Stat(s.Dir())
	assert.ErrorIs(t, err, os.ErrNotExist, "instance not removed")
	assert.NoError(t, s.Close(), "second Close")
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
		go sleepySpinner(tidc, start, dones[i])
		tids[i] = <-tidc
		require.NoError(t, sessions[i].SetTIDs([]int{tids[i]}))
		require.NoError(t, sessions[i].Start(recs[i].onSwitch, recs[i].onWakeup))
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
	_, err := openIn([]string{a, b})
	var u *UnavailableError
	require.ErrorAs(t, err, &u)
	assert.Equal(t, "tracefs not mounted at "+a+" or "+b+" (mount -t tracefs nodev "+a+")", u.Error())
}
