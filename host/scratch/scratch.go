// Package scratch makes the temporary directories reprise works in —
// a split replay's segment DBs, a live run's disk overlay — named by the
// pid of the process that made them, and removes those of processes that
// are gone. A reprise killed with SIGKILL cannot remove its own (a
// killed `replay --jobs` left 62 MB in /tmp each time); the next one
// does, as stale trace instances are reaped (package tracefs).
package scratch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// prefix starts every scratch directory's name.
const prefix = "reprise-"

// named matches a scratch directory's name: reprise-WHAT-PID-RANDOM.
var named = regexp.MustCompile(`^` + prefix + `[a-z]+(?:-[a-z]+)*-([0-9]+)-[0-9]+$`)

// Dir creates a directory in the temporary directory for what ("segments"),
// first removing the scratch directories of dead processes.
func Dir(what string) (string, error) {
	reapStale()
	return os.MkdirTemp("", fmt.Sprintf("%s%s-%d-", prefix, what, os.Getpid()))
}

// reapStale removes the scratch directories whose process is gone. One
// whose pid is alive (reprise's, or after pid reuse another program's) is
// left, and so is one this user does not own.
func reapStale() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		m := named.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() { // IsDir: not a symbolic link to one
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			_ = os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
}
