package linux

import "golang.org/x/sys/unix"

// No socket can be made yet (socket answers EAFNOSUPPORT, and programs
// fall back or fail clearly), so every call on a socket's descriptor is
// made on something else: EBADF for a closed descriptor, ENOTSOCK for an
// open one, as Linux answers (bash asks getpeername of its standard input).

func sysSocket(*thread, args) (uint64, error) { return 0, unix.EAFNOSUPPORT }

func notSocket(t *thread, a args) (uint64, error) {
	if _, err := t.proc.fds.Get(a[0]); err != nil {
		return 0, err
	}
	return 0, unix.ENOTSOCK
}
