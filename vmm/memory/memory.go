// Package memory owns guest RAM: one anonymous mapping, hugepage-backed,
// with bounds-checked access. Every address a guest hands the VMM goes
// through these checks, so a hostile guest cannot make the VMM touch host
// memory outside its RAM.
//
// RAM is populated from its start up to a mark that only rises (Reach):
// below it, pages are faulted in, all at once per 2 MiB; above it, RAM has
// never been touched and is zero. So a program that uses 5 MiB of a
// gigabyte costs the host 6 MiB, and whole-RAM work — hashing it,
// checkpointing it — reads only what lies below the mark.
package memory

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
)

// hugePage is the THP size on x86-64; RAM is a multiple of it.
const hugePage = 2 << 20

// RAM is guest-physical memory starting at address 0.
type RAM struct {
	b []byte
	// reached is where populated RAM ends, a multiple of 2 MiB: from here
	// up nothing has been written, by the VMM or the guest. The VMM's own
	// accesses (Slice) raise it; whoever lets the guest write RAM the
	// VMM does not (a kernel's page tables, a kit kernel's whole RAM)
	// raises it first with Reach.
	reached atomic.Uint64
	reach   sync.Mutex // held while populating: one populates, others wait
	// populate faults pages in: MADV_POPULATE_WRITE, or a touch of each
	// page where the host kernel lacks it (before Linux 5.14).
	populate func([]byte)
}

// RangeError is an out-of-bounds guest-physical access.
type RangeError struct {
	Addr, Len uint64
	Size      uint64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("memory: guest range [%#x, %#x+%#x) outside RAM of %#x bytes", e.Addr, e.Addr, e.Len, e.Size)
}

// hostReserve is host memory New leaves to everything else: the VMM's own
// heap, the page cache, the rest of the host.
const hostReserve = 512 << 20

// hostAvailable reports the host memory a new mapping can take without
// pushing the host into reclaim (MemAvailable), or false if unknown. A
// variable so a test can play a smaller host.
var hostAvailable = memAvailable

// New maps size bytes of RAM (a multiple of 2 MiB) and asks for
// transparent hugepages; it populates none of it (Reach does).
//
// A guest may come to touch all of it, which a size the host cannot give
// would drive out of memory: New refuses a size above the guest limit
// (abi.MaxGuestBytes) or above what the host has available.
func New(size uint64) (*RAM, error) {
	if size == 0 || size%hugePage != 0 {
		return nil, fmt.Errorf("memory: size %#x is not a positive multiple of 2 MiB", size)
	}
	if size > abi.MaxGuestBytes {
		return nil, fmt.Errorf("memory: %w", abi.CheckRAMSize(size))
	}
	if avail, ok := hostAvailable(); ok && size+hostReserve > avail {
		return nil, fmt.Errorf("memory: guest RAM of %s is more than this host can give: %s available (MemAvailable), of which %s stays for the host; a guest may touch all its RAM, so it would push the host out of memory",
			abi.FormatBytes(size), abi.FormatBytes(avail&^(1<<20-1)), abi.FormatBytes(hostReserve))
	}
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("memory: mmap %d MiB of guest RAM: %w", size>>20, err)
	}
	// Best effort: hosts without THP still work, just with 4 KiB pages.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return &RAM{b: b, populate: populateWrite}, nil
}

// populateWrite faults b's pages in writable from the host kernel, in one
// call: a first touch of each page from here costs a fault each (~15 µs
// per 4 KiB page on the PVM test machines, where MADV_POPULATE_WRITE
// takes 256 MiB in 13–50 ms), and a first touch from the guest ~35 µs.
func populateWrite(b []byte) {
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil {
		touch(b)
	}
}

// touch writes a zero to each 4 KiB page of b (zero already: unchanged).
func touch(b []byte) {
	for off := 0; off < len(b); off += 4096 {
		b[off] = 0
	}
}

// Reach populates RAM up to end (rounded up to 2 MiB; at most RAM's
// size): call it before the guest may write RAM the VMM has not, so that
// RAM above Reached stays zero.
func (r *RAM) Reach(end uint64) {
	end = min((end+hugePage-1)&^(hugePage-1), uint64(len(r.b)))
	if end <= r.reached.Load() {
		return
	}
	r.reach.Lock()
	defer r.reach.Unlock()
	if from := r.reached.Load(); end > from {
		r.populate(r.b[from:end])
		r.reached.Store(end)
	}
}

// Reached is where populated RAM ends: every byte from there up is zero.
func (r *RAM) Reached() uint64 { return r.reached.Load() }

// memAvailable reads MemAvailable from /proc/meminfo.
func memAvailable() (uint64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := bytes.Fields(s.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemAvailable:" {
			kb, err := strconv.ParseUint(string(f[1]), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// Close unmaps RAM.
func (r *RAM) Close() error { return unix.Munmap(r.b) }

// Size is the RAM size in bytes.
func (r *RAM) Size() uint64 { return uint64(len(r.b)) }

// Mapping is the whole of RAM, for mapping it into the VM: the guest's
// writes are the only ones that may land on it directly (Reach says
// where they may).
func (r *RAM) Mapping() []byte { return r.b }

// Populated is RAM up to Reached, for whole-RAM work (hashing, scanning,
// capturing): the rest is zero.
func (r *RAM) Populated() []byte { return r.b[:r.reached.Load()] }

// Slice returns the n bytes at gpa, or a *RangeError; RAM is populated up
// to their end, since the caller may write them.
func (r *RAM) Slice(gpa, n uint64) ([]byte, error) {
	size := uint64(len(r.b))
	if gpa > size || n > size-gpa {
		return nil, &RangeError{Addr: gpa, Len: n, Size: size}
	}
	if n > 0 && gpa+n > r.reached.Load() {
		r.Reach(gpa + n)
	}
	return r.b[gpa : gpa+n : gpa+n], nil
}

// Read copies len(dst) bytes from gpa.
func (r *RAM) Read(gpa uint64, dst []byte) error {
	s, err := r.Slice(gpa, uint64(len(dst)))
	if err != nil {
		return err
	}
	copy(dst, s)
	return nil
}

// Write copies src to gpa.
func (r *RAM) Write(gpa uint64, src []byte) error {
	s, err := r.Slice(gpa, uint64(len(src)))
	if err != nil {
		return err
	}
	copy(s, src)
	return nil
}

// Uint64 reads a little-endian word at gpa.
func (r *RAM) Uint64(gpa uint64) (uint64, error) {
	s, err := r.Slice(gpa, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(s), nil
}

// PutUint64 writes a little-endian word at gpa.
func (r *RAM) PutUint64(gpa, v uint64) error {
	s, err := r.Slice(gpa, 8)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(s, v)
	return nil
}
