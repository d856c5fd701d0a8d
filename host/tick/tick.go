// Package tick runs a function periodically on a goroutine of its own
// until stopped: the recorder's chunk flushes, the replay's progress line,
// timed sampling and the benchmarks' heap sampling all have that shape.
package tick

import (
	"sync"
	"time"
)

// Every calls fn every interval until the returned stop is called. stop
// waits for a call in progress to return, so after it fn runs no more.
func Every(interval time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
