package profile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/tooltest"
	reprof "github.com/reprise-vm/reprise/tools/profile"
)

// The hand-built DB's image: functions 0x100 bytes apart and a data
// symbol.
var testSymbols = []eventdb.Symbol{
	{Name: "main", Addr: 0x1000, Size: 0x100, Func: true},
	{Name: "run", Addr: 0x1100, Size: 0x100, Func: true},
	{Name: "a", Addr: 0x1200, Size: 0x100, Func: true},
	{Name: "b", Addr: 0x1300, Size: 0x100, Func: true},
	{Name: "rec", Addr: 0x1400, Size: 0x100, Func: true},
	{Name: "table", Addr: 0x2000, Size: 0x100},
}

// testSample is a sample repeated n times.
type testSample struct {
	n      int
	thread uint32
	addr   uint64
	stack  []uint64
}

var testSamples = []testSample{
	{3, 1, 0x1210, []uint64{0x1120, 0x1030}},                 // main > run > a
	{2, 1, 0x1310, []uint64{0x1140, 0x1030}},                 // main > run > b
	{1, 2, 0x1408, []uint64{0x1450, 0x1450, 0x1160, 0x1030}}, // main > run > rec > rec > rec
	// A call in b's last bytes returns to rec's first byte: the frame is b's.
	{1, 1, 0x9000, []uint64{0x1400, 0x1030}}, // main > b > (no symbol)
	{1, 0, 0x2008, nil},                      // a data symbol is no function
}

// newTestDB returns a DB holding testSymbols and, as run 1, testSamples;
// run 2 has a probe event and no samples.
func newTestDB(t *testing.T) *eventdb.DB {
	t.Helper()
	db, err := eventdb.Open(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	require.NoError(t, db.SetSymbols(eventdb.NewSymbols("test-image", testSymbols)))
	_, in, err := db.NewRun("test.tape", nil, "every 1000 user-mode branch counts (deterministic)")
	require.NoError(t, err)
	pos := uint64(0)
	for _, s := range testSamples {
		for range s.n {
			pos++
			require.NoError(t, in.Add(&eventdb.Event{Kind: eventdb.KindSample, Thread: s.thread,
				Pos: eventdb.Position{Exit: pos}, Addr: s.addr, Stack: s.stack}))
		}
	}
	require.NoError(t, in.Finish())
	probe := []eventdb.Probe{{ID: 1, Name: "p", Symbol: "a", Addr: 0x1200}}
	_, in, err = db.NewRun("test.tape", probe, "")
	require.NoError(t, err)
	require.NoError(t, in.Add(&eventdb.Event{Kind: eventdb.KindProbeEntry, Thread: 1, Probe: 1, Addr: 0x1200}))
	require.NoError(t, in.Finish())
	return db
}

// fs builds the expected FuncStats of a profile of whole samples.
func fs(whole float64, rows ...any) []reprof.FuncStat {
	var out []reprof.FuncStat
	for i := 0; i < len(rows); i += 3 {
		self, total := rows[i+1].(int), rows[i+2].(int)
		out = append(out, reprof.FuncStat{Function: rows[i].(string), Self: uint64(self), SelfPct: 100 * float64(self) / whole,
			Total: uint64(total), TotalPct: 100 * float64(total) / whole})
	}
	return out
}

func TestBuildCounts(t *testing.T) {
	db := newTestDB(t)
	p, err := reprof.Build(db, reprof.Options{CallGraph: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Run, "run 2 is later but has no samples")
	require.EqualValues(t, 8, p.Samples)
	require.Equal(t, fs(8,
		"a", 3, 3, "b", 2, 3,
		"0x2008", 1, 1, "0x9000", 1, 1, "rec", 1, 1,
		"main", 0, 7, "run", 0, 6), p.Functions)

	require.Len(t, p.Threads, 3)
	require.Equal(t, reprof.ThreadProfile{Thread: 0, Samples: 1, Pct: 100.0 / 8, Functions: fs(1, "0x2008", 1, 1)}, p.Threads[0])
	require.Equal(t, reprof.ThreadProfile{Thread: 1, Samples: 6, Pct: 600.0 / 8, Functions: fs(6,
		"a", 3, 3, "b", 2, 3, "0x9000", 1, 1, "main", 0, 6, "run", 0, 5)}, p.Threads[1])
	require.Equal(t, reprof.ThreadProfile{Thread: 2, Samples: 1, Pct: 100.0 / 8, Functions: fs(1,
		"rec", 1, 1, "main", 0, 1, "run", 0, 1)}, p.Threads[2])

	edge := func(caller, callee string, n int) reprof.Edge {
		return reprof.Edge{Caller: caller, Callee: callee, Samples: uint64(n), Pct: 100 * float64(n) / 8}
	}
	require.Equal(t, []reprof.Edge{
		edge("main", "run", 6), edge("run", "a", 3), edge("run", "b", 2),
		edge("b", "0x9000", 1), edge("main", "b", 1), edge("rec", "rec", 1), edge("run", "rec", 1),
	}, p.CallGraph)

	p, err = reprof.Build(db, reprof.Options{})
	require.NoError(t, err)
	require.Nil(t, p.CallGraph, "no call graph unless asked for")
}

func TestBuildOneThread(t *testing.T) {
	db := newTestDB(t)
	two := uint32(2)
	p, err := reprof.Build(db, reprof.Options{Run: 1, Thread: &two})
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Samples)
	require.Equal(t, fs(1, "rec", 1, 1, "main", 0, 1, "run", 0, 1), p.Functions)
	require.Equal(t, []reprof.ThreadProfile{{Thread: 2, Samples: 1, Pct: 100, Functions: p.Functions}}, p.Threads)

	zero := uint32(0)
	p, err = reprof.Build(db, reprof.Options{Thread: &zero})
	require.NoError(t, err, "thread 0 (idle / kernel) can be selected")
	require.EqualValues(t, 1, p.Samples)
}

func TestBuildErrors(t *testing.T) {
	db := newTestDB(t)
	_, err := reprof.Build(db, reprof.Options{Run: 7})
	require.ErrorIs(t, err, eventdb.ErrNoRun)
	_, err = reprof.Build(db, reprof.Options{Run: 2})
	require.ErrorIs(t, err, reprof.ErrNoSamples)
	require.ErrorContains(t, err, "run 2")
	five := uint32(5)
	_, err = reprof.Build(db, reprof.Options{Thread: &five})
	require.ErrorIs(t, err, reprof.ErrNoSamples)
	require.ErrorContains(t, err, "thread 5")

	bare, err := eventdb.Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer bare.Close()
	_, err = reprof.Build(bare, reprof.Options{})
	require.ErrorIs(t, err, eventdb.ErrNoSymbols)
	require.NoError(t, bare.SetSymbols(eventdb.NewSymbols("test-image", testSymbols)))
	_, err = reprof.Build(bare, reprof.Options{})
	require.ErrorIs(t, err, eventdb.ErrNoSuitableRun, "a DB without runs")
}

// addCut adds a run with samples whose replay stopped early: its ingest
// was closed, never finished.
func addCut(t *testing.T, db *eventdb.DB, samples int) uint32 {
	t.Helper()
	run, in, err := db.NewRun("test.tape", nil, "every 1000 user-mode branch counts (deterministic)")
	require.NoError(t, err)
	for i := range samples {
		require.NoError(t, in.Add(&eventdb.Event{Kind: eventdb.KindSample, Thread: 1,
			Pos: eventdb.Position{Exit: uint64(i + 1)}, Addr: 0x1210, Stack: []uint64{0x1120, 0x1030}}))
	}
	require.NoError(t, in.Close())
	return run.ID
}

// An incomplete run holds only the events before its replay stopped: it
// is profiled only when named, and the profile says so.
func TestBuildSkipsIncompleteRuns(t *testing.T) {
	db := newTestDB(t)
	cut := addCut(t, db, 4)
	p, err := reprof.Build(db, reprof.Options{})
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Run, "the latest complete run with samples")
	require.False(t, p.Incomplete)
	require.Equal(t, []uint32{cut}, p.SkippedIncomplete)
	var js bytes.Buffer
	require.NoError(t, p.WriteJSON(&js, 0))
	require.Contains(t, js.String(), `"skipped_incomplete": [`)

	p, err = reprof.Build(db, reprof.Options{Run: cut})
	require.NoError(t, err)
	require.Equal(t, cut, p.Run)
	require.True(t, p.Incomplete)
	require.Nil(t, p.SkippedIncomplete)
	require.EqualValues(t, 4, p.Samples)
	js.Reset()
	require.NoError(t, p.WriteJSON(&js, 0))
	require.Contains(t, js.String(), `"incomplete": true`)

	empty := addCut(t, db, 0)
	_, err = reprof.Build(db, reprof.Options{Run: empty})
	require.ErrorIs(t, err, reprof.ErrNoSamples)
	require.ErrorContains(t, err, "incomplete")

	// Without a complete run that has samples, the error says why of
	// every run.
	only, err := eventdb.Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer only.Close()
	require.NoError(t, only.SetSymbols(eventdb.NewSymbols("test-image", testSymbols)))
	_, in, err := only.NewRun("t.tape", nil, "")
	require.NoError(t, err)
	require.NoError(t, in.Finish())
	addCut(t, only, 4)
	_, err = reprof.Build(only, reprof.Options{})
	require.ErrorIs(t, err, eventdb.ErrNoSuitableRun)
	require.ErrorContains(t, err, "run 2 is incomplete; run 1: profile: no samples: replayed without sampling")
}

func TestWriteText(t *testing.T) {
	db := newTestDB(t)
	p, err := reprof.Build(db, reprof.Options{CallGraph: true})
	require.NoError(t, err)
	const head = `profile: run 1, all threads, 8 samples, sampled every 1000 user-mode branch counts (deterministic)

functions by self samples (top 2 of 7)
rank  function  self  self%  total  total%
   1  a            3  37.5%      3   37.5%
   2  b            2  25.0%      3   37.5%
`
	const callGraph = `
call graph: caller → callee (top 2 of 7)
caller  callee  samples      %
main    run           6  75.0%
run     a             3  37.5%
`
	var b bytes.Buffer
	require.NoError(t, p.WriteText(&b, 2, false))
	require.Equal(t, head+callGraph, b.String())

	b.Reset()
	require.NoError(t, p.WriteText(&b, 2, true))
	require.Equal(t, head+`
thread 0: 1 samples, 12.5%
rank  function  self   self%  total  total%
   1  0x2008       1  100.0%      1  100.0%

thread 1: 6 samples, 75.0% (top 2 of 5)
rank  function  self  self%  total  total%
   1  a            3  50.0%      3   50.0%
   2  b            2  33.3%      3   50.0%

thread 2: 1 samples, 12.5% (top 2 of 3)
rank  function  self   self%  total  total%
   1  rec          1  100.0%      1  100.0%
   2  main         0    0.0%      1  100.0%
`+callGraph, b.String())

	// With one thread, its table would repeat the profile's.
	two := uint32(2)
	one, err := reprof.Build(db, reprof.Options{Thread: &two})
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, one.WriteText(&b, 0, true))
	require.Equal(t, `profile: run 1, thread 2, 1 samples, sampled every 1000 user-mode branch counts (deterministic)

functions by self samples
rank  function  self   self%  total  total%
   1  rec          1  100.0%      1  100.0%
   2  main         0    0.0%      1  100.0%
   3  run          0    0.0%      1  100.0%
`, b.String())

	b.Reset()
	require.NoError(t, p.WriteJSON(&b, 1))
	var back reprof.Profile
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	require.Equal(t, p.Functions[:1], back.Functions)
	require.Equal(t, p.CallGraph[:1], back.CallGraph)
	require.Len(t, back.Threads, 3)
	require.EqualValues(t, 8, back.Samples)
}

func TestWritePprof(t *testing.T) {
	p, err := reprof.Build(newTestDB(t), reprof.Options{})
	require.NoError(t, err)
	pp := pprofRoundTrip(t, p)
	require.Len(t, pp.Sample, len(testSamples), "one pprof sample per distinct stack")
	// Each sample as "thread: value: leaf < callers…".
	var got []string
	for _, s := range pp.Sample {
		var names []string
		for _, l := range s.Location {
			names = append(names, l.Line[0].Function.Name)
		}
		got = append(got, fmt.Sprintf("%s: %d: %s", strings.Join(s.Label["thread"], ","), s.Value[0], strings.Join(names, " < ")))
	}
	slices.Sort(got)
	require.Equal(t, []string{
		"0: 1: 0x2008",
		"1: 1: 0x9000 < b < main",
		"1: 2: b < run < main",
		"1: 3: a < run < main",
		"2: 1: rec < rec < rec < run < main",
	}, got)
	if top := pprofTop(t, p); top != nil {
		require.Equal(t, []string{"a", "b"}, top[:2])
	}
}

// pprofRoundTrip writes p as pprof and parses it back.
func pprofRoundTrip(t *testing.T, p *reprof.Profile) *profile.Profile {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, p.WritePprof(&b))
	pp, err := profile.Parse(&b)
	require.NoError(t, err)
	require.Equal(t, "samples", pp.SampleType[0].Type)
	require.Equal(t, "count", pp.SampleType[0].Unit)
	return pp
}

// pprofTop writes p to a file and returns the functions `go tool pprof
// -top` lists, in its order, or nil without a go command.
func pprofTop(t *testing.T, p *reprof.Profile) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Log("no go command: go tool pprof not tried")
		return nil
	}
	path := filepath.Join(t.TempDir(), "profile.pb.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, p.WritePprof(f))
	require.NoError(t, f.Close())
	out, err := exec.Command(gobin, "tool", "pprof", "-top", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// Rows follow the "flat  flat%  sum%  cum  cum%" header; the name is
	// the rest of the row after those five fields.
	var names []string
	rows := false
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 5 && fields[0] == "flat":
			rows = true
		case rows && len(fields) >= 6:
			names = append(names, strings.Join(fields[5:], " "))
		}
	}
	require.NotEmpty(t, names, "go tool pprof -top printed no rows:\n%s", out)
	return names
}

// Shares of the profile workload's samples may differ from its ground
// truth by this many percentage points. The workload's units are equal
// loops and a sample falls every samplePeriod basic blocks, a period
// prime to the unit's and round's lengths so that samples do not alias
// with the call pattern; besides sampling noise (~0.5 points for ~8000
// samples), about 0.3% of the blocks are prof_run's loop and the calls.
const (
	tolerance    = 3.0
	samplePeriod = 1009
	workload     = "profile rounds=200 unit=2000" // 8 M basic blocks, ~8000 samples
)

// The profile workload, recorded and replayed with deterministic sampling,
// shows the shares its ground truth states.
func TestProfileWorkload(t *testing.T) {
	r := tooltest.Replay(t, workload, tooltest.Options{SampleEvery: samplePeriod})
	truths, db := r.Truths, r.DB
	require.Equal(t, "ok", guest.Result(truths)["result"])

	p, err := reprof.Build(db, reprof.Options{CallGraph: true})
	require.NoError(t, err)
	require.Greater(t, p.Samples, uint64(5000))
	stats := map[string]reprof.FuncStat{}
	for _, f := range p.Functions {
		stats[f.Function] = f
	}
	for _, truth := range guest.Select(truths, "caller", "prof_run") {
		require.Contains(t, stats, truth["func"])
	}
	for _, truth := range truths {
		name, ok := truth["func"]
		if !ok {
			continue
		}
		f := stats[name]
		t.Logf("%s: self %.1f%% (truth %s%%), total %.1f%% (truth %s%%)", name, f.SelfPct, truth["self_pct"], f.TotalPct, truth["total_pct"])
		require.InDelta(t, atof(t, truth["self_pct"]), f.SelfPct, tolerance, "%s self", name)
		require.InDelta(t, atof(t, truth["total_pct"]), f.TotalPct, tolerance, "%s total", name)
		require.True(t, hasEdge(p.CallGraph, truth["caller"], name), "no edge %s → %s", truth["caller"], name)
	}
	var rank []string
	for _, f := range p.Functions[:4] {
		rank = append(rank, f.Function)
	}
	require.Equal(t, []string{"prof_a", "prof_b", "prof_c", "prof_d"}, rank, "ranked by self samples")
	require.True(t, hasEdge(p.CallGraph, "prof_run", "prof_c"))
	require.True(t, hasEdge(p.CallGraph, "prof_c", "prof_d"))

	pp := pprofRoundTrip(t, p)
	var total int64
	for _, s := range pp.Sample {
		total += s.Value[0]
	}
	require.EqualValues(t, p.Samples, total)
	if top := pprofTop(t, p); top != nil {
		require.Equal(t, "prof_a", top[0])
	}
}

// The shapes workload's functions do equal units of work through code of
// different shapes — a loop of one step an iteration, a loop of 32, a
// recursion 16 calls deep, straight-line code — so that a count of the
// register counter stands for one step in one function and 256 in
// another. Weighed by the cycles each sampled count stands for, the
// samples give every function the share of time its construction says,
// to within a point.
func TestShapesWorkload(t *testing.T) {
	r := tooltest.Replay(t, "shapes rounds=20000", tooltest.Options{SampleEvery: samplePeriod}) // ~21 500 samples
	require.Equal(t, "ok", guest.Result(r.Truths)["result"])
	p, err := reprof.Build(r.DB, reprof.Options{CallGraph: true})
	require.NoError(t, err)
	require.True(t, p.Weighted)
	stats := map[string]reprof.FuncStat{}
	for _, f := range p.Functions {
		stats[f.Function] = f
	}
	funcs := 0
	for _, truth := range r.Truths {
		name, ok := truth["func"]
		if !ok {
			continue
		}
		funcs++
		f := stats[name]
		t.Logf("%s (%s): self %.2f%% (construction %s%%) from %d samples", name, truth["shape"], f.SelfPct, truth["self_pct"], f.Self)
		require.InDelta(t, atof(t, truth["self_pct"]), f.SelfPct, 1.0, "%s self", name)
	}
	require.Equal(t, 4, funcs)
	require.True(t, hasEdge(p.CallGraph, "shape_deep", "shape_deep"), "the recursion is on the sampled stacks")

	pp := pprofRoundTrip(t, p)
	require.Equal(t, "cycles", pp.SampleType[1].Type, "the estimated cycles beside the samples")
	require.Equal(t, "cycles", pp.DefaultSampleType)
	if top := pprofTop(t, p); top != nil {
		require.Equal(t, []string{"shape_tight", "shape_long", "shape_deep", "shape_flat"}, top[:4], "ranked by estimated time")
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}

func hasEdge(edges []reprof.Edge, caller, callee string) bool {
	return slices.ContainsFunc(edges, func(e reprof.Edge) bool { return e.Caller == caller && e.Callee == callee })
}
