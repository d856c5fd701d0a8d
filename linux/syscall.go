package linux

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
)

// args are a system call's six arguments (rdi, rsi, rdx, r10, r8, r9).
type args [6]uint64

// errno is a system call's failure, returned to the program as -errno.
type errno = unix.Errno

func (k *Kernel) syscall(r *kvm.Regs) (uint64, error) {
	nr := r.RAX
	sc, ok := lookup(nr)
	supported := ok && sc.fn != nil
	k.counts.call(&k.stats, nr, supported)
	if !supported {
		return negErrno(unix.ENOSYS), nil
	}
	// The registers past the call's arguments hold whatever the program
	// left there: a handler must never see them.
	a := args{r.RDI, r.RSI, r.RDX, r.R10, r.R8, r.R9}
	clear(a[sc.nargs:])
	t := k.current()
	t.useCreds()
	k.fs.Forget(k.pinned) // between calls: none holds a node it found
	ret, err := sc.fn(t, a)
	if k.trace != nil {
		fmt.Fprintf(k.trace, "[%d] %s(%s) = %#x %v\n", t.tid, sc.name, a.format(sc.nargs), ret, err)
	}
	if errors.Is(err, errRestart) {
		k.restart = true
		return nr, nil
	}
	var e errno
	if errors.As(err, &e) {
		return negErrno(e), nil
	}
	if errors.Is(err, mm.ErrNoMemory) {
		// Guest RAM ran out under a call that needed a frame (a page
		// it writes that a fork shares, a table): the program's
		// failure, not the run's.
		return negErrno(unix.ENOMEM), nil
	}
	return ret, err
}

// format lists the first n arguments, as strace shows a call's.
func (a args) format(n int) string {
	s := make([]string, n)
	for i, v := range a[:n] {
		s[i] = fmt.Sprintf("%#x", v)
	}
	return strings.Join(s, ", ")
}

func negErrno(e errno) uint64 { return uint64(-int64(e)) }

// memErr turns an address-space failure into the errno Linux gives.
func memErr(err error) error {
	switch {
	case errors.Is(err, mm.ErrFault):
		return unix.EFAULT
	case errors.Is(err, mm.ErrNoMemory):
		return unix.ENOMEM
	case errors.Is(err, mm.ErrUnmapped), errors.Is(err, mm.ErrMapCount):
		return unix.ENOMEM
	case errors.Is(err, mm.ErrNameTooLong):
		return unix.ENAMETOOLONG
	}
	return err
}

// unknownName names a call the table does not have: by its Linux name,
// or by number for one Linux does not have either.
func unknownName(nr uint64) string {
	if name, ok := syscallNames[nr]; ok {
		return name
	}
	return "syscall " + strconv.FormatUint(nr, 10)
}
