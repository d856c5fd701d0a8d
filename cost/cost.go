// Package cost estimates how long a stretch of the guest kit's counted
// code takes: the cycles from one count of its software branch counter to
// the next. The register counter counts at function entries, loop heads
// and indirect jumps only, so one count may stand for one instruction or
// for a thousand; a sample taken every N counts weighed by this estimate
// stands for time again (replayer, tools/profile).
//
// The estimate is static, from the image's code alone, so it is the same
// in every replay. It walks the code from the count forward to the next
// count (a loop head, a call, a return: an interval), both ways at a
// forward conditional branch, and takes the larger of two bounds, as an
// out-of-order core runs it: the instructions at six a cycle, and the
// longest chain of dependent instructions through registers and memory,
// with each instruction's latency — for an interval that goes back to its
// own loop head, the chain one iteration adds to the next.
//
// What it does not see: branch mispredictions (data-dependent branches,
// as in sorting random data, cost more than it says), cache misses (every
// load hits L1), and, for the trace-pc hook, the hook's own instructions
// (the estimate is the program's code).
package cost

import (
	"bytes"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
)

const (
	// issueWidth is the instructions a core starts per cycle: six, as
	// Golden Cove and Zen 4 rename (the test hosts' sixteen independent
	// adds a loop run at half the time of a 6-cycle chain).
	issueWidth = 6
	// maxInsts bounds one way through an interval: straight-line code
	// longer than this is counted as this long.
	maxInsts = 1 << 14
	// maxWays bounds the ways through an interval followed at forward
	// branches; past it, only the fall-through.
	maxWays = 16
)

// Model estimates the intervals of one image's code. It keeps what it
// decoded and estimated; it is not safe for concurrent use.
type Model struct {
	img   *elffile.Image
	hook  uint64 // the trace-pc hook's address: a call to it is a count (0: the register counter)
	insts map[uint64]x86asm.Inst
	memo  map[uint64]Estimate
}

// New returns a model of img's code, which counts with the register
// counter, or, if hook is not 0, by calls to the trace-pc hook at hook.
func New(img *elffile.Image, hook uint64) *Model {
	return &Model{img: img, hook: hook, insts: make(map[uint64]x86asm.Inst), memo: make(map[uint64]Estimate)}
}

// Estimate is what an interval takes, averaged over its ways.
type Estimate struct {
	Cycles       float64
	Instructions float64
}

// Interval estimates the code from the count at rip to the next: rip
// follows the register counter's load (where the guest stops at a count)
// or a trace-pc hook call. Code it cannot decode ends an interval; a zero
// Estimate means none could be made.
func (m *Model) Interval(rip uint64) Estimate {
	if e, ok := m.memo[rip]; ok {
		return e
	}
	var e Estimate
	for _, w := range m.ways(rip) {
		n := float64(len(w.insts))
		e.Cycles += w.share * (max(w.chain(m.hook == 0), n/issueWidth) + w.barriers())
		e.Instructions += w.share * n
	}
	m.memo[rip] = e
	return e
}

// way is one path through an interval.
type way struct {
	insts []located
	loop  bool    // it ends back at the count it started from
	share float64 // its weight among the interval's ways
}

// located is an instruction and its address.
type located struct {
	x86asm.Inst
	addr uint64
}

// ways follows the code from rip to the next count, every way a forward
// branch opens (up to maxWays).
func (m *Model) ways(rip uint64) []way {
	site := m.countAt(rip) // where a loop goes back to
	open := []way{{share: 1}}
	starts := []uint64{rip}
	var done []way
	for len(open) > 0 {
		w, at := open[len(open)-1], starts[len(starts)-1]
		open, starts = open[:len(open)-1], starts[:len(starts)-1]
		for {
			if len(w.insts) > 0 && m.counts(at) {
				w.loop = at == site
				break
			}
			if len(w.insts) == maxInsts {
				break
			}
			inst, ok := m.decode(at)
			if !ok {
				break
			}
			w.insts = append(w.insts, located{inst, at})
			next := at + uint64(inst.Len)
			target, direct := branchTarget(inst, next)
			switch {
			case inst.Op == x86asm.CALL && direct && !m.counts(target):
				at = target // a callee that does not count is the interval's too
				continue
			case ends(inst):
			case inst.Op == x86asm.JMP && direct:
				at = target
				continue
			case inst.Op == x86asm.JMP:
			case direct && target <= at:
				at = target // a loop's branch back: taken
				continue
			case direct && len(done)+len(open)+1 < maxWays:
				w.share /= 2
				fork := w
				fork.insts = append([]located(nil), w.insts...)
				open, starts = append(open, fork), append(starts, target)
				at = next
				continue
			default:
				at = next
				continue
			}
			break
		}
		done = append(done, w)
	}
	return done
}

// counts reports whether the code at addr is a count: the register
// counter's two instructions, or a call to the trace-pc hook.
func (m *Model) counts(addr uint64) bool {
	code, ok := m.code(addr)
	if !ok {
		return false
	}
	if bytes.HasPrefix(code, abi.CountCode[:]) {
		return true
	}
	if m.hook == 0 {
		return false
	}
	inst, ok := m.decode(addr)
	target, direct := branchTarget(inst, addr+uint64(inst.Len))
	return ok && inst.Op == x86asm.CALL && direct && target == m.hook
}

// countAt returns where the count that stopped at rip starts: the
// register counter's two instructions (the guest stops at its load, and
// resumes after it), or the hook call before its return address.
func (m *Model) countAt(rip uint64) uint64 {
	for _, n := range []uint64{uint64(len(abi.CountCode)), callLen} {
		if rip >= n && m.counts(rip-n) {
			return rip - n
		}
	}
	return rip
}

// callLen is the length of a direct call (E8 rel32).
const callLen = 5

// code returns the image's bytes from addr to the end of its segment.
func (m *Model) code(addr uint64) ([]byte, bool) {
	seg, ok := m.img.ExecSegment(addr)
	if !ok {
		return nil, false
	}
	return seg.Data[addr-seg.Addr:], true
}

func (m *Model) decode(addr uint64) (x86asm.Inst, bool) {
	if inst, ok := m.insts[addr]; ok {
		return inst, inst.Len > 0
	}
	code, ok := m.code(addr)
	var inst x86asm.Inst
	if ok {
		inst, _ = x86asm.Decode(code, 64) // a failure leaves Len 0
	}
	m.insts[addr] = inst
	return inst, inst.Len > 0
}

// ends reports whether inst ends an interval: the next count follows it
// (a call's callee counts at its entry, a return's caller at its next loop
// head or call) or it leaves user code.
func ends(inst x86asm.Inst) bool {
	switch inst.Op {
	case x86asm.CALL, x86asm.RET, x86asm.UD2, x86asm.HLT, x86asm.INT, x86asm.SYSCALL,
		x86asm.IN, x86asm.OUT, x86asm.IRETQ:
		return true
	}
	return false
}

// branchTarget returns a direct branch's target.
func branchTarget(inst x86asm.Inst, next uint64) (uint64, bool) {
	if inst.Op != x86asm.CALL && inst.Op != x86asm.JMP && !conditional(inst.Op) {
		return 0, false
	}
	rel, ok := inst.Args[0].(x86asm.Rel)
	return next + uint64(int64(rel)), ok
}
