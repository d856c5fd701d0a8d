// Package userfile opens the files a user names for reprise to read —
// guest images, disk base images, packet captures, probe files — and
// refuses anything but a regular file before reading a byte of it: a FIFO
// would block the reader and a device such as /dev/zero would never end.
// ReadFile also bounds how much it reads, so a huge file is refused
// before it is loaded.
package userfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Open opens path for reading. The open itself does not block on a FIFO
// (O_NONBLOCK); the file is then checked to be regular.
func Open(path string) (*os.File, fs.FileInfo, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, not a regular file", path, kind(st.Mode()))
	}
	// Reads of a regular file never block anyway; clear the flag so the
	// file behaves as os.Open's would.
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return f, st, nil
}

// ReadFile reads the regular file at path whole, refusing one larger than
// limit bytes before reading it; what says what the file is for messages
// ("guest image").
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d bytes a %s may have", path, st.Size(), limit, what)
	}
	b, err := ReadSized(f, st.Size(), limit)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew past the %d bytes a %s may have while it was read", path, limit, what)
	}
	return b, nil
}

// ReadSized reads r to its end, or to one byte past limit (so that a
// caller sees a file that grew past it), into one buffer of the size r
// is expected to have (size, from a stat): a file that did not change
// size is read without a copy or a second buffer. Growing a buffer
// (io.ReadAll, bytes.Buffer) cost 4 ms of a 30 ms start-up for a 2 MB
// executable on the test machines, where fresh host memory costs a
// fault a page and the copies bring a garbage collection.
func ReadSized(r io.Reader, size, limit int64) ([]byte, error) {
	end := int(limit) + 1 // what is read at most
	data := make([]byte, 0, min(int(max(size, 0)), end-1)+1)
	for len(data) < end {
		if len(data) == cap(data) {
			data = slices.Grow(data, min(cap(data), end-len(data))) // it grew since its stat
		}
		n, err := r.Read(data[len(data):min(cap(data), end)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}
