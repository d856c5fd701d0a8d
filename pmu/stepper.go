package pmu

import (
	"fmt"
)

// Target is an exact execution point: the number of guest conditional
// branches retired before it, and RIP and RCX there. RIP alone repeats in
// loops; the branch count tells loop iterations apart; RCX tells apart the
// iterations of a rep string instruction, which stays at one RIP and retires
// no branch per iteration.
type Target struct {
	Branches, RIP, RCX uint64
}

// CPU is what the stepper needs from a stopped vCPU. Every method is called
// with the vCPU stopped and returns with it stopped.
type CPU interface {
	// Branches is the number of conditional branches the guest has retired
	// so far.
	Branches() (uint64, error)
	// Regs returns RIP and RCX.
	Regs() (rip, rcx uint64, err error)
	// RunToOverflow resumes the guest until the counter overflows at or
	// after at (the real hardware stops late by an unknown skid) or
	// something else stops it; it returns when stopped.
	RunToOverflow(at uint64) error
	// RunToBreakpoint resumes until execution reaches rip (a breakpoint
	// there), then stops with RIP == rip, before executing it. If RIP is
	// already rip it may return at once without executing anything (an int3
	// there fires again): RunTo steps off the site first. It may also return
	// early when something else stops the guest (an exit, a kick, a backstop
	// overflow); RunTo re-reads the state after every return.
	RunToBreakpoint(rip uint64) error
	// Step executes exactly one instruction (for rep string instructions:
	// one iteration).
	Step() error
}

// DivergenceError says the guest did not reach the target: the replay no
// longer follows the recording, or the counter misbehaved. Branches, RIP and
// RCX are where the vCPU stopped.
type DivergenceError struct {
	Target             Target
	Branches, RIP, RCX uint64
	Why                string
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("pmu: diverged: target branches=%d rip=%#x rcx=%#x, stopped at branches=%d rip=%#x rcx=%#x: %s",
		e.Target.Branches, e.Target.RIP, e.Target.RCX, e.Branches, e.RIP, e.RCX, e.Why)
}

// DefaultSkid is how many branches early the overflow is programmed. An
// overflow interrupt arrives after the counter passes the programmed value by
// a few events (the PMI is delivered late and the guest keeps retiring
// instructions until the VM exit). rr uses a margin of 100 on Intel cores up
// to Rocket Lake and 125 on later ones (its PmuConfig skid_size) and treats
// an overshoot there as a fatal error, so on Intel the margin is trusted as
// a bound; a larger margin would only cost more breakpoint hits. AMD Zen's skid is effectively unbounded (rr uses
// 10000 and still sees rare overshoots): use Event.Skid, which carries the
// per-microarchitecture margin.
const DefaultSkid = 100

// Limits bounds the work RunTo does before giving up with a DivergenceError,
// so a target that is never reached ends in a report, not a hang. Zero
// fields mean the defaults; a nil *Limits means all defaults.
type Limits struct {
	// OverflowRuns bounds the RunToOverflow calls (more than one only when
	// something other than the overflow stops the guest).
	OverflowRuns int
	// BreakpointRuns bounds the RunToBreakpoint calls: one per visit of the
	// target RIP before the target, so roughly the skid margin in a loop
	// that retires one branch per iteration.
	BreakpointRuns int
	// Steps bounds the single steps: one per visit of the target RIP, plus
	// one per rep iteration when the target is inside a rep instruction.
	Steps int
}

// DefaultLimits are the bounds a nil *Limits stands for.
var DefaultLimits = Limits{OverflowRuns: 1 << 10, BreakpointRuns: 1 << 16, Steps: 1 << 20}

func (l *Limits) withDefaults() Limits {
	r := DefaultLimits
	if l == nil {
		return r
	}
	if l.OverflowRuns > 0 {
		r.OverflowRuns = l.OverflowRuns
	}
	if l.BreakpointRuns > 0 {
		r.BreakpointRuns = l.BreakpointRuns
	}
	if l.Steps > 0 {
		r.Steps = l.Steps
	}
	return r
}

// RunTo brings a stopped vCPU to exactly t, with the overflow programmed
// skid branches early, within DefaultLimits. See RunToWithLimits.
func RunTo(cpu CPU, t Target, skid uint64) error {
	return RunToWithLimits(cpu, t, skid, nil)
}

// RunToWithLimits brings a stopped vCPU to exactly t: branches ==
// t.Branches, RIP == t.RIP and RCX == t.RCX, before the instruction at RIP
// executes. It works in two phases, as rr does:
//
//  1. Coarse: while the target is more than skid branches away, program the
//     counter to overflow at t.Branches-skid and run. The overflow stops the
//     guest late by the hardware skid; as long as that is below the margin
//     the guest stops before the target. Stopping past it means the skid
//     exceeded the margin, reported as a divergence (never a wrong stop).
//  2. Exact: repeat until the state equals t:
//     - branches > t.Branches: the target was passed, a divergence;
//     - RIP == t.RIP but the state differs: an earlier visit of the target
//     instruction (a loop iteration with fewer branches) or an earlier
//     iteration of a rep instruction (RCX differs): Step once, which
//     both advances a rep by one iteration and moves off the breakpoint;
//     - otherwise: RunToBreakpoint(t.RIP). This covers both fewer branches
//     (loops ahead) and equal branches with RIP elsewhere (straight-line
//     code before the target, where a breakpoint is cheaper than steps).
//
// Each kind of resumption is bounded by lim (nil means DefaultLimits); when a
// bound is exhausted RunTo reports a DivergenceError instead of looping. A
// target already passed when RunTo is called is a DivergenceError at once.
// Errors from cpu are returned wrapped.
func RunToWithLimits(cpu CPU, t Target, skid uint64, lim *Limits) error {
	l := lim.withDefaults()
	s := stepper{cpu: cpu, t: t}
	if err := s.read(); err != nil {
		return err
	}
	if s.branches > t.Branches {
		return s.diverged("target already passed")
	}

	// Phase 1: overflow a little early.
	for runs := 0; s.branches < t.Branches && t.Branches-s.branches > skid; runs++ {
		if runs == l.OverflowRuns {
			return s.diverged(fmt.Sprintf("still %d branches short after %d overflow runs", t.Branches-s.branches, runs))
		}
		at := t.Branches - skid
		if err := cpu.RunToOverflow(at); err != nil {
			return fmt.Errorf("pmu: run to overflow at %d branches: %w", at, err)
		}
		if err := s.read(); err != nil {
			return err
		}
		if s.branches > t.Branches {
			return s.diverged(fmt.Sprintf("overflow skid exceeded margin: programmed at %d, margin %d, stopped %d branches past the target",
				at, skid, s.branches-t.Branches))
		}
	}

	// Phase 2: breakpoint and step to the exact point.
	bpRuns, steps := 0, 0
	for {
		switch {
		case s.branches > t.Branches:
			return s.diverged(fmt.Sprintf("passed the target branch count (after %d breakpoint runs, %d steps)", bpRuns, steps))
		case s.branches == t.Branches && s.rip == t.RIP && s.rcx == t.RCX:
			return nil
		case s.rip == t.RIP:
			if steps == l.Steps {
				return s.diverged(fmt.Sprintf("not reached after %d steps", steps))
			}
			steps++
			if err := cpu.Step(); err != nil {
				return fmt.Errorf("pmu: step at rip %#x: %w", s.rip, err)
			}
		default:
			if bpRuns == l.BreakpointRuns {
				return s.diverged(fmt.Sprintf("not reached after %d breakpoint runs", bpRuns))
			}
			bpRuns++
			if err := cpu.RunToBreakpoint(t.RIP); err != nil {
				return fmt.Errorf("pmu: run to breakpoint at rip %#x: %w", t.RIP, err)
			}
		}
		if err := s.read(); err != nil {
			return err
		}
	}
}

// stepper holds the last state read from the CPU.
type stepper struct {
	cpu                CPU
	t                  Target
	branches, rip, rcx uint64
}

func (s *stepper) read() error {
	b, err := s.cpu.Branches()
	if err != nil {
		return fmt.Errorf("pmu: read branch count: %w", err)
	}
	rip, rcx, err := s.cpu.Regs()
	if err != nil {
		return fmt.Errorf("pmu: read registers: %w", err)
	}
	s.branches, s.rip, s.rcx = b, rip, rcx
	return nil
}

func (s *stepper) diverged(why string) error {
	return &DivergenceError{Target: s.t, Branches: s.branches, RIP: s.rip, RCX: s.rcx, Why: why}
}
