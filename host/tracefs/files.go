package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// roots are the places tracefs is usually found, in order of preference.
// /sys/kernel/debug/tracing is an automount of tracefs on kernels >= 4.1
// and the only location on older ones. A variable so tests can point it
// elsewhere.
var roots = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// findRoot returns the first of candidates that is a mounted tracefs.
func findRoot(candidates []string) (string, error) {
	var permErr error
	for _, dir := range candidates {
		var st unix.Statfs_t
		err := unix.Statfs(dir, &st)
		switch {
		case err == nil && st.Type == unix.TRACEFS_MAGIC:
			return dir, nil
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			// /sys/kernel/debug is mode 0700: remember, try the next one.
			if permErr == nil {
				permErr = &UnavailableError{
					Reason: fmt.Sprintf("no permission to access %s: run as root", dir), Err: err}
			}
		}
	}
	if permErr != nil {
		return "", permErr
	}
	return "", &UnavailableError{Reason: fmt.Sprintf(
		"tracefs not mounted at %s (mount -t tracefs nodev %s)",
		strings.Join(candidates, " or "), candidates[0])}
}

// writeFile writes one value to a tracefs control file. tracefs acts on
// each write(2), so the value is written in a single call.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return classify(path, err)
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, classify(path, err))
	}
	return nil
}

// classify turns permission errors into an *UnavailableError so the
// caller learns that privileges, not a bug, are the problem.
func classify(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return &UnavailableError{
			Reason: fmt.Sprintf("no permission to write %s: run as root", path), Err: err}
	}
	return err
}

// eventDir is the directory of a sched event inside an instance.
func eventDir(inst, name string) string {
	return filepath.Join(inst, "events", "sched", name)
}
