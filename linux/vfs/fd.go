package vfs

import (
	"maps"
	"slices"

	"golang.org/x/sys/unix"
)

// FDEntry is a descriptor: an open file and its close-on-exec flag.
type FDEntry struct {
	File    *OpenFile
	Cloexec bool
}

// MaxFDs is RLIMIT_NOFILE's hard limit.
const MaxFDs = 4096

// FDTable is a process's descriptors.
type FDTable map[int]*FDEntry

// NewFDTable is a first process's table: the standard streams on console.
func NewFDTable(console *Console) FDTable {
	return FDTable{
		0: {File: &OpenFile{impl: console, Flags: unix.O_RDONLY, Refs: 1}},
		1: {File: &OpenFile{impl: console, Flags: unix.O_WRONLY, Refs: 1}},
		2: {File: &OpenFile{impl: console, Flags: unix.O_WRONLY, Refs: 1}},
	}
}

// Clone is a child's copy: the same open files, shared (fork).
func (t FDTable) Clone() FDTable {
	c := FDTable{}
	for fd, e := range t {
		e.File.Refs++
		c[fd] = &FDEntry{File: e.File, Cloexec: e.Cloexec}
	}
	return c
}

// DropRefs drops a reference of each of files, releasing those whose
// last it was: files passed and never installed.
func DropRefs(files []*OpenFile) {
	for _, f := range files {
		if f.Refs--; f.Refs == 0 {
			f.Release()
		}
	}
}

// Close drops descriptor fd; the last descriptor of an open file releases
// it (a pipe end closes).
func (t FDTable) Close(fd int) {
	e, ok := t[fd]
	if !ok {
		return
	}
	delete(t, fd)
	e.File.Refs--
	if e.File.Refs == 0 {
		e.File.Release()
	}
}

// CloseAll closes every descriptor (the process exited), lowest first.
func (t FDTable) CloseAll() {
	for _, fd := range t.Sorted() {
		t.Close(fd)
	}
}

// CloseOnExec closes the descriptors marked close-on-exec, lowest first.
func (t FDTable) CloseOnExec() {
	for _, fd := range t.Sorted() {
		if t[fd].Cloexec {
			t.Close(fd)
		}
	}
}

// Sorted is the descriptors, lowest first.
func (t FDTable) Sorted() []int { return slices.Sorted(maps.Keys(t)) }

// Get is the open file of descriptor fd, or EBADF.
func (t FDTable) Get(fd uint64) (*OpenFile, error) {
	e, ok := t[int(fd)]
	if !ok || fd > MaxFDs {
		return nil, unix.EBADF
	}
	return e.File, nil
}

// Install gives f the lowest free descriptor at or above min.
func (t FDTable) Install(f *OpenFile, cloexec bool, min int) (int, error) {
	for fd := min; fd < MaxFDs; fd++ {
		if _, used := t[fd]; !used {
			f.Refs++
			t[fd] = &FDEntry{File: f, Cloexec: cloexec}
			return fd, nil
		}
	}
	return 0, unix.EMFILE
}

// Set makes descriptor fd refer to f (dup2, dup3), closing what it
// referred to first.
func (t FDTable) Set(fd int, f *OpenFile, cloexec bool) {
	t.Close(fd)
	f.Refs++
	t[fd] = &FDEntry{File: f, Cloexec: cloexec}
}

// Release drops an open file no descriptor refers to any more (or one
// made and never installed): epoll stops watching it.
func (f *OpenFile) Release() {
	for _, it := range slices.Clone(f.watchers) {
		it.remove()
	}
	f.releaseLocks()
	f.impl.Release()
}
