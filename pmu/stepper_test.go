package pmu

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireAt checks that the simulator stands exactly at p: the same
// (branches, RIP, RCX) and the same true instruction count, so RunTo did not
// merely find a look-alike point.
func requireAt(t *testing.T, s *simCPU, p point, i int) {
	t.Helper()
	require.Equal(t, p.Target, s.point().Target, "target %d", i)
	require.Equal(t, p.executed, s.executed, "target %d: right tuple, wrong instruction", i)
}

// replay runs a fresh simulator to every point in order and checks each.
func replay(t *testing.T, p *program, pts []point, seed int64, tune func(*simCPU)) *simCPU {
	t.Helper()
	s := newSim(p, seed)
	if tune != nil {
		tune(s)
	}
	for i, pt := range pts {
		start := s.branches
		runs := s.overflowRuns
		require.NoError(t, RunTo(s, pt.Target, DefaultSkid), "target %d", i)
		requireAt(t, s, pt, i)
		if pt.Branches-start <= DefaultSkid {
			require.Equal(t, runs, s.overflowRuns, "target %d is within the margin: no overflow run", i)
		} else {
			require.Greater(t, s.overflowRuns, runs, "target %d is far: overflow run expected", i)
		}
	}
	return s
}

func TestRunToRecordedTargets(t *testing.T) {
	p := mainProgram()
	pts := record(p, 1, 400_000, 700)
	require.Greater(t, len(pts), 300)

	// The recorded targets must include the hard cases.
	var midShortRep, midLongRep, tight, zeroRep int
	for _, pt := range pts {
		switch pt.RIP {
		case p.rips[mainShortRep]:
			if pt.RCX != 7 {
				midShortRep++
			}
		case p.rips[mainLongRep]:
			if pt.RCX != 1000 {
				midLongRep++
			}
		case p.rips[mainTight]:
			tight++
		case p.rips[mainZeroRep]:
			zeroRep++
		}
	}
	require.Positive(t, midShortRep, "no target inside the short rep")
	require.Positive(t, midLongRep, "no target inside the long rep")
	require.Positive(t, tight, "no target inside the tight loop")

	s := replay(t, p, pts, 2, nil)
	t.Logf("%d targets (%d mid short rep, %d mid long rep, %d tight loop, %d zero rep): %d overflow runs, %d breakpoint runs, %d steps",
		len(pts), midShortRep, midLongRep, tight, zeroRep, s.overflowRuns, s.bpRuns, s.steps)
}

func TestRunToManySkidSeeds(t *testing.T) {
	p := mainProgram()
	pts := record(p, 3, 200_000, 2_000)
	for seed := int64(0); seed < 20; seed++ {
		replay(t, p, pts, seed, func(s *simCPU) { s.maxSkid = DefaultSkid - 1 })
	}
}

// TestRunToEarlyStops: the overflow run may be cut short by unrelated exits.
func TestRunToEarlyStops(t *testing.T) {
	p := mainProgram()
	pts := record(p, 4, 200_000, 1_000)
	s := newSim(p, 5)
	s.earlyStop = 0.5
	for i, pt := range pts {
		require.NoError(t, RunTo(s, pt.Target, DefaultSkid), "target %d", i)
		requireAt(t, s, pt, i)
	}
}

func TestRunToRandomPrograms(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	for n := 0; n < 200; n++ {
		p := randomProgram(rng)
		pts := record(p, int64(n), 20_000, 1+rng.Intn(300))
		s := newSim(p, int64(n))
		s.maxSkid = uint64(rng.Intn(DefaultSkid))
		for i, pt := range pts {
			require.NoError(t, RunTo(s, pt.Target, DefaultSkid), "program %d target %d", n, i)
			requireAt(t, s, pt, i)
		}
	}
}

// TestRunToCloseTargets: consecutive targets a few instructions apart are
// reached with breakpoints and steps only.
func TestRunToCloseTargets(t *testing.T) {
	p := mainProgram()
	pts := record(p, 7, 30_000, 3)
	s := replay(t, p, pts, 8, nil)
	require.Zero(t, s.overflowRuns)
}

func TestRunToSkidBeyondMargin(t *testing.T) {
	p := mainProgram()
	pts := record(p, 9, 200_000, 500)

	t.Run("fixed", func(t *testing.T) {
		for i, pt := range pts {
			if pt.Branches <= DefaultSkid {
				continue
			}
			s := newSim(p, 10)
			s.fixedSkid = DefaultSkid + 50
			err := RunTo(s, pt.Target, DefaultSkid)
			var div *DivergenceError
			require.ErrorAs(t, err, &div, "target %d", i)
			require.Contains(t, div.Why, "overflow skid exceeded margin")
			require.Equal(t, pt.Target, div.Target)
			require.Equal(t, s.branches, div.Branches)
		}
	})

	// With a skid that only sometimes exceeds the margin, every outcome is
	// either the exact point or a divergence: never a wrong stop.
	t.Run("random", func(t *testing.T) {
		var ok, diverged int
		for i, pt := range pts {
			s := newSim(p, int64(i))
			s.maxSkid = 3 * DefaultSkid
			err := RunTo(s, pt.Target, DefaultSkid)
			if err == nil {
				requireAt(t, s, pt, i)
				ok++
				continue
			}
			var div *DivergenceError
			require.ErrorAs(t, err, &div, "target %d", i)
			diverged++
		}
		require.Positive(t, ok)
		require.Positive(t, diverged)
	})
}

func TestRunToTargetAlreadyPassed(t *testing.T) {
	p := mainProgram()
	pts := record(p, 11, 100_000, 200)
	require.Greater(t, len(pts), 10)

	s := newSim(p, 12)
	require.NoError(t, RunTo(s, pts[10].Target, DefaultSkid))
	err := RunTo(s, pts[2].Target, DefaultSkid)
	var div *DivergenceError
	require.ErrorAs(t, err, &div)
	require.Contains(t, div.Why, "already passed")
	require.Equal(t, pts[10].Target, Target{Branches: div.Branches, RIP: div.RIP, RCX: div.RCX})
}

// TestRunToPassedWithinBranchCount: the same branch count, the same rep
// instruction, but an iteration already done (higher RCX): RunTo must notice
// when the count moves past, not stop somewhere else.
func TestRunToPassedWithinBranchCount(t *testing.T) {
	p := mainProgram()
	s := newSim(p, 13)
	for !(s.pc == mainLongRep && s.rcx == 500) {
		s.exec()
	}
	passed := s.point().Target
	passed.RCX = 600
	err := RunTo(s, passed, DefaultSkid)
	var div *DivergenceError
	require.ErrorAs(t, err, &div)
	require.Contains(t, div.Why, "passed the target branch count")
	require.Greater(t, div.Branches, passed.Branches)
}

func TestRunToNeverReached(t *testing.T) {
	t.Run("program halts before the target RIP", func(t *testing.T) {
		p := newProgram([]insn{plain(), jcc(1, 50), hlt()})
		s := newSim(p, 14)
		err := RunTo(s, Target{Branches: 50, RIP: 0xdead}, DefaultSkid)
		var div *DivergenceError
		require.ErrorAs(t, err, &div)
		require.Contains(t, div.Why, "breakpoint runs")
		require.Equal(t, DefaultLimits.BreakpointRuns, s.bpRuns)
	})
	t.Run("loop never visits the target RIP", func(t *testing.T) {
		p := newProgram([]insn{plain(), plain(), jcc(0, 1<<40)})
		s := newSim(p, 15)
		s.fuel = 1000
		err := RunTo(s, Target{Branches: 10_000, RIP: 0xdead}, DefaultSkid)
		var div *DivergenceError
		require.ErrorAs(t, err, &div)
		require.Contains(t, div.Why, "passed the target branch count")
	})
	t.Run("no branches at all: overflow never comes", func(t *testing.T) {
		p := newProgram([]insn{plain(), jmp(0)})
		s := newSim(p, 16)
		s.fuel = 1000
		err := RunToWithLimits(s, Target{Branches: 10_000, RIP: p.rips[0]}, DefaultSkid, &Limits{OverflowRuns: 5})
		var div *DivergenceError
		require.ErrorAs(t, err, &div)
		require.Contains(t, div.Why, "after 5 overflow runs")
		require.Equal(t, 5, s.overflowRuns)
	})
	t.Run("no branches at all: breakpoint never hit", func(t *testing.T) {
		p := newProgram([]insn{plain(), jmp(0), plain()})
		s := newSim(p, 17)
		s.fuel = 1000
		err := RunToWithLimits(s, Target{Branches: 0, RIP: p.rips[2]}, DefaultSkid, &Limits{BreakpointRuns: 7})
		var div *DivergenceError
		require.ErrorAs(t, err, &div)
		require.Contains(t, div.Why, "after 7 breakpoint runs")
	})
	t.Run("RCX never matches", func(t *testing.T) {
		p := newProgram([]insn{movRCX(1000), rep(), jmp(0)})
		s := newSim(p, 18)
		err := RunToWithLimits(s, Target{Branches: 0, RIP: p.rips[1], RCX: 5000}, DefaultSkid, &Limits{Steps: 10_000})
		var div *DivergenceError
		require.ErrorAs(t, err, &div)
		require.Contains(t, div.Why, "after 10000 steps")
	})
}

// failingCPU fails one method; RunTo must return its error wrapped.
type failingCPU struct {
	simCPU
	fail string
}

var errSim = errors.New("simulated failure")

func (f *failingCPU) Branches() (uint64, error) {
	if f.fail == "Branches" {
		return 0, errSim
	}
	return f.simCPU.Branches()
}

func (f *failingCPU) RunToOverflow(at uint64) error {
	if f.fail == "RunToOverflow" {
		return errSim
	}
	return f.simCPU.RunToOverflow(at)
}

func (f *failingCPU) RunToBreakpoint(rip uint64) error {
	if f.fail == "RunToBreakpoint" {
		return errSim
	}
	return f.simCPU.RunToBreakpoint(rip)
}

func (f *failingCPU) Step() error {
	if f.fail == "Step" {
		return errSim
	}
	return f.simCPU.Step()
}

func TestRunToCPUErrors(t *testing.T) {
	p := mainProgram()
	for _, tc := range []struct {
		fail string
		t    Target
	}{
		{"Branches", Target{Branches: 10}},
		{"RunToOverflow", Target{Branches: 10_000, RIP: p.rips[3]}},
		{"RunToBreakpoint", Target{Branches: 10, RIP: p.rips[3]}},
		{"Step", Target{Branches: 0, RIP: p.rips[0], RCX: 1}},
	} {
		f := &failingCPU{simCPU: *newSim(p, 19), fail: tc.fail}
		err := RunTo(f, tc.t, DefaultSkid)
		require.ErrorIs(t, err, errSim, tc.fail)
		require.Contains(t, err.Error(), "pmu: ", tc.fail)
	}
}

func TestDivergenceErrorMessage(t *testing.T) {
	err := &DivergenceError{Target: Target{Branches: 10, RIP: 0x401000, RCX: 3}, Branches: 12, RIP: 0x401002, Why: "passed"}
	require.Equal(t, "pmu: diverged: target branches=10 rip=0x401000 rcx=0x3, stopped at branches=12 rip=0x401002 rcx=0x0: passed", err.Error())
}
