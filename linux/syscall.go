package linux

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
)

// args are a system call's six arguments (rdi, rsi, rdx, r10, r8, r9).
type args [6]uint64

// handler serves one system call. It returns the value for rax, or an
// errno, or an error that ends the run (the program exited, or the VMM
// failed).
type handler func(k *Kernel, a args) (uint64, error)

// errno is a system call's failure, returned to the program as -errno.
type errno = unix.Errno

// syscalls maps a system call number to its name and handler; a missing
// handler answers ENOSYS.
var syscalls = map[uint64]struct {
	name string
	fn   handler
}{}

// register adds a system call; the tables live beside the calls (sys_*.go).
func register(nr uintptr, name string, fn handler) {
	if _, dup := syscalls[uint64(nr)]; dup {
		panic("linux: system call " + name + " registered twice")
	}
	syscalls[uint64(nr)] = struct {
		name string
		fn   handler
	}{name, fn}
}

func (k *Kernel) syscall(r *kvm.Regs) (uint64, error) {
	nr := r.RAX
	sc, ok := syscalls[nr]
	name := sc.name
	if name == "" {
		name = unknownName(nr)
	}
	k.stats.Calls[name]++
	if !ok || sc.fn == nil {
		k.stats.Unsupported[name]++
		return negErrno(unix.ENOSYS), nil
	}
	a := args{r.RDI, r.RSI, r.RDX, r.R10, r.R8, r.R9}
	tid := k.current().tid
	ret, err := sc.fn(k, a)
	if k.trace != nil {
		fmt.Fprintf(k.trace, "[%d] %s(%#x, %#x, %#x, %#x) = %#x %v\n", tid, name, a[0], a[1], a[2], a[3], ret, err)
	}
	if errors.Is(err, errRestart) {
		k.restart = true
		return nr, nil
	}
	var e errno
	if errors.As(err, &e) {
		return negErrno(e), nil
	}
	return ret, err
}

func negErrno(e errno) uint64 { return uint64(-int64(e)) }

// memErr turns an address-space failure into the errno Linux gives.
func memErr(err error) error {
	switch {
	case errors.Is(err, errFault):
		return unix.EFAULT
	case errors.Is(err, errNoMemory):
		return unix.ENOMEM
	case errors.Is(err, errUnmapped):
		return unix.ENOMEM
	case errors.Is(err, errNameTooLong):
		return unix.ENAMETOOLONG
	}
	return err
}

func unknownName(nr uint64) string { return "syscall " + itoa(nr) }

func itoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; v > 0; v /= 10 {
		i--
		b[i] = byte('0' + v%10)
	}
	return string(b[i:])
}
