package replayer_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

// recordLinux records the executable at bin with argv (and, for a
// dynamic one, its loader and libraries) and returns the tape and the
// console output.
func recordLinux(t *testing.T, bin string, argv ...string) (string, *recorder.Result, string) {
	t.Helper()
	return recordLinuxWith(t, nil, bin, argv...)
}

// recordLinuxWith is recordLinux with more files for the program.
func recordLinuxWith(t *testing.T, files []linux.Mount, bin string, argv ...string) (string, *recorder.Result, string) {
	t.Helper()
	return recordLinuxOptions(t, recorder.Options{}, files, bin, argv...)
}

// recordLinuxOptions is recordLinuxWith with recorder options of the
// caller's (the program, its machine and its tape are filled in).
func recordLinuxOptions(t *testing.T, o recorder.Options, files []linux.Mount, bin string, argv ...string) (string, *recorder.Result, string) {
	t.Helper()
	return recordLinuxSetUp(t, o, files, func(*linux.Program) {}, bin, argv...)
}

// recordLinuxSetUp is recordLinuxOptions with the program set up before
// it is recorded.
func recordLinuxSetUp(t *testing.T, o recorder.Options, files []linux.Mount, setUp func(*linux.Program), bin string, argv ...string) (string, *recorder.Result, string) {
	t.Helper()
	kvmtest.Require(t)
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)
	o.Linux = &linux.Program{Path: "/bin/" + argv[0], Image: raw, Argv: argv, Env: []string{"HOME=/"}, Mounts: files,
		Random: [16]byte{1, 2, 3}, Epoch: time.Unix(1700000000, 0)}
	setUp(o.Linux)
	o.Output = filepath.Join(t.TempDir(), "prog.tape")
	if o.MemBytes == 0 {
		o.MemBytes = 64 << 20
	}
	o.TimerHz, o.Host = 250, recorder.HostOff
	var out bytes.Buffer
	o.Console = &out
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := recorder.Record(ctx, o)
	require.NoError(t, err, out.String())
	// A recording its time limit stopped is a whole tape of a program
	// that did not finish: not the run a test asserts about.
	require.NotNil(t, res.End)
	require.Equal(t, vmm.EndExited, res.End.Reason, "the recording ended before the program did (its 2-minute limit): %s", out.String())
	require.Equal(t, uint32(0), res.Status, out.String())
	return o.Output, res, out.String()
}

// Probes on the C library's mutex functions, in a static musl program and
// in a dynamic glibc one (libc.so.6, mapped by the loader): the entries
// and returns they see are the acquisitions the program counted, lock by
// lock, and the probed replay matches its recording byte for byte, RAM
// included.
func TestLinuxProbesCountMutexAcquisitions(t *testing.T) {
	for _, tc := range []struct {
		name, cc string
		flags    []string
		object   string
	}{
		{"musl-static", "musl-gcc", []string{"-static", "-O1", "-g"}, ""},
		{"glibc-dynamic", "gcc", []string{"-O1", "-g", "-pthread"}, "@libc.so.6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := cprog.Build(t, tc.cc, "locks", tc.flags...)
			path, rec, console := recordLinux(t, bin, "locks", "4", "60")
			want := cprog.Truth(console)
			require.NotZero(t, want["counter_lock"], console)

			specs, err := probes.ParseSpecs([]string{
				"lock=pthread_mutex_lock" + tc.object + " m=arg0",
				"locked=pthread_mutex_lock" + tc.object + "%return ret=rax",
				"unlock=pthread_mutex_unlock" + tc.object + " m=arg0",
			})
			require.NoError(t, err)
			set, err := probes.NewSet(specs)
			require.NoError(t, err)
			entries, returns := map[uint64]int{}, 0
			threads := map[uint32]bool{}
			var out bytes.Buffer
			res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out, Set: set,
				OnHit: func(h replayer.Hit) error {
					threads[h.Thread] = true
					switch h.Probe.Name {
					case "lock":
						entries[h.Args[0].Value]++
					case "locked":
						returns++
						require.Zero(t, h.Args[0].Value, "pthread_mutex_lock returned an error")
					}
					return nil
				}})
			require.NoError(t, err)
			require.Equal(t, console, out.String())
			require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "the probed replay's RAM differs")

			// The locks only pthread_mutex_lock takes are each entered as
			// often as the program counted. (queue_lock is not: musl's
			// pthread_cond_wait takes it again through pthread_mutex_lock,
			// glibc's does not, and how often a consumer waits depends on
			// the host's load — so it can even outnumber counter_lock.)
			t.Logf("entries by lock: %v; the program's counts: %v", entries, want)
			counts := slices.Collect(maps.Values(entries))
			for _, lock := range []string{"counter_lock", "stats[1]", "heap"} {
				require.NotZero(t, want[lock], console)
				require.Contains(t, counts, want[lock], "no lock entered %d times, as %s was: %v", want[lock], lock, entries)
			}
			total := 0
			for _, n := range entries {
				total += n
			}
			require.Equal(t, total, returns, "every pthread_mutex_lock entry has its return")
			require.GreaterOrEqual(t, len(threads), 4, "hits come from the program's threads")
		})
	}
}

// A probe on a library the program opens with dlopen — zlib, which the
// executable does not name — is placed when the loader maps the library,
// at the same point in every replay: it sees every call the program
// made, and the replays agree hit for hit.
func TestLinuxProbesInALibraryOpenedAtRunTime(t *testing.T) {
	kvmtest.RequireTools(t, "gcc")
	bin := cprog.Build(t, "gcc", "dlopen", "-O1")
	path, rec, console := recordLinuxWith(t, nil, bin, "dlopen", "5") // the host's libz, found as the program looks
	want := cprog.Truth(console)["crc32"]
	require.Equal(t, 5, want, console)

	specs, err := probes.ParseSpecs([]string{"crc=crc32@libz.so.1 len=arg2", "crcret=crc32@libz.so.1%return ret=rax"})
	require.NoError(t, err)
	set, err := probes.NewSet(specs)
	require.NoError(t, err)
	var hits [2][]string
	for i := range hits {
		var out bytes.Buffer
		res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out, Set: set,
			OnHit: func(h replayer.Hit) error {
				hits[i] = append(hits[i], fmt.Sprintf("%s %v %#x", h.Probe.Name, h.Pos, h.Args[0].Value))
				return nil
			}})
		require.NoError(t, err)
		require.Equal(t, console, out.String())
		require.Equal(t, rec.End.RAMHash, res.End.RAMHash)
	}
	require.Len(t, hits[0], 2*want, "an entry and a return per call: %v", hits[0])
	require.Equal(t, "crc 0x7", hits[0][0][:3]+" "+hits[0][0][len(hits[0][0])-3:], "the length argument")
	require.Equal(t, hits[0], hits[1], "every replay hits at the same positions")
}
