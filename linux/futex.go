package linux

import (
	"encoding/binary"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// Futex operations (the low bits of the op; FUTEX_PRIVATE_FLAG and
// FUTEX_CLOCK_REALTIME are above them). A futex is keyed as Linux keys it
// (futexKey): in private memory, or with FUTEX_PRIVATE_FLAG, by its
// address in its address space — every process of a program uses the
// same addresses, so the address alone would let one process's wake
// reach another's waiter; in a shared mapping, by its frame, which the
// processes mapping it share wherever they map it.
const (
	futexWait          = 0
	futexWake          = 1
	futexRequeue       = 3
	futexCmpRequeue    = 4
	futexWaitBitset    = 9
	futexWakeBitset    = 10
	futexCmdMask       = 0x7f
	futexPrivateFlag   = 128
	futexClockRealtime = 256
)

func (t *thread) loadUint32(addr uint64) (uint32, error) {
	var b [4]byte
	if err := t.proc.as.Read(addr, b[:]); err != nil {
		return 0, memErr(err)
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// futexWaitOn blocks the current thread on the futex at addr (its key
// private if asked) if it still holds val, until a wake matching mask or
// the timeout at ts (relative, or absolute on the chosen clock).
func (t *thread) futexWaitOn(addr uint64, private bool, val, mask uint32, ts uint64, absolute, realtime bool) (uint64, error) {
	cur, err := t.loadUint32(addr)
	if err != nil {
		return 0, err
	}
	if cur != val {
		return 0, unix.EAGAIN
	}
	var deadline time.Duration
	if ts != 0 {
		d, err := t.readTimespec(ts)
		if err != nil {
			return 0, err
		}
		clk := uint64(unix.CLOCK_MONOTONIC)
		if realtime {
			clk = unix.CLOCK_REALTIME
		}
		now, err := t.k.now(clk)
		if err != nil {
			return 0, err
		}
		if absolute {
			d -= now
		}
		if d <= 0 {
			return 0, unix.ETIMEDOUT
		}
		mono, err := t.k.now(unix.CLOCK_MONOTONIC)
		if err != nil {
			return 0, err
		}
		deadline = mono + d
	}
	t.futex, t.futexMask = keyOf(t.proc.as, addr, private), mask
	t.k.block(deadline, unix.ETIMEDOUT)
	return 0, nil // what a wake returns; a timeout replaces it
}

// futexWake wakes up to n threads waiting on the futex key whose mask
// meets mask, in the order they started waiting, and returns how many it
// woke.
func (k *Kernel) futexWake(key futexKey, n int, mask uint32) uint64 {
	woken := uint64(0)
	for _, t := range k.waiters(key) {
		if int(woken) >= n {
			break
		}
		if t.futexMask&mask != 0 {
			k.wake(t, 0)
			woken++
		}
	}
	if woken > 0 {
		k.resched = true
	}
	return woken
}

// waiters are the threads blocked on the futex key, oldest wait first.
func (k *Kernel) waiters(key futexKey) []*thread {
	var out []*thread
	for _, t := range k.threads {
		if t.state == blocked && t.futex == key {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].waitSeq < out[j].waitSeq })
	return out
}
