// Package memory owns guest RAM: one anonymous mapping, hugepage-backed and
// prefaulted, with bounds-checked access. Every address a guest hands the
// VMM goes through these checks, so a hostile guest cannot make the VMM
// touch host memory outside its RAM.
package memory

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
)

// hugePage is the THP size on x86-64; RAM is a multiple of it.
const hugePage = 2 << 20

// RAM is guest-physical memory starting at address 0.
type RAM struct {
	b []byte
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

// New maps size bytes of RAM (a multiple of 2 MiB), asks for transparent
// hugepages and touches every page now: a first touch of a 4 KiB page costs
// ~35 µs on the test machines, which would otherwise land inside the guest's
// run and add noise to every timing.
//
// Because every page is touched, a size the host cannot give would drive it
// out of memory: New refuses, before mapping anything, a size above the
// guest limit (abi.MaxGuestBytes) or above what the host has available.
func New(size uint64) (*RAM, error) {
	if size == 0 || size%hugePage != 0 {
		return nil, fmt.Errorf("memory: size %#x is not a positive multiple of 2 MiB", size)
	}
	if size > abi.MaxGuestBytes {
		return nil, fmt.Errorf("memory: %w", abi.CheckRAMSize(size))
	}
	if avail, ok := hostAvailable(); ok && size+hostReserve > avail {
		return nil, fmt.Errorf("memory: guest RAM of %s is more than this host can give: %s available (MemAvailable), of which %s stays for the host; guest RAM is touched up front, so it would push the host out of memory",
			abi.FormatBytes(size), abi.FormatBytes(avail&^(1<<20-1)), abi.FormatBytes(hostReserve))
	}
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("memory: mmap %d MiB of guest RAM: %w", size>>20, err)
	}
	// Best effort: hosts without THP still work, just with 4 KiB pages.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	for off := 0; off < len(b); off += 4096 {
		b[off] = 0
	}
	return &RAM{b: b}, nil
}

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

// Bytes is the whole of RAM, for mapping it into the VM and hashing it.
func (r *RAM) Bytes() []byte { return r.b }

// Slice returns the n bytes at gpa, or a *RangeError.
func (r *RAM) Slice(gpa, n uint64) ([]byte, error) {
	size := uint64(len(r.b))
	if gpa > size || n > size-gpa {
		return nil, &RangeError{Addr: gpa, Len: n, Size: size}
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
