package vfs

import "fmt"

// A new kind of file saves its part in SavedFile (File.save) and is
// made again from it here (Restored.file).

// SavedFile is an open file: of a node, a pipe, the console, an eventfd,
// an epoll instance, a timerfd or a signalfd.
type SavedFile struct {
	Node, Pipe int // indices, -1 for none
	Path       string
	Console    bool
	EventFD    *SavedEventFD
	Epoll      *SavedEpoll
	TimerFD    *SavedTimerFD
	SignalFD   *SavedSignalFD
	Socket     int // an index into the sockets, -1 for none
	Refs       int
	Flags      uint64
	Off        int64
	DirPos     int
	Owner      int
}

// SavedFD is a descriptor.
type SavedFD struct {
	File    int // index into the open files
	Cloexec bool
}

// File numbers f and what it is of.
func (sv *Saver) File(f *OpenFile) int {
	if i, ok := sv.files[f]; ok {
		return i
	}
	// Numbered before its kind is saved: a socket's names its peer's
	// file, which names it back.
	i := len(sv.Files)
	sv.files[f] = i
	sv.Files = append(sv.Files, SavedFile{})
	sf := SavedFile{Node: -1, Pipe: -1, Socket: -1, Path: f.Path, Refs: f.Refs, Flags: f.Flags, Off: f.Off, DirPos: f.DirPos, Owner: f.Owner}
	f.impl.save(sv, &sf)
	sv.Files[i] = sf
	return i
}

// FDs saves a descriptor table.
func (sv *Saver) FDs(t FDTable) map[int]SavedFD {
	fds := map[int]SavedFD{}
	for _, fd := range t.Sorted() {
		e := t[fd]
		fds[fd] = SavedFD{File: sv.File(e.File), Cloexec: e.Cloexec}
	}
	return fds
}

// checkFiles refuses an open file naming a node or pipe there is not, or
// of no kind or of two.
func checkFiles(files []SavedFile, nodes, pipes, sockets int) error {
	open := map[int]bool{}
	for i, f := range files {
		if !index(f.Node, nodes) || !index(f.Pipe, pipes) || !index(f.Socket, sockets) || open[f.Socket] || f.Refs < 0 || f.Off < 0 || f.DirPos < 0 {
			return fmt.Errorf("open file %d: node %d, pipe %d, %d references, offset %d", i, f.Node, f.Pipe, f.Refs, f.Off)
		}
		if kinds := btoi(f.Node >= 0) + btoi(f.Pipe >= 0) + btoi(f.Console) + btoi(f.EventFD != nil) + btoi(f.Epoll != nil) + btoi(f.TimerFD != nil) + btoi(f.SignalFD != nil) + btoi(f.Socket >= 0); kinds != 1 {
			return fmt.Errorf("open file %d: of %d kinds of file, not one", i, kinds)
		}
		if f.EventFD != nil && !f.EventFD.valid() {
			return fmt.Errorf("open file %d: an eventfd counting %d", i, f.EventFD.Count)
		}
		if f.TimerFD != nil && !f.TimerFD.valid() {
			return fmt.Errorf("open file %d: a timerfd at %v every %v", i, f.TimerFD.At, f.TimerFD.Interval)
		}
		if f.Socket >= 0 {
			open[f.Socket] = true // a socket is one open file
		}
		if f.Epoll != nil {
			if err := f.Epoll.check(i, len(files)); err != nil {
				return fmt.Errorf("open file %d: epoll: %w", i, err)
			}
		}
	}
	return checkEpollNesting(files)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CheckFDs refuses a descriptor table naming an open file not among n.
func CheckFDs(fds map[int]SavedFD, n int) error {
	if len(fds) > MaxFDs {
		return fmt.Errorf("%d descriptors", len(fds))
	}
	for fd, e := range fds {
		if fd < 0 || fd >= MaxFDs || e.File < 0 || e.File >= n {
			return fmt.Errorf("descriptor %d: open file %d of %d", fd, e.File, n)
		}
	}
	return nil
}

// file is a saved open file, of the kind it names; a signalfd reads
// signals from src.
func (r *Restored) file(f SavedFile, console *Console, src SignalSource) *OpenFile {
	var impl File
	switch {
	case f.Node >= 0:
		impl = r.FS.kindOf(r.Nodes[f.Node])
	case f.Pipe >= 0:
		of := OpenFile{Flags: f.Flags}
		impl = &PipeEnd{p: r.Pipes[f.Pipe], writer: of.Writable()}
	case f.EventFD != nil:
		impl = f.EventFD.restore()
	case f.TimerFD != nil:
		impl = f.TimerFD.restore()
	case f.SignalFD != nil:
		impl = &SignalFD{Mask: f.SignalFD.Mask, source: src}
	case f.Epoll != nil:
		impl = &Epoll{items: map[epollKey]*epollItem{}, budget: r.FS.budget}
	case f.Socket >= 0:
		impl = r.Sockets[f.Socket]
	default:
		impl = console
	}
	of := &OpenFile{impl: impl, Path: f.Path, Refs: f.Refs, Flags: f.Flags, Off: f.Off, DirPos: f.DirPos, Owner: f.Owner}
	switch k := impl.(type) {
	case *Epoll:
		k.self = of
	case *Socket:
		k.file = of
	}
	return of
}

// link gives the restored epoll instances their items, once every open
// file is restored.
func (r *Restored) link(files []SavedFile) {
	for i, f := range files {
		if f.Epoll != nil {
			f.Epoll.restore(EpollOf(r.Files[i]), r.Files)
		}
	}
}

// FDs is a restored descriptor table.
func (r *Restored) FDs(fds map[int]SavedFD) FDTable {
	t := FDTable{}
	for fd, e := range fds {
		t[fd] = &FDEntry{File: r.Files[e.File], Cloexec: e.Cloexec}
	}
	return t
}
