package replayer_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
)

// diskImage writes a base image of random bytes and returns its path,
// contents and hash.
func diskImage(t *testing.T, mib int) (string, []byte, [32]byte) {
	t.Helper()
	b := make([]byte, mib<<20)
	_, _ = rand.Read(b)
	p := filepath.Join(t.TempDir(), "base.img")
	require.NoError(t, os.WriteFile(p, b, 0o444))
	return p, b, sha256.Sum256(b)
}

func fnvHex(b []byte) string {
	h := fnv.New64a()
	h.Write(b)
	return fmt.Sprintf("0x%016x", h.Sum64())
}

func truthWith(t *testing.T, console, key, value string) guest.Truth {
	t.Helper()
	for _, tr := range guest.ParseTruth(console) {
		if tr[key] == value {
			return tr
		}
	}
	t.Fatalf("no truth line with %s=%s in:\n%s", key, value, console)
	return nil
}

// Disk I/O recorded on a noisy host replays with identical checksums, the
// whole-disk read matches the base image's bytes, and the base is never
// modified.
func TestDiskRecordReplay(t *testing.T) {
	img := kitImage(t)
	base, bytes, sum := diskImage(t, 4)
	for _, cmd := range []string{"disk mode=read", "disk mode=rw", "selftest"} {
		t.Run(cmd, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "disk.tape")
			var rec *recorder.Result
			var out consoleBuf
			noisy(func() {
				var err error
				rec, err = recorder.Record(context.Background(), recorder.Options{
					Image: img, Cmdline: cmd, Output: path, Console: &out,
					DiskBase: base, TimerHz: 250, TimerJitter: 3 * time.Millisecond,
				})
				require.NoError(t, err)
			})
			require.Equal(t, uint32(0), rec.Status)
			recorded := rec.Result
			console := string(out.b)
			requireDiskHeader(t, path, base)
			if cmd == "disk mode=read" {
				tr := truthWith(t, console, "mode", "read")
				require.Equal(t, fnvHex(bytes), tr["sha"], "the guest read other bytes than the base image holds")
			}
			for i := 0; i < 5; i++ {
				again, res := replay(t, path)
				require.Equal(t, console, again)
				require.Equal(t, recorded.End.RAMHash, res.End.RAMHash)
			}
			now, err := os.ReadFile(base)
			require.NoError(t, err)
			require.Equal(t, sum, sha256.Sum256(now), "the base image changed")
		})
	}
}

// requireDiskHeader checks the tape names the recording's base image.
func requireDiskHeader(t *testing.T, path, base string) {
	r, err := tape.Open(path)
	require.NoError(t, err)
	h := r.Header()
	r.Close()
	require.NotNil(t, h.Disk)
	abs, _ := filepath.Abs(base)
	require.Equal(t, abs, h.Disk.Path)
}

type consoleBuf struct{ b []byte }

func (c *consoleBuf) Write(p []byte) (int, error) { c.b = append(c.b, p...); return len(p), nil }

// A replay finds a moved base image when told, and refuses a changed one.
func TestDiskBaseMovedOrChanged(t *testing.T) {
	img := kitImage(t)
	base, data, _ := diskImage(t, 1)
	path := filepath.Join(t.TempDir(), "disk.tape")
	_, err := recorder.Record(context.Background(), recorder.Options{
		Image: img, Cmdline: "disk mode=read", Output: path, Console: new(consoleBuf), DiskBase: base,
	})
	require.NoError(t, err)

	moved := filepath.Join(t.TempDir(), "moved.img")
	require.NoError(t, os.WriteFile(moved, data, 0o444))
	require.NoError(t, os.Remove(base))
	_, err = replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: new(consoleBuf)})
	require.ErrorContains(t, err, "--disk")
	_, err = replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: new(consoleBuf), DiskBase: moved})
	require.NoError(t, err)

	data[12345] ^= 1
	changed := filepath.Join(t.TempDir(), "changed.img")
	require.NoError(t, os.WriteFile(changed, data, 0o444))
	_, err = replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: new(consoleBuf), DiskBase: changed})
	require.ErrorContains(t, err, "not the one recorded")
}

// Guests that drive the disk harder than the kit does record and replay
// alike: eight requests in flight all complete, and a flood with
// interrupts off is refused beyond the in-flight bound at the same
// submissions in both.
func TestDiskInFlightAndFloodReplay(t *testing.T) {
	base, _, _ := diskImage(t, 1)
	kvmtest.Require(t)
	for _, tc := range []struct {
		name, src string
		status    uint32
	}{
		{"in flight", kvmtest.DiskInFlightAsm, 8},
		{"flood", kvmtest.DiskFloodAsm, 1000 - abi.DiskMaxQueued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := elffile.OpenImage(kvmtest.AsmImage(t, tc.src))
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "disk.tape")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rec, err := recorder.Record(ctx, recorder.Options{
				Image: img, Output: path, Console: new(consoleBuf), DiskBase: base, TimerHz: -1,
			})
			require.NoError(t, err)
			require.Equal(t, tc.status, rec.Status)
			rep, err := replayer.Replay(ctx, replayer.Options{Tape: path, Console: new(consoleBuf)})
			require.NoError(t, err)
			require.Equal(t, tc.status, rep.Status)
			require.Equal(t, rec.Stats.DiskRefused, rep.Stats.DiskRefused)
		})
	}
}
