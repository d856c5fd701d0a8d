package linux

import (
	"fmt"

	"github.com/reprise-vm/reprise/vmm/memory"
)

// frames hands out the 4 KiB frames of guest RAM above the system area,
// zeroed; the last freed is reused first. Which frame backs which page is
// decided by the program's system calls alone, so a replay gets the same
// frames as its recording.
type frames struct {
	ram  *memory.RAM
	next uint64   // frames from here up have never been used
	free []uint64 // freed frames, a stack
	// shared counts the holders of frames that more than one address
	// space maps (copy-on-write after a fork); a frame absent has one.
	shared map[uint64]int
}

func newFrames(ram *memory.RAM) *frames {
	return &frames{ram: ram, next: firstFree, shared: map[uint64]int{}}
}

// share adds a holder to frame pa.
func (f *frames) share(pa uint64) {
	if n, ok := f.shared[pa]; ok {
		f.shared[pa] = n + 1
		return
	}
	f.shared[pa] = 2
}

// holders is how many address spaces map frame pa.
func (f *frames) holders(pa uint64) int {
	if n, ok := f.shared[pa]; ok {
		return n
	}
	return 1
}

// drop takes a holder from frame pa, freeing it with the last.
func (f *frames) drop(pa uint64) {
	switch n := f.holders(pa); {
	case n > 2:
		f.shared[pa] = n - 1
	case n == 2:
		delete(f.shared, pa)
	default:
		f.release(pa)
	}
}

// errNoMemory is what a system call that needs frames returns when guest
// RAM is exhausted: ENOMEM.
var errNoMemory = fmt.Errorf("guest RAM exhausted")

func (f *frames) alloc() (uint64, error) {
	if n := len(f.free); n > 0 {
		pa := f.free[n-1]
		f.free = f.free[:n-1]
		b, err := f.ram.Slice(pa, pageSize)
		if err != nil {
			return 0, err
		}
		clear(b)
		return pa, nil
	}
	if f.next+pageSize > f.ram.Size() {
		return 0, errNoMemory
	}
	pa := f.next
	f.next += pageSize
	return pa, nil
}

// allocTable is a frame for a page table: one never used before, by
// anything (addressSpace says why).
func (f *frames) allocTable() (uint64, error) {
	if f.next+pageSize > f.ram.Size() {
		return 0, errNoMemory
	}
	pa := f.next
	f.next += pageSize
	return pa, nil
}

func (f *frames) release(pa uint64) { f.free = append(f.free, pa) }

// available is how many frames can still be handed out.
func (f *frames) available() uint64 {
	return (f.ram.Size()-f.next)/pageSize + uint64(len(f.free))
}

// inUse is how many bytes of frames are handed out.
func (f *frames) inUse() uint64 { return f.next - firstFree - uint64(len(f.free))*pageSize }
