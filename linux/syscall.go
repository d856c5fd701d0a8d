package linux

import (
	"errors"
	"fmt"
	"strings"

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

// sysCall is a registered system call: its name, how many arguments it
// takes (Linux's count on x86-64), and its handler (nil: ENOSYS).
type sysCall struct {
	name  string
	nargs int
	fn    handler
}

// syscalls maps a system call number to its registration.
var syscalls = map[uint64]sysCall{}

// register adds a system call that takes nargs arguments; the tables live
// beside the calls (sys_*.go).
func register(nr uintptr, name string, nargs int, fn handler) {
	if _, dup := syscalls[uint64(nr)]; dup {
		panic("linux: system call " + name + " registered twice")
	}
	if nargs < 0 || nargs > len(args{}) {
		panic("linux: system call " + name + " takes " + itoa(uint64(nargs)) + " arguments")
	}
	syscalls[uint64(nr)] = sysCall{name, nargs, fn}
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
	// The registers past the call's arguments hold whatever the program
	// left there: a handler must never see them.
	a := args{r.RDI, r.RSI, r.RDX, r.R10, r.R8, r.R9}
	clear(a[sc.nargs:])
	tid := k.current().tid
	ret, err := sc.fn(k, a)
	if k.trace != nil {
		fmt.Fprintf(k.trace, "[%d] %s(%s) = %#x %v\n", tid, name, a.format(sc.nargs), ret, err)
	}
	if errors.Is(err, errRestart) {
		k.restart = true
		return nr, nil
	}
	var e errno
	if errors.As(err, &e) {
		return negErrno(e), nil
	}
	if errors.Is(err, errNoMemory) {
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
	case errors.Is(err, errFault):
		return unix.EFAULT
	case errors.Is(err, errNoMemory):
		return unix.ENOMEM
	case errors.Is(err, errUnmapped), errors.Is(err, errMapCount):
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
