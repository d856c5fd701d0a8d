package linux

import "golang.org/x/sys/unix"

// openFile is an open file description: a node, or a standard stream of
// the console, with its offset and flags.
type openFile struct {
	node    *node  // nil for the console
	console bool   // stdin reads empty; stdout and stderr write to the console
	flags   uint64 // O_ACCMODE, O_APPEND, O_NONBLOCK
	off     int64
	dirPos  int // the next directory entry getdents returns
}

func (f *openFile) readable() bool { return f.flags&unix.O_ACCMODE != unix.O_WRONLY }
func (f *openFile) writable() bool { return f.flags&unix.O_ACCMODE != unix.O_RDONLY }

// fdEntry is a descriptor: an open file and its close-on-exec flag.
type fdEntry struct {
	file    *openFile
	cloexec bool
}

// maxFDs is RLIMIT_NOFILE's hard limit.
const maxFDs = 4096

// fdTable is a process's descriptors.
type fdTable map[int]*fdEntry

func newFDTable() fdTable {
	return fdTable{
		0: {file: &openFile{console: true, flags: unix.O_RDONLY}},
		1: {file: &openFile{console: true, flags: unix.O_WRONLY}},
		2: {file: &openFile{console: true, flags: unix.O_WRONLY}},
	}
}

func (t fdTable) get(fd uint64) (*openFile, error) {
	e, ok := t[int(fd)]
	if !ok || fd > maxFDs {
		return nil, unix.EBADF
	}
	return e.file, nil
}

// install gives f the lowest free descriptor at or above min.
func (t fdTable) install(f *openFile, cloexec bool, min int) (int, error) {
	for fd := min; fd < maxFDs; fd++ {
		if _, used := t[fd]; !used {
			t[fd] = &fdEntry{file: f, cloexec: cloexec}
			return fd, nil
		}
	}
	return 0, unix.EMFILE
}
