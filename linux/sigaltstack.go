package linux

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// altStack is a thread's alternate signal stack (sigaltstack): where the
// handlers installed with SA_ONSTACK run, as Linux keeps it in
// sas_ss_sp, sas_ss_size and sas_ss_flags. The zero value is none.
type altStack struct {
	sp, size uint64
	flags    uint32 // as the program set them (SS_AUTODISARM included); 0 with size 0: never set
}

// stack_t's ss_flags.
const (
	ssOnstack    = 1
	ssDisable    = 2
	ssAutodisarm = 1 << 31
	stackTBytes  = 24 // stack_t: ss_sp, ss_flags (and padding), ss_size
	// minSigStack is MINSIGSTKSZ: a smaller stack is refused (ENOMEM).
	minSigStack = 2048
)

// holds reports whether sp is inside the stack (__on_sig_stack: it grows
// down from sp+size, and its top is in it).
func (s altStack) holds(sp uint64) bool { return sp > s.sp && sp-s.sp <= s.size }

// on reports whether a thread at sp runs on the stack (on_sig_stack): a
// stack that disarms itself never counts, so a handler can always be
// entered afresh.
func (s altStack) on(sp uint64) bool { return s.flags&ssAutodisarm == 0 && s.holds(sp) }

// state is sas_ss_flags: SS_DISABLE, SS_ONSTACK at sp, or 0.
func (s altStack) state(sp uint64) uint32 {
	switch {
	case s.size == 0:
		return ssDisable
	case s.on(sp):
		return ssOnstack
	}
	return 0
}

// raw is the flags as set, SS_DISABLE for a stack never set.
func (s altStack) raw() uint32 {
	if s.size == 0 && s.flags == 0 {
		return ssDisable
	}
	return s.flags
}

// put writes the stack as a signal frame's uc_stack holds it: what
// rt_sigreturn sets again.
func (s altStack) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b, s.sp)
	le.PutUint64(b[8:], uint64(s.raw()))
	le.PutUint64(b[16:], s.size)
}

// report writes the stack as sigaltstack's old_ss gives it, for a thread
// at sp.
func (s altStack) report(b []byte, sp uint64) {
	s.put(b)
	binary.LittleEndian.PutUint64(b[8:], uint64(s.state(sp)|s.raw()&ssAutodisarm))
}

// altStackOf reads a stack_t.
func altStackOf(b []byte) altStack {
	le := binary.LittleEndian
	return altStack{sp: le.Uint64(b), flags: le.Uint32(b[8:]), size: le.Uint64(b[16:])}
}

// set makes next the stack of a thread at sp, as do_sigaltstack does:
// not while running on the current one (EPERM), with a known mode
// (EINVAL), at least MINSIGSTKSZ bytes (ENOMEM).
func (s *altStack) set(next altStack, sp uint64) error {
	if s.on(sp) {
		return unix.EPERM
	}
	switch next.flags &^ ssAutodisarm {
	case 0, ssOnstack:
		if next.size < minSigStack {
			return unix.ENOMEM
		}
	case ssDisable:
		next.sp, next.size = 0, 0
	default:
		return unix.EINVAL
	}
	*s = next
	return nil
}
