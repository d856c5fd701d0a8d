package pmu

import (
	"math/rand"
)

// This file is a simulated vCPU for testing RunTo: it executes a synthetic
// program and counts retired conditional branches, and its overflow stops
// late by a random skid, like the hardware.

type opKind int

const (
	opPlain opKind = iota // falls through; loads RCX if loadRCX
	opJcc                 // conditional branch, retires one branch event
	opJmp                 // unconditional jump: retires no conditional branch
	opRep                 // rep string instruction: one iteration per RCX
	opHlt                 // stops the program for good
)

// insn is one synthetic instruction.
type insn struct {
	kind    opKind
	len     uint64 // bytes, to give RIPs a realistic spread
	target  int    // opJcc, opJmp: index of the branch target
	trip    uint64 // opJcc: taken trip-1 times, then falls through once, and so on
	loadRCX bool   // opPlain: mov $rcx, %rcx
	rcx     uint64
}

// program is a list of instructions laid out from base.
type program struct {
	insns []insn
	rips  []uint64
}

const progBase = 0x401000

func newProgram(insns []insn) *program {
	p := &program{insns: insns, rips: make([]uint64, len(insns))}
	rip := uint64(progBase)
	for i, in := range insns {
		p.rips[i] = rip
		l := in.len
		if l == 0 {
			l = 2
		}
		rip += l
	}
	return p
}

func plain() insn                      { return insn{kind: opPlain, len: 3} }
func movRCX(v uint64) insn             { return insn{kind: opPlain, len: 7, loadRCX: true, rcx: v} }
func rep() insn                        { return insn{kind: opRep, len: 2} }
func jcc(target int, trip uint64) insn { return insn{kind: opJcc, len: 2, target: target, trip: trip} }
func jmp(target int) insn              { return insn{kind: opJmp, len: 5, target: target} }
func hlt() insn                        { return insn{kind: opHlt, len: 1} }

// simCPU runs a program. It implements CPU.
type simCPU struct {
	prog *program
	rng  *rand.Rand

	// maxSkid bounds the random overflow skid (branch events past the
	// programmed value); fixedSkid, if nonzero, replaces the random one.
	maxSkid, fixedSkid uint64
	// earlyStop is the probability that RunToOverflow is stopped early by
	// "something else" (an exit unrelated to the counter).
	earlyStop float64
	// fuel bounds the instructions of one RunToOverflow or RunToBreakpoint,
	// like a timer exit would: without it a missed target would hang.
	fuel int

	pc       int
	rcx      uint64
	branches uint64
	executed uint64   // instructions (rep iterations) executed: the true position
	jccCount []uint64 // per-instruction executions, for trip counts
	halted   bool

	overflowRuns, bpRuns, steps int
}

func newSim(p *program, seed int64) *simCPU {
	return &simCPU{prog: p, rng: rand.New(rand.NewSource(seed)), maxSkid: 60, fuel: 1 << 20,
		jccCount: make([]uint64, len(p.insns))}
}

// exec executes one instruction, or one iteration of a rep instruction.
func (s *simCPU) exec() {
	if s.halted {
		return
	}
	in := s.prog.insns[s.pc]
	s.executed++
	switch in.kind {
	case opPlain:
		if in.loadRCX {
			s.rcx = in.rcx
		}
		s.pc++
	case opJcc:
		s.branches++
		s.jccCount[s.pc]++
		if s.jccCount[s.pc]%in.trip != 0 {
			s.pc = in.target
		} else {
			s.pc++
		}
	case opJmp:
		s.pc = in.target
	case opRep:
		if s.rcx > 0 {
			s.rcx--
		}
		if s.rcx == 0 {
			s.pc++
		}
	case opHlt:
		s.executed--
		s.halted = true
	}
}

func (s *simCPU) rip() uint64 { return s.prog.rips[s.pc] }

func (s *simCPU) Branches() (uint64, error) { return s.branches, nil }

func (s *simCPU) Regs() (uint64, uint64, error) { return s.rip(), s.rcx, nil }

func (s *simCPU) Step() error {
	s.steps++
	s.exec()
	return nil
}

func (s *simCPU) RunToBreakpoint(rip uint64) error {
	s.bpRuns++
	for i := 0; i < s.fuel && !s.halted && s.rip() != rip; i++ {
		s.exec()
	}
	return nil
}

// RunToOverflow runs until the count reaches at, then on for the skid: a
// random number of further branch events and then a few instructions that
// retire none.
func (s *simCPU) RunToOverflow(at uint64) error {
	s.overflowRuns++
	stop := at
	if s.earlyStop > 0 && s.rng.Float64() < s.earlyStop && at > s.branches {
		stop = s.branches + uint64(s.rng.Int63n(int64(at-s.branches)))
	} else if s.fixedSkid > 0 {
		stop += s.fixedSkid
	} else {
		stop += uint64(s.rng.Int63n(int64(s.maxSkid) + 1))
	}
	fuel := s.fuel
	for ; fuel > 0 && !s.halted && s.branches < stop; fuel-- {
		s.exec()
	}
	for n := s.rng.Intn(4); n > 0 && fuel > 0 && !s.halted && s.prog.insns[s.pc].kind != opJcc; n-- {
		s.exec()
		fuel--
	}
	return nil
}

// point is a recorded position plus the true instruction count there.
type point struct {
	Target
	executed uint64
}

func (s *simCPU) point() point {
	return point{Target: Target{Branches: s.branches, RIP: s.rip(), RCX: s.rcx}, executed: s.executed}
}

// record runs a fresh copy of p for n instructions and captures the
// position at random instruction boundaries with probability 1/every.
func record(p *program, seed int64, n int, every int) []point {
	rng := rand.New(rand.NewSource(seed))
	s := newSim(p, seed)
	var pts []point
	for i := 0; i < n && !s.halted; i++ {
		if rng.Intn(every) == 0 {
			pts = append(pts, s.point())
		}
		s.exec()
	}
	return pts
}

// Indices into mainProgram, for tests that aim at particular instructions.
const (
	mainShortRep = 2
	mainTight    = 5
	mainLongRep  = 7
	mainZeroRep  = 16
)

// mainProgram has the shapes RunTo must cope with: a loop around a short
// rep, a one-instruction loop (one RIP, many branch counts), a long rep, an
// unconditional jump (no branch event), nested loops, a zero-count rep, and
// an outer loop that runs "forever".
func mainProgram() *program {
	return newProgram([]insn{
		0:  plain(),
		1:  movRCX(7),
		2:  rep(),
		3:  plain(),
		4:  jcc(1, 5),
		5:  jcc(5, 300),
		6:  movRCX(1000),
		7:  rep(),
		8:  jmp(10),
		9:  plain(),
		10: plain(),
		11: plain(),
		12: plain(),
		13: jcc(12, 3),
		14: jcc(11, 4),
		15: movRCX(0),
		16: rep(),
		17: jcc(0, 1<<40),
		18: hlt(),
	})
}

// randomProgram builds a program of nested finite loops, tight loops and
// rep instructions, closed by an outer loop. Every loop retires a branch per
// iteration, so (branches, RIP, RCX) names each point uniquely.
func randomProgram(rng *rand.Rand) *program {
	var insns []insn
	var body func(depth int)
	body = func(depth int) {
		for n := 1 + rng.Intn(4); n > 0; n-- {
			switch rng.Intn(5) {
			case 0:
				insns = append(insns, plain())
			case 1:
				insns = append(insns, movRCX(uint64(rng.Intn(40))), rep())
			case 2:
				if depth < 3 {
					start := len(insns)
					insns = append(insns, plain())
					body(depth + 1)
					insns = append(insns, jcc(start, 1+uint64(rng.Intn(6))))
				}
			case 3:
				insns = append(insns, jcc(len(insns), 1+uint64(rng.Intn(30))))
			case 4:
				insns = append(insns, jmp(len(insns)+2), plain())
			}
		}
	}
	insns = append(insns, plain())
	body(0)
	insns = append(insns, jcc(0, 1<<40), hlt())
	return newProgram(insns)
}
