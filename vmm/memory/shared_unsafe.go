package memory

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Word32 is the 32-bit word at gpa as an atomic: a word the guest and a
// host thread exchange while the vCPU runs (a Linux program's call page),
// which plain reads and writes of RAM's bytes cannot do — the guest's
// locked XCHG and the host's compare-and-swap must be one operation each.
// gpa must be 4-byte aligned.
func (r *RAM) Word32(gpa uint64) (*atomic.Uint32, error) {
	if gpa%4 != 0 {
		return nil, fmt.Errorf("memory: word at %#x is not 4-byte aligned", gpa)
	}
	s, err := r.Slice(gpa, 4)
	if err != nil {
		return nil, err
	}
	return (*atomic.Uint32)(unsafe.Pointer(&s[0])), nil
}
