package debugger

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/reprise-vm/reprise/rsp"
)

// gdb's host I/O (vFile) serves the files gdb reads of the program: the
// executable and libraries a process maps, as they were mapped (gdb opens
// the executable as it connects), and /proc: info proc and its like read
// /proc/PID/maps, cmdline, exe, cwd, stat and status. A /proc file is
// made when opened, from the replay's kernel where the program stopped
// (as the program's own read would make it), and read from that copy
// (gdb reads /proc/PID/task/PID/maps as it connects, for the vDSO). Any
// other file is not found: gdb reads it from its sysroot (reprise debug
// sets it to the program's root), as separate debug information.

// maxOpenFiles bounds the files gdb holds open at once.
const maxOpenFiles = 64

// gdb's host I/O errno values (Linux's for these).
const (
	fileENOENT = 2
	fileEBADF  = 9
	fileEACCES = 13
	fileEINVAL = 22
	fileEMFILE = 24
)

// file answers a host I/O request; nil for one the stub does not serve.
func (s *server) file(c rsp.Command) []byte {
	switch c := c.(type) {
	case rsp.FileSetFS:
		s.fsPID = c.PID
		return rsp.FileResult(0, nil)
	case rsp.FileOpen:
		var data []byte
		var ok bool
		if pid, name, proc := s.procPath(c.Path); proc {
			data, ok = s.procFile(pid, name)
		} else {
			data, ok = s.mappedFile(s.filePID(), c.Path)
		}
		switch {
		case !ok:
			return rsp.FileError(fileENOENT)
		case c.Flags != 0: // FILEIO_O_RDONLY
			return rsp.FileError(fileEACCES)
		case len(s.files) >= maxOpenFiles:
			return rsp.FileError(fileEMFILE)
		}
		if s.files == nil {
			s.files = map[int][]byte{}
		}
		fd := 0
		for _, used := s.files[fd]; used; _, used = s.files[fd] {
			fd++
		}
		if data == nil {
			data = []byte{} // read as an empty attachment (F0;), as any end of file
		}
		s.files[fd] = data
		return rsp.FileResult(uint64(fd), nil)
	case rsp.FilePread:
		data, ok := s.files[c.FD]
		if !ok {
			return rsp.FileError(fileEBADF)
		}
		from := min(c.Offset, uint64(len(data)))
		chunk := data[from : from+min(c.Count, uint64(len(data))-from)]
		return rsp.FileResult(uint64(len(chunk)), chunk)
	case rsp.FileClose:
		if _, ok := s.files[c.FD]; !ok {
			return rsp.FileError(fileEBADF)
		}
		delete(s.files, c.FD)
		return rsp.FileResult(0, nil)
	case rsp.FileReadlink:
		pid, name, ok := s.procPath(c.Path)
		if !ok || name != "exe" && name != "cwd" {
			return rsp.FileError(fileEINVAL)
		}
		link, ok := s.procFile(pid, name)
		if !ok {
			return rsp.FileError(fileENOENT)
		}
		return rsp.FileResult(uint64(len(link)), link)
	}
	return nil
}

// procPath splits /proc/PID/NAME, /proc/PID/task/TID/NAME (what a
// thread reads of its process) or /proc/self/… (self: the process setfs
// named, else the one registers are read from) into the process and the
// name; ok is false for a path outside /proc, and name "" for one in /proc
// of no such form.
func (s *server) procPath(p string) (pid int, name string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return 0, "", false
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 2:
	case len(parts) == 4 && parts[1] == "task":
		parts = []string{parts[0], parts[3]}
	default:
		return 0, "", true
	}
	if parts[0] == "self" {
		return s.filePID(), parts[1], true
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return 0, "", true
	}
	return pid, parts[1], true
}

// mappedFile is a file process pid maps, as mapped.
func (s *server) mappedFile(pid int, path string) (data []byte, ok bool) {
	s.on(func(b *Trap) { data, ok = b.MappedFile(pid, path) })
	return data, ok
}

// filePID is the process host I/O paths are as seen by: the one setfs
// named, else the one registers are read from.
func (s *server) filePID() int { return cmp.Or(s.fsPID, s.gThread.PID) }

// procFile is /proc/PID/name of the stopped program.
func (s *server) procFile(pid int, name string) (data []byte, ok bool) {
	s.on(func(b *Trap) { data, ok = b.ProcFile(pid, name) })
	return data, ok
}
