package rsp

import (
	"errors"
	"fmt"
	"strings"
)

// Host I/O (vFile): gdb reads the target's files through the stub — the
// program's executable and libraries, /proc/PID/maps and its like.
//
//	vFile:setfs:<pid>                   later paths are as process pid sees them (0: the stub's)
//	vFile:open:<path hex>,<flags>,<mode> F<fd>, or F-1,<errno>
//	vFile:pread:<fd>,<count>,<offset>   F<bytes read>;<the bytes, binary>
//	vFile:close:<fd>                    F0
//	vFile:readlink:<path hex>           F<length>;<the link's target, binary>
//
// Numbers are hex; the others (pwrite, unlink, fstat) are Unknown.

// Bounds on host I/O requests.
const (
	maxPath = 4096
	maxFD   = 1 << 20
)

// Host I/O commands.
type (
	FileSetFS struct{ PID int }
	FileOpen  struct {
		Path        string
		Flags, Mode uint64
	}
	FilePread struct {
		FD            int
		Count, Offset uint64
	}
	FileClose    struct{ FD int }
	FileReadlink struct{ Path string }
)

func (FileSetFS) command()    {}
func (FileOpen) command()     {}
func (FilePread) command()    {}
func (FileClose) command()    {}
func (FileReadlink) command() {}

// parseFile parses vFile:<operation>:<arguments>.
func parseFile(arg string) (Command, error) {
	op, rest, ok := strings.Cut(arg, ":")
	if !ok {
		return nil, nil
	}
	fields := strings.Split(rest, ",")
	want := map[string]int{"setfs": 1, "open": 3, "pread": 3, "close": 1, "readlink": 1}[op]
	if want == 0 {
		return nil, nil
	}
	if len(fields) != want {
		return nil, fmt.Errorf("%s takes %d arguments, not %d", op, want, len(fields))
	}
	switch op {
	case "setfs":
		pid, err := parsePID(fields[0])
		return FileSetFS{PID: pid}, err
	case "open":
		path, err := parsePath(fields[0])
		if err != nil {
			return nil, err
		}
		flags, err1 := parseHex(fields[1])
		mode, err2 := parseHex(fields[2])
		return FileOpen{Path: path, Flags: flags, Mode: mode}, errors.Join(err1, err2)
	case "pread":
		fd, err := parseBounded(fields[0], maxFD)
		if err != nil {
			return nil, fmt.Errorf("fd: %w", err)
		}
		count, err1 := parseHex(fields[1])
		offset, err2 := parseHex(fields[2])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("count, offset: %w", err)
		}
		return FilePread{FD: int(fd), Count: min(count, MaxPacket/2), Offset: offset}, nil
	case "close":
		fd, err := parseBounded(fields[0], maxFD)
		return FileClose{FD: int(fd)}, err
	}
	path, err := parsePath(fields[0])
	return FileReadlink{Path: path}, err
}

// parsePath decodes a hex path of at most maxPath bytes.
func parsePath(s string) (string, error) {
	if len(s) > 2*maxPath {
		return "", fmt.Errorf("a path of %d bytes, over %d", len(s)/2, maxPath)
	}
	b, err := parseHexBytes(s)
	if err != nil {
		return "", fmt.Errorf("path: %w", err)
	}
	return string(b), nil
}

// FileResult is a host I/O reply: F<result>, with data after it.
func FileResult(result uint64, data []byte) []byte {
	out := fmt.Appendf(nil, "F%x", result)
	if data != nil {
		out = append(append(out, ';'), data...)
	}
	return out
}

// FileError is a host I/O reply of a failed request: F-1,<errno>.
func FileError(errno int) []byte { return fmt.Appendf(nil, "F-1,%x", errno) }
