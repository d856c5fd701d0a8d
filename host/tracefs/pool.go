package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A trace instance is dear to make and dearer to remove: on the test
// machines mkdir takes 4–6 ms, sizing its buffers 7–25 ms, and rmdir
// 40–56 ms (the kernel waits out RCU grace periods), most of a short
// recording's start and end. So a session takes an idle instance of the
// pool, reprise-pool-1 to reprise-pool-maxPooled, making it if need be,
// holds it with an flock on its directory while it lives (a process that
// dies, killed or not, lets go of it with its descriptors), and leaves it
// idle when it closes: tracing off, its events disabled, its buffers
// cleared. The pool holds at most maxPooled instances of bufferKB a CPU;
// `rmdir /sys/kernel/tracing/instances/reprise-pool-*` frees them. When
// every instance of the pool is held, a session makes one of its own,
// reprise-PID-N, and removes it when it closes.

// maxPooled bounds the idle instances kept between sessions, named
// poolPrefix-N (variables for the tests, which need a session's own
// instance, and a pool no other process shares).
var (
	maxPooled  = 4
	poolPrefix = "reprise-pool"
)

// claimPooled takes an instance of the pool nobody holds, in instances:
// its directory and the open directory whose flock holds it. dir is ""
// when every instance is held.
func claimPooled(instances string) (dir string, lock *os.File, err error) {
	for n := 1; n <= maxPooled; n++ {
		dir := filepath.Join(instances, fmt.Sprintf("%s-%d", poolPrefix, n))
		if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", nil, classify(dir, err)
		}
		f, err := os.Open(dir)
		if err != nil {
			continue // removed since by someone else
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			continue // another session's
		}
		if _, err := os.Stat(dir); err != nil {
			f.Close() // removed between the open and the lock
			continue
		}
		return dir, f, nil
	}
	return "", nil, nil
}

// reset makes a pooled instance as a new one is: nothing enabled,
// nothing buffered — what an earlier session left would be read as this
// one's. A session that closed drained its buffers through trace_pipe;
// only one that died holding events leaves some, and clearing costs
// ~22 ms, so it is done only then.
func reset(dir string) error {
	if err := writeFile(filepath.Join(dir, "events", "enable"), "0"); err != nil {
		return fmt.Errorf("tracefs: disable the events of %s: %w", dir, err)
	}
	if !holdsEvents(dir) {
		return nil
	}
	if err := writeFile(filepath.Join(dir, "trace"), ""); err != nil {
		return fmt.Errorf("tracefs: clear %s: %w", dir, err)
	}
	return nil
}

// holdsEvents reports whether any CPU's buffer of the instance at dir
// holds an event, or it cannot tell.
func holdsEvents(dir string) bool {
	stats, err := filepath.Glob(filepath.Join(dir, "per_cpu", "cpu*", "stats"))
	if err != nil || len(stats) == 0 {
		return true
	}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		var n int
		if _, serr := fmt.Sscanf(string(b), "entries: %d", &n); err != nil || serr != nil || n != 0 {
			return true
		}
	}
	return false
}

// sized reports whether the instance at dir has buffers of at least kb a
// CPU already (the kernel rounds a size up to whole pages: 2048 reads
// back 2051).
func sized(dir string, kb int) bool {
	b, err := os.ReadFile(filepath.Join(dir, "buffer_size_kb"))
	var got int
	_, serr := fmt.Sscan(string(b), &got)
	return err == nil && serr == nil && got >= kb
}

// clocked reports whether the instance at dir stamps its events with
// clock already: its trace_clock lists the clocks, the one in use in
// brackets. Setting it costs ~22 ms, a wait for the buffers to empty.
func clocked(dir, clock string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "trace_clock"))
	return err == nil && strings.Contains(" "+string(b)+" ", " ["+clock+"] ")
}
