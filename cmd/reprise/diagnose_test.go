package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/tools/lockstat"
)

// lockstatOf records bin with args, replays it with --locks into a DB and
// returns the program's output and lockstat's report.
func lockstatOf(t *testing.T, bin string, args ...string) (string, *lockstat.Report) {
	t.Helper()
	kvmtest.Require(t)
	dir := t.TempDir()
	tp, db := filepath.Join(dir, "prog.tape"), filepath.Join(dir, "db")
	r := runCLI(t, nil, append([]string{"record", "-o", tp, "--", bin}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	rep := runCLI(t, nil, "replay", "-q", "--locks", "--db", db, tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Contains(t, rep.stderr, "replay matched")
	ls := runCLI(t, nil, "lockstat", "--json", db)
	require.Equal(t, 0, ls.code, ls.stderr)
	var report lockstat.Report
	require.NoError(t, json.Unmarshal([]byte(ls.stdout), &report), ls.stdout)
	return r.stdout, &report
}

// lockstat on unmodified C programs — a static musl build and a dynamic
// glibc one, whose pthread functions live in libc.so.6 — finds each lock
// under its name with exactly the acquisitions the program counted
// itself: mutexes (a global, an array element, a heap lock named by its
// first call site), a trylock, a mutex that condition waits release and
// retake (each return from pthread_cond_wait is an acquisition), and a
// reader-writer lock reported as its own kind with its reads and writes.
func TestLockstatMatchesProgramCounts(t *testing.T) {
	for _, tc := range []struct {
		name, cc string
		flags    []string
	}{
		{"musl-static", "musl-gcc", []string{"-static", "-O1", "-g"}},
		{"glibc-dynamic", "gcc", []string{"-O1", "-g", "-pthread"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := cprog.Build(t, tc.cc, "locks", tc.flags...)
			out, rep := lockstatOf(t, bin, "4", "120")
			want := cprog.Truth(out)
			require.NotZero(t, want["counter_lock"], out)
			byName := map[string]*lockstat.Lock{}
			for _, l := range rep.Locks {
				name := l.Name
				if strings.HasPrefix(name, "heap@worker+") {
					name = "heap@worker" // its call site's offset is the compiler's
				}
				byName[name] = l
			}
			for name, key := range map[string]string{
				"counter_lock": "counter_lock",
				"stats+0x28":   "stats[1]", // the second 40-byte pthread_mutex_t
				"heap@worker":  "heap",
				"try_lock":     "try_lock",
				"queue_lock":   "queue_lock",
			} {
				l := byName[name]
				require.NotNil(t, l, "no lock named %s in %v", name, names(rep))
				require.Equal(t, uint64(want[key]), l.Acquired, "%s: lockstat's acquisitions against the program's count", name)
				require.Equal(t, "mutex", l.Kind)
			}
			require.Equal(t, uint64(want["try_lock.failed"]), byName["try_lock"].TryFailed)
			table := byName["table_lock"]
			require.NotNil(t, table, "no table_lock in %v", names(rep))
			require.Equal(t, "rwlock", table.Kind)
			require.Equal(t, uint64(want["table_lock.read"]), table.Reads)
			require.Equal(t, uint64(want["table_lock.write"]), table.Writes)
			require.Equal(t, 4, table.Threads)
		})
	}
}

func names(r *lockstat.Report) []string {
	var out []string
	for _, l := range r.Locks {
		out = append(out, l.Name)
	}
	return out
}
