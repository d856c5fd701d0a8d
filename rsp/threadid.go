package rsp

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Special process and thread numbers.
const (
	All = -1 // every process, or every thread of a process
	Any = 0  // any process or thread: the stub picks
)

// maxID bounds a process or thread number.
const maxID = math.MaxInt32

// ThreadID names a thread, or a set of threads, as gdb does (doc.go).
// A thread id without a process (no multiprocess extensions) has PID Any.
type ThreadID struct {
	PID, TID int
}

// AllThreads is every thread of every process; AnyThread lets the stub pick.
var (
	AllThreads = ThreadID{PID: All, TID: All}
	AnyThread  = ThreadID{PID: Any, TID: Any}
)

// String encodes t in the multiprocess form p<pid>.<tid>, hex.
func (t ThreadID) String() string {
	return "p" + formatID(t.PID) + "." + formatID(t.TID)
}

func formatID(n int) string {
	if n < 0 {
		return "-" + strconv.FormatUint(uint64(-n), 16)
	}
	return strconv.FormatUint(uint64(n), 16)
}

// parseThreadID parses any of the forms doc.go lists.
func parseThreadID(s string) (ThreadID, error) {
	rest, multi := strings.CutPrefix(s, "p")
	if !multi {
		id, err := parseID(s)
		if err != nil {
			return ThreadID{}, fmt.Errorf("thread id %q: %w", s, err)
		}
		if id == All {
			return AllThreads, nil
		}
		return ThreadID{PID: Any, TID: id}, nil
	}
	pidField, tidField, hasTID := strings.Cut(rest, ".")
	pid, err := parseID(pidField)
	if err != nil {
		return ThreadID{}, fmt.Errorf("thread id %q: pid: %w", s, err)
	}
	tid := All
	if hasTID {
		if tid, err = parseID(tidField); err != nil {
			return ThreadID{}, fmt.Errorf("thread id %q: tid: %w", s, err)
		}
	}
	if pid == All && tid != All {
		return ThreadID{}, fmt.Errorf("thread id %q: a single thread of every process", s)
	}
	return ThreadID{PID: pid, TID: tid}, nil
}

// parseID parses a process or thread number: hex, or -1.
func parseID(s string) (int, error) {
	if s == "-1" {
		return All, nil
	}
	n, err := parseHex(s)
	if err != nil {
		return 0, err
	}
	if n > maxID {
		return 0, errors.New("over 2^31-1")
	}
	return int(n), nil
}
