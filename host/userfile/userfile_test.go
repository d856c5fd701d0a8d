package userfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/host/userfile"
)

// Nothing but a regular file is opened, and a FIFO nobody writes to does
// not block the check (os.Open would wait for a writer forever).
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	sock := filepath.Join(dir, "sock")
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, unix.Bind(fd, &unix.SockaddrUnix{Name: sock}))

	for path, want := range map[string]string{
		dir:         "is a directory, not a regular file",
		fifo:        "is a FIFO, not a regular file",
		"/dev/zero": "is a character device, not a regular file",
		sock:        "no such device or address", // a socket cannot even be opened
	} {
		done := make(chan error, 1)
		go func() { _, _, err := userfile.Open(path); done <- err }()
		select {
		case err := <-done:
			require.ErrorContains(t, err, want, path)
		case <-time.After(5 * time.Second):
			t.Fatalf("opening %s blocked", path)
		}
	}
	_, _, err = userfile.Open(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestReadFileBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte("0123456789"), 0o644))
	b, err := userfile.ReadFile(path, 10, "test file")
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(b))
	_, err = userfile.ReadFile(path, 9, "test file")
	require.ErrorContains(t, err, "is 10 bytes, more than the 9 bytes a test file may have")
	_, err = userfile.ReadFile("/dev/zero", 1<<20, "test file")
	require.ErrorContains(t, err, "character device")
}

// ReadSized reads a file whatever its stat said: the size it had, less
// (it shrank) or more (it grew, the buffer grows too), and an empty one;
// past the limit it stops one byte beyond it, for the caller to refuse.
func TestReadSized(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 10_000)
	for _, size := range []int64{int64(len(data)), 10, 0, -1, int64(len(data)) * 3} {
		got, err := userfile.ReadSized(bytes.NewReader(data), size, 1<<20)
		require.NoError(t, err)
		require.Equal(t, data, got, "stat said %d", size)
	}
	got, err := userfile.ReadSized(bytes.NewReader(nil), 100, 1<<20)
	require.NoError(t, err)
	require.Empty(t, got)
	for _, size := range []int64{int64(len(data)), 10} {
		got, err = userfile.ReadSized(bytes.NewReader(data), size, 999)
		require.NoError(t, err)
		require.Equal(t, data[:1000], got, "stat said %d", size)
	}
}
