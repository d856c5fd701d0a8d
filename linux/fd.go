package linux

import (
	"maps"
	"slices"

	"golang.org/x/sys/unix"
)

// openFile is an open file description: a node, or a standard stream of
// the console, with its offset and flags.
type openFile struct {
	node    *node  // nil for the console and pipes
	path    string // where node was opened
	console bool   // stdin reads empty; stdout and stderr write to the console
	pipe    *pipe  // one end of a pipe, or nil
	refs    int    // descriptors that refer to it, in every process
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
		0: {file: &openFile{console: true, flags: unix.O_RDONLY, refs: 1}},
		1: {file: &openFile{console: true, flags: unix.O_WRONLY, refs: 1}},
		2: {file: &openFile{console: true, flags: unix.O_WRONLY, refs: 1}},
	}
}

// clone is a child's copy: the same open files, shared (fork).
func (t fdTable) clone() fdTable {
	c := fdTable{}
	for fd, e := range t {
		e.file.refs++
		c[fd] = &fdEntry{file: e.file, cloexec: e.cloexec}
	}
	return c
}

// close drops descriptor fd; the last descriptor of an open file releases
// it (a pipe end closes).
func (t fdTable) close(k *Kernel, fd int) {
	e, ok := t[fd]
	if !ok {
		return
	}
	delete(t, fd)
	e.file.refs--
	switch {
	case e.file.refs > 0:
	case e.file.pipe != nil:
		e.file.pipe.closeEnd(k, e.file.writable())
	case e.file.node != nil:
		k.closed(e.file.node)
	}
}

// closeAll closes every descriptor (the process exited), lowest first.
func (t fdTable) closeAll(k *Kernel) {
	for _, fd := range t.sorted() {
		t.close(k, fd)
	}
}

// closeOnExec closes the descriptors marked close-on-exec, lowest first.
func (t fdTable) closeOnExec(k *Kernel) {
	for _, fd := range t.sorted() {
		if t[fd].cloexec {
			t.close(k, fd)
		}
	}
}

func (t fdTable) sorted() []int { return slices.Sorted(maps.Keys(t)) }

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
			f.refs++
			t[fd] = &fdEntry{file: f, cloexec: cloexec}
			return fd, nil
		}
	}
	return 0, unix.EMFILE
}
