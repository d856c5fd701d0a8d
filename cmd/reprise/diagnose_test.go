package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/tools/deadlock"
	"github.com/reprise-vm/reprise/tools/lockstat"
	"github.com/reprise-vm/reprise/tools/profile"
)

// replayedDB records bin with args (and the record flags before "--" in
// them, if any), replays the tape with replayFlags into a new event DB
// and returns the program's output and the DB.
func replayedDB(t *testing.T, replayFlags []string, bin string, args ...string) (string, string) {
	t.Helper()
	kvmtest.Require(t)
	dir := t.TempDir()
	tp, db := filepath.Join(dir, "prog.tape"), filepath.Join(dir, "db")
	flags, rest := []string(nil), args
	if i := slices.Index(args, "--"); i >= 0 {
		flags, rest = args[:i], args[i+1:]
	}
	r := runCLI(t, nil, append(append(append([]string{"record", "-o", tp}, flags...), "--", bin), rest...)...)
	require.Equal(t, 0, r.code, r.stderr)
	rep := runCLI(t, nil, append(append([]string{"replay", "-q", "--db", db}, replayFlags...), tp)...)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Contains(t, rep.stderr, "replay matched")
	return r.stdout, db
}

// lockstatOf replays bin (as replayedDB) with --locks and returns the
// program's output, lockstat's report and the DB.
func lockstatOf(t *testing.T, bin string, args ...string) (string, *lockstat.Report, string) {
	t.Helper()
	out, db := replayedDB(t, []string{"--locks"}, bin, args...)
	ls := runCLI(t, nil, "lockstat", "--json", db)
	require.Equal(t, 0, ls.code, ls.stderr)
	var report lockstat.Report
	require.NoError(t, json.Unmarshal([]byte(ls.stdout), &report), ls.stdout)
	return out, &report, db
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
			out, rep, db := lockstatOf(t, bin, "4", "120")
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

			// The same hits through reprise events --json: one object a
			// line, the probe, its symbol and arguments by name.
			ev := runCLI(t, nil, "events", "--json", "--run", "1", "--probe", "lock", db)
			require.Equal(t, 0, ev.code, ev.stderr)
			counter := 0
			for _, line := range strings.Split(strings.TrimSpace(ev.stdout), "\n") {
				var e struct {
					Kind, Probe, Symbol string
					Thread              uint32
					Args                map[string]uint64
				}
				require.NoError(t, json.Unmarshal([]byte(line), &e), line)
				require.Equal(t, "probe-entry", e.Kind)
				require.Equal(t, "lock", e.Probe)
				require.Regexp(t, `^pthread_mutex_lock(@libc\.so\.6)?$`, e.Symbol)
				require.NotZero(t, e.Thread)
				if e.Args["m"] == byName["counter_lock"].Addr {
					counter++
				}
			}
			require.Equal(t, want["counter_lock"], counter)

			// The program's files, as it mapped them: its executable first.
			maps := runCLI(t, nil, "events", "--json", "--run", "1", "--kind", "mapping", db)
			require.Equal(t, 0, maps.code, maps.stderr)
			var paths []string
			for _, line := range strings.Split(strings.TrimSpace(maps.stdout), "\n") {
				var e struct {
					Thread uint32
					Path   string
				}
				require.NoError(t, json.Unmarshal([]byte(line), &e), line)
				require.Equal(t, uint32(1), e.Thread, "one process")
				paths = append(paths, filepath.Base(e.Path))
			}
			require.Equal(t, filepath.Base(bin), paths[0])
			if tc.name == "glibc-dynamic" {
				require.Contains(t, paths, "libc.so.6")
			}
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

// deadlockOf replays bin with --locks and returns reprise deadlock's
// report.
func deadlockOf(t *testing.T, bin string) *deadlock.Report {
	t.Helper()
	_, db := replayedDB(t, []string{"--locks"}, bin)
	dl := runCLI(t, nil, "deadlock", "--json", db)
	var report deadlock.Report
	require.NoError(t, json.Unmarshal([]byte(dl.stdout), &report), dl.stdout)
	require.Equal(t, map[bool]int{false: 0, true: 1}[len(report.Deadlocks) > 0], dl.code, "exit status: 1 when a potential deadlock is found; %s", dl.stderr)
	return &report
}

// lockSet names a cycle by its locks, sorted: "c,d,e".
func lockSet(c deadlock.Cycle) string {
	var names []string
	for _, s := range c.Steps {
		names = append(names, s.Holds.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func lockSets(cs []deadlock.Cycle) []string {
	var out []string
	for _, c := range cs {
		out = append(out, lockSet(c))
	}
	slices.Sort(out)
	return out
}

// reprise deadlock finds the inversions the program was written with:
// a two-lock and a three-thread cycle as potential deadlocks, a gated one
// as protected, one closed by a trylock as safe, and none between two
// read acquisitions of an rwlock — in a static musl and a dynamic glibc
// build alike.
func TestDeadlockFindsTheProgramsInversions(t *testing.T) {
	for _, tc := range []struct{ cc, flag string }{{"musl-gcc", "-static"}, {"gcc", "-pthread"}} {
		t.Run(tc.cc, func(t *testing.T) {
			rep := deadlockOf(t, cprog.Build(t, tc.cc, "inversions", "-O1", "-g", tc.flag))
			require.Equal(t, []string{"a,b", "c,d,e"}, lockSets(rep.Deadlocks))
			require.Equal(t, []string{"f,h"}, lockSets(rep.Protected))
			require.Equal(t, "gate", rep.Protected[0].Gate.Name)
			require.Equal(t, []string{"i,j"}, lockSets(rep.TrySafe))
		})
	}
}

// helgridPairs runs bin under valgrind's helgrind and returns the lock
// pairs of its lock-order violations, by data symbol, each sorted: "a,b".
func helgrindPairs(t *testing.T, bin string) []string {
	t.Helper()
	kvmtest.RequireTools(t, "valgrind")
	out, err := exec.Command("valgrind", "--tool=helgrind", bin).CombinedOutput()
	require.NoError(t, err, string(out))
	names := map[string]string{} // address (lower case hex) → data symbol
	for _, m := range regexp.MustCompile(`Address (0x[0-9a-f]+) is 0 bytes inside data symbol "([^"]+)"`).FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = m[2]
	}
	var pairs []string
	for _, m := range regexp.MustCompile(`lock order "(0x[0-9A-F]+) before (0x[0-9A-F]+)" violated`).FindAllStringSubmatch(string(out), -1) {
		x, y := names[strings.ToLower(m[1])], names[strings.ToLower(m[2])]
		require.NotEmpty(t, x, "helgrind did not name lock %s:\n%s", m[1], out)
		require.NotEmpty(t, y, "helgrind did not name lock %s:\n%s", m[2], out)
		pair := []string{x, y}
		slices.Sort(pair)
		pairs = append(pairs, strings.Join(pair, ","))
	}
	slices.Sort(pairs)
	return pairs
}

// reprise deadlock against valgrind's helgrind on the same program (the
// glibc build: helgrind intercepts the C library's pthread functions,
// which a static program does not let it do), point by point. helgrind
// reports every pairwise order violation it observes; reprise reports
// cycles, and knows gate locks, trylocks and read locks:
//
//	a,b    both: a two-lock inversion.
//	c,d,e  helgrind: c,e — the acquisition of c under e violates the
//	       order c before e, which c→d→e established; reprise: the whole
//	       three-thread cycle, whose locks include c and e.
//	f,h    helgrind reports it; reprise reports it protected by gate,
//	       which both threads hold (helgrind knows no gate locks).
//	i,j    helgrind reports the order the trylock broke; reprise calls
//	       the cycle safe, since a trylock never waits.
//	r,m    helgrind reports it; reprise does not: r is taken for reading
//	       on both sides, and readers do not exclude each other.
func TestDeadlockAgainstHelgrind(t *testing.T) {
	bin := cprog.Build(t, "gcc", "inversions", "-O1", "-g", "-pthread")
	hg := helgrindPairs(t, bin)
	require.Equal(t, []string{"a,b", "c,e", "f,h", "i,j", "m,r"}, hg, "helgrind's violations")
	rep := deadlockOf(t, bin)
	sets := map[string]string{} // reprise's verdict per lock set
	for verdict, cs := range map[string][]deadlock.Cycle{"deadlock": rep.Deadlocks, "protected": rep.Protected, "trylock-safe": rep.TrySafe} {
		for _, s := range lockSets(cs) {
			sets[s] = verdict
		}
	}
	verdict := func(pair string) string { // the reprise cycle holding both of helgrind's locks
		x, y, _ := strings.Cut(pair, ",")
		for s, v := range sets {
			if locks := strings.Split(s, ","); slices.Contains(locks, x) && slices.Contains(locks, y) {
				return s + " " + v
			}
		}
		return "none"
	}
	require.Equal(t, "a,b deadlock", verdict("a,b"))
	require.Equal(t, "c,d,e deadlock", verdict("c,e"))
	require.Equal(t, "f,h protected", verdict("f,h"))
	require.Equal(t, "i,j trylock-safe", verdict("i,j"))
	require.Equal(t, "none", verdict("m,r"))
	require.Len(t, sets, 4, "every reprise cycle is one of helgrind's pairs: %v", sets)
}

// lockstat on programs nobody here wrote. pigz -p 4 compresses with four
// compress threads and a write thread; every lock it takes is listed, by
// the file whose image holds it or by the call site that first took it
// (Debian strips pigz's symbols), and one count follows from its
// structure exactly: glibc takes its TLS lock (_rtld_global's
// dl_load_tls_lock) once in _dl_allocate_tls_init for every thread
// pthread_create starts, so five, one per thread besides main. sqlite3
// (its CLI on a script) takes libsqlite3's static mutexes, named after
// the library, and releases every one.
func TestLockstatOnPigzAndSqlite(t *testing.T) {
	kvmtest.RequireTools(t, "pigz", "sqlite3")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.bin")
	data := make([]byte, 2<<20) // 16 of pigz's 128 KiB blocks
	for i := range data {
		data[i] = byte(i * 7 % 251)
	}
	require.NoError(t, os.WriteFile(in, data, 0o644))
	_, rep, _ := lockstatOf(t, "/usr/bin/pigz", "--file", in+":/data/in.bin", "--", "-p", "4", "-c", "/data/in.bin")
	require.GreaterOrEqual(t, len(rep.Locks), 10, "pigz's locks: %v", names(rep))
	require.Len(t, rep.Threads, 6, "main, four compress threads and the write thread took locks")
	var tls *lockstat.Lock
	for _, l := range rep.Locks {
		require.NotRegexp(t, `^0x`, l.Name, "every lock has a name")
		if l.FirstSite != "" && strings.HasPrefix(l.FirstSite, "_dl_allocate_tls_init@") {
			tls = l
		}
	}
	require.NotNil(t, tls, "glibc's TLS lock: %v", names(rep))
	require.Equal(t, uint64(5), tls.Acquired, "one acquisition per thread pthread_create started")
	require.Equal(t, 0, rep.Unreleased)

	script := filepath.Join(dir, "q.sql")
	require.NoError(t, os.WriteFile(script, []byte("create table t(x); insert into t values(1),(2),(3); select sum(x) from t;\n"), 0o644))
	out, rep, _ := lockstatOf(t, "/usr/bin/sqlite3", "--stdin", script, "--")
	require.Contains(t, out, "6")
	require.NotEmpty(t, rep.Locks)
	lib := 0
	for _, l := range rep.Locks {
		if strings.Contains(l.Name, "libsqlite3.so") {
			lib++
		}
	}
	require.GreaterOrEqual(t, lib, 3, "libsqlite3's static mutexes, named after it: %v", names(rep))
	require.Equal(t, 0, rep.Unreleased)
}

// profileOf replays bin sampled every millisecond and returns reprise
// profile's report, per thread (its pprof file is written too).
func profileOf(t *testing.T, bin string, args ...string) *profile.Profile {
	t.Helper()
	_, db := replayedDB(t, []string{"--sample-period", "1ms"}, bin, args...)
	pr := runCLI(t, nil, "profile", "--json", "--per-thread", "--top", "0", "-o", filepath.Join(t.TempDir(), "p.pb.gz"), db)
	require.Equal(t, 0, pr.code, pr.stderr)
	var p profile.Profile
	require.NoError(t, json.Unmarshal([]byte(pr.stdout), &p), pr.stdout)
	return &p
}

// perfShares runs bin under perf record -e cpu-clock (a software clock:
// no PMU needed) on the host and returns perf report's self shares by
// symbol, in percent.
func perfShares(t *testing.T, bin string, args ...string) map[string]float64 {
	t.Helper()
	kvmtest.RequireTools(t, "perf")
	data := filepath.Join(t.TempDir(), "perf.data")
	rec := exec.Command("perf", append([]string{"record", "-e", "cpu-clock", "-o", data, "--", bin}, args...)...)
	if out, err := rec.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "perf_event_open") || strings.Contains(string(out), "Permission") {
			t.Skipf("perf cannot sample on this host (perf_event_open refused): %s", out)
		}
		require.NoError(t, err, string(out))
	}
	out, err := exec.Command("perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "sym").Output()
	require.NoError(t, err)
	shares := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^\s+([\d.]+)%\s+\[\.\]\s+(\S+)`).FindAllStringSubmatch(string(out), -1) {
		pct, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		shares[m[2]] += pct
	}
	return shares
}

// reprise profile against perf on the same program: a CPU-bound C
// program (built without frame pointers, as Debian builds) whose split
// between its functions is known by construction. perf record -e
// cpu-clock runs it on the host; reprise samples a replay of its
// recording every millisecond — the finest that lands here: a kick reaches
// a running vCPU at the host's next timer tick, 1 kHz — for about 3 s,
// 3,000 samples (perf takes 4,000 a second), so that a share's sampling
// error stays under a point. Every function above 5% in either has the
// same share in both within 3 percentage points, and each is within 3 of
// the program's own split. The call stacks come from the executable's
// and libc's .eh_frame: main's total includes its callees, down from
// __libc_start_main in libc.so.6.
func TestProfileAgainstPerf(t *testing.T) {
	bin := cprog.Build(t, "gcc", "split", "-O1", "-g", "-fomit-frame-pointer")
	p := profileOf(t, bin, "600")
	ours := map[string]float64{}
	for _, f := range p.Functions {
		ours[f.Function] = f.SelfPct
	}
	perf := perfShares(t, bin, "600")
	truth := map[string]float64{"alpha": 50, "beta": 30, "gamma_": 15, "main": 5}
	for fn := range truth {
		if ours[fn] < 5 && perf[fn] < 5 {
			continue
		}
		require.InDelta(t, perf[fn], ours[fn], 3, "%s: perf %.1f%%, reprise %.1f%%", fn, perf[fn], ours[fn])
		require.InDelta(t, truth[fn], ours[fn], 3, "%s: the program's split %.0f%%, reprise %.1f%%", fn, truth[fn], ours[fn])
	}
	t.Logf("self shares, perf against reprise: alpha %.1f/%.1f beta %.1f/%.1f gamma_ %.1f/%.1f main %.1f/%.1f (%d samples)",
		perf["alpha"], ours["alpha"], perf["beta"], ours["beta"], perf["gamma_"], ours["gamma_"], perf["main"], ours["main"], p.Samples)
	var mainTotal, libcStart float64
	for _, f := range p.Functions {
		switch f.Function {
		case "main":
			mainTotal = f.TotalPct
		case "__libc_start_main@libc.so.6":
			libcStart = f.TotalPct
		}
	}
	require.Greater(t, mainTotal, 95.0, "main's total: its callees' samples, unwound through them by CFI")
	require.Greater(t, libcStart, 95.0, "the stacks reach libc's __libc_start_main")
}

// reprise profile of pigz -p 4 (Debian's build: no frame pointers,
// pigz and zlib stripped), per thread: the stacks of its four compress
// threads, unwound through pigz, zlib and libc by their .eh_frame, run
// from start_thread@libc.so.6 down through deflate@libz.so.1 (how much of
// each thread's time depends on how the one vCPU shared out the work, so
// at least a fifth); the code zlib's symbols do not name is named by file
// and offset, as perf names it (libz.so.1+0x4a26).
func TestProfileOfPigzPerThread(t *testing.T) {
	kvmtest.RequireTools(t, "pigz")
	in := filepath.Join(t.TempDir(), "in.txt")
	text := make([]byte, 0, 8<<20)
	for x := uint64(1); len(text) < cap(text); {
		x = x*6364136223846793005 + 1442695040888963407
		text = strconv.AppendUint(text, x>>40, 16) // hex digits: compresses, slowly
	}
	require.NoError(t, os.WriteFile(in, text, 0o644))
	p := profileOf(t, "/usr/bin/pigz", "--file", in+":/data/in.txt", "--", "-p", "4", "-c", "/data/in.txt")
	total := func(th profile.ThreadProfile, fn string) float64 {
		for _, f := range th.Functions {
			if f.Function == fn {
				return f.TotalPct
			}
		}
		return 0
	}
	compress, byOffset := 0, false
	var shares []string
	for _, th := range p.Threads {
		shares = append(shares, fmt.Sprintf("thread %d: %.0f%% in deflate", th.Thread, total(th, "deflate@libz.so.1")))
		if total(th, "deflate@libz.so.1") >= 20 {
			compress++
			require.GreaterOrEqual(t, total(th, "start_thread@libc.so.6"), 90.0, "thread %d's stacks reach its start", th.Thread)
		}
		for _, f := range th.Functions {
			byOffset = byOffset || strings.HasPrefix(f.Function, "libz.so.1+0x")
		}
	}
	require.Equal(t, 4, compress, "the compress threads, deep in deflate: %v", shares)
	require.True(t, byOffset, "zlib's unnamed code is named by file and offset")
}
