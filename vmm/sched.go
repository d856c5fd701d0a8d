package vmm

import (
	"runtime"
	"time"
)

// schedYield keeps the Go runtime from taking the vCPU thread's P away
// during its KVM_RUNs, where that costs more than it saves. The vCPU
// goroutine never blocks, so its P's scheduling tick never moves; 10ms
// after the last move (forcePreemptNS) sysmon deems it a runaway and
// retakes its P from the KVM_RUNs it finds in progress. Such a KVM_RUN ends
// in the slow exitsyscall (get a P back, wake sysmon from the deep sleep
// the all-idle Ps sent it to), and sysmon, having retaken, polls at its
// shortest interval, preempting the vCPU thread on its CPU. A sample every
// 100K basic blocks (KVM_RUNs of ~150µs) drew ~370 retakes, ~1400 wakeups
// and ~1000 preemptions of the vCPU thread per replay of the bench's
// profile recording; yielding every 5ms, no retakes, ~500 and ~400.
//
// A yield is no cheap tick either: the locked thread hands its P to
// another thread and waits for it to hand the P back, tens of µs on an
// idle host, hundreds or more under load. A run that stops rarely (a
// KVM_RUN a millisecond: a replay without samples or probes) loses more to that than to
// its few retakes, so only a vCPU that stopped often since the last yield
// yields.
type schedYield struct {
	last  time.Duration // on the clock stopped is given
	stops int           // since last
}

const (
	// yieldEvery is well under the runtime's 10ms forcePreemptNS.
	yieldEvery = 5 * time.Millisecond
	// yieldMinStops is how many stops in yieldEvery are worth a yield.
	yieldMinStops = 8
)

// stopped counts a stop of the vCPU at now (read by clock) and yields if
// it is time to; it returns the time after, read again if it yielded.
func (y *schedYield) stopped(now time.Duration, clock func() time.Duration) time.Duration {
	y.stops++
	if now-y.last < yieldEvery {
		return now
	}
	if y.stops >= yieldMinStops {
		runtime.Gosched()
		now = clock()
	}
	y.last, y.stops = now, 0
	return now
}
