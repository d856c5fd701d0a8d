package devices

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/reprise-vm/reprise/abi"
)

// MinTimerPeriod bounds how fast a guest may program the timer, so a
// hostile guest cannot turn the VMM into a busy host-timer loop.
const MinTimerPeriod = time.Second / abi.MaxTimerHz

// MaxTimerPeriod is the longest period the guest's 32-bit microsecond
// register can hold; a longer one would read back truncated.
const MaxTimerPeriod = math.MaxUint32 * time.Microsecond

// Timer is a periodic timer the guest programs with a period in
// microseconds (0 stops it). Each expiry raises its interrupt line; expiries
// that fall due while one is still pending coalesce, as on real hardware.
// Missed periods are skipped rather than replayed in a burst.
//
// Host time drives it, so it is an input source: in replay it is built
// detached (no raise function) and keeps its programmed period without ever
// firing, while the tape supplies the ticks.
type Timer struct {
	raise  func()
	jitter time.Duration

	mu     sync.Mutex
	period time.Duration // guarded by mu; 0 = stopped
	next   time.Time     // guarded by mu
	t      *time.Timer   // guarded by mu
	gen    uint64        // guarded by mu; bumped by every SetPeriod
}

// NewTimer returns a stopped timer that calls raise at each expiry (nil:
// detached, never fires). A non-zero jitter moves each expiry by a random
// amount in [-jitter, +jitter], to record under irregular timing on purpose.
func NewTimer(raise func(), jitter time.Duration) *Timer {
	return &Timer{raise: raise, jitter: jitter}
}

// Period is the current period (0 = stopped).
func (t *Timer) Period() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.period
}

// SetPeriod (re)arms the timer; d <= 0 stops it. A period outside
// [MinTimerPeriod, MaxTimerPeriod] is clamped to it.
func (t *Timer) SetPeriod(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
	// An expiry of the old timer may already be running; the generation
	// tells it not to touch the new one.
	t.gen++
	if d <= 0 {
		t.period = 0
		return
	}
	t.period = min(max(d, MinTimerPeriod), MaxTimerPeriod)
	if t.raise == nil {
		return
	}
	t.next = time.Now().Add(t.period)
	gen := t.gen
	t.t = time.AfterFunc(t.period, func() { t.fire(gen) })
}

// Stop disarms the timer.
func (t *Timer) Stop() { t.SetPeriod(0) }

func (t *Timer) fire(gen uint64) {
	t.mu.Lock()
	if gen != t.gen || t.period == 0 || t.t == nil {
		t.mu.Unlock()
		return
	}
	now := time.Now()
	t.next = t.next.Add(t.period)
	if t.jitter > 0 {
		t.next = t.next.Add(time.Duration(rand.Int64N(int64(2*t.jitter+1))) - t.jitter)
	}
	if t.next.Before(now) {
		t.next = now.Add(t.period)
	}
	t.t.Reset(t.next.Sub(now))
	t.mu.Unlock()
	t.raise()
}

// PortRead returns the period in microseconds.
func (t *Timer) PortRead(port uint16, data []byte) {
	putLE(data, uint32(t.Period()/time.Microsecond))
}

// PortWrite sets the period in microseconds.
func (t *Timer) PortWrite(port uint16, data []byte) error {
	t.SetPeriod(time.Duration(le32(data)) * time.Microsecond)
	return nil
}
