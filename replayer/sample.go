package replayer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/cost"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/host/tick"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm"
)

// MinSamplePeriod is the shortest Options.SamplePeriod: each timed sample
// costs a kick (tens of microseconds here), so shorter periods would do
// little but sample.
const MinSamplePeriod = 100 * time.Microsecond

// Sample is the guest's user-mode state at a sampling point: the
// instrumented code's location and its frame-pointer call stack.
type Sample struct {
	Pos    vmm.Position
	Thread uint32        // a Linux program's thread (0: the kit's, read from its memory)
	Time   time.Duration // record-time host time of the last event before it
	RIP    uint64        // where the sampled code was (the branch counter's caller)
	Stack  []uint64      // return addresses, innermost first
	Regs   kvm.Regs
	// Cost is, for a sample taken every N counts, the estimated cycles it
	// stands for: N times those from its count to the next (package
	// cost), since a count may stand for one instruction or a thousand.
	// 0 for a timed sample, which stands for its period.
	Cost float64
	// Files are, for a Linux program, the file each address was in —
	// RIP's, then each Stack entry's (the zero LoadedFile: none) — since
	// processes may load different files at one address.
	Files []LoadedFile
	// System: a timed sample whose time came while the VMM served an
	// exit (a Linux program's system call or fault) rather than the
	// guest running — what perf counts as kernel time: the vCPU was out
	// of KVM_RUN when it was due, or (a Linux program) stood in the
	// system-call stub or an exception vector, on a SYSCALL, or at most
	// syscallSkid instructions past one.
	System bool
}

// LoadedFile is a file as a Linux program loaded it: its path and the
// address its image is based at.
type LoadedFile struct {
	Path string
	Base uint64
}

// SampleHandler receives each sample with the guest's memory.
type SampleHandler func(s *Sample, mem vmm.GuestMemory) error

// sampler takes samples every `every` user-mode branch counts (at
// branch-counter stops: deterministic) and every `period` of replay time
// (at kicks: wherever the guest is).
type sampler struct {
	m      *vmm.Machine
	every  uint64
	next   uint64 // branch count of the next deterministic sample (NoBranchTarget: none)
	period time.Duration
	due    atomic.Bool // a timed sample was asked for
	system atomic.Bool // ...while the vCPU was out of the guest
	on     SampleHandler
	linux  *linuxProbes // a Linux program's: its stacks are unwound by its files' CFI
	cost   *cost.Model  // the counted code's, for deterministic samples
}

func newSampler(every uint64, period time.Duration, on SampleHandler) (*sampler, error) {
	if every == 0 && period == 0 {
		return nil, nil
	}
	if period != 0 && period < MinSamplePeriod {
		return nil, fmt.Errorf("replayer: sample period %v is shorter than %v", period, MinSamplePeriod)
	}
	return &sampler{every: every, next: vmm.NoBranchTarget, period: period, on: on}, nil
}

func (s *sampler) attach(m *vmm.Machine) error {
	s.m = m
	if s.every == 0 {
		return nil
	}
	img := m.Image()
	var hook uint64
	switch vmm.BranchCounterOf(img) {
	case vmm.CounterNone:
		return errors.New("replayer: deterministic sampling needs the software branch counter, which this image lacks")
	case vmm.CounterHook:
		sym, _ := img.Lookup(vmm.SWBCHookSymbol)
		hook = sym.Addr
	}
	s.cost = cost.New(img, hook)
	s.next = s.every
	return nil
}

// resumeAt is the branch count of the first sample a replay resumed at
// count, at a stop of kind stop, takes: every multiple of every, as a
// replay from boot samples. A multiple at a branch stop's own count is
// still to take: the vCPU loop resumes with BeforeEntry at that stop,
// and the replay that ended there did not take it, as checkpoints.at
// ends a segment before the sampler looks. At a guest exit the count's
// multiple was taken at the branch stop the count reached it with, before
// the exit (the sampler only samples at branch stops).
func (s *sampler) resumeAt(count uint64, stop vmm.Stop) uint64 {
	if stop == vmm.StopBranch && count != 0 && count%s.every == 0 {
		return count
	}
	return (count/s.every + 1) * s.every
}

// timer kicks the vCPU every period for a timed sample until the returned
// function is called.
func (s *sampler) timer() (stop func()) {
	if s.period <= 0 {
		return func() {}
	}
	return tick.Every(s.period, func() {
		if !s.due.Load() {
			s.system.Store(!s.m.InGuest())
		}
		s.due.Store(true)
		s.m.Kick()
	})
}

// at takes the samples due where the vCPU stopped.
func (s *sampler) at(stop vmm.Stop, recordTime func(vmm.Position) time.Duration) error {
	if stop == vmm.StopKick && s.due.CompareAndSwap(true, false) {
		if err := s.take(false, recordTime); err != nil {
			return err
		}
	}
	if stop == vmm.StopBranch && s.next != vmm.NoBranchTarget {
		if count, _ := s.m.BranchCount(); count == s.next {
			if err := s.take(true, recordTime); err != nil {
				return err
			}
			s.next += s.every
		}
	}
	return nil
}

// maxStackDepth bounds a frame-pointer walk through guest-controlled data.
const maxStackDepth = 64

// take records the state where the vCPU stopped. At a trace-pc hook's
// stop (atTarget), or a timed kick that lands in the hook, the vCPU stands
// in the hook, which builds no frame: the sampled code's address is the
// return address at [rsp], and rbp is still that code's frame. Elsewhere,
// and at every stop of the register counter, which counts in the sampled
// code itself, it is RIP.
func (s *sampler) take(atTarget bool, recordTime func(vmm.Position) time.Duration) error {
	m := s.m
	regs := *m.Regs()
	pos := m.Position()
	smp := &Sample{Pos: pos, Time: recordTime(pos), Regs: regs, RIP: regs.RIP, System: !atTarget && s.system.Load()}
	if s.linux != nil {
		s.linux.sample(smp)
		m.Stats().Samples++
		if s.on == nil {
			return nil
		}
		return s.on(smp, m)
	}
	var b [16]byte
	if atTarget && m.BranchCounter() == vmm.CounterHook || m.InBranchHook(regs.RIP) {
		smp.RIP = 0
		if m.ReadVirt(regs.RSP, b[:8]) == nil {
			smp.RIP = binary.LittleEndian.Uint64(b[:8])
		}
	}
	if atTarget {
		smp.Cost = float64(s.every) * s.cost.Interval(smp.RIP).Cycles
	}
	// A function that has not built its frame yet, or never does (GCC
	// gives leaf functions none), leaves rbp its caller's: its own return
	// address is on the stack above rsp.
	if off, ok := unbuiltFrame(m.Image(), smp.RIP); ok && m.ReadVirt(regs.RSP+off, b[:8]) == nil {
		smp.Stack = append(smp.Stack, binary.LittleEndian.Uint64(b[:8]))
	}
	// Walk the frame-pointer chain: [rbp] = the caller's rbp, [rbp+8] =
	// the return address; stop at anything implausible.
	for fp := regs.RBP; len(smp.Stack) < maxStackDepth && fp >= abi.KernelBase && fp%8 == 0; {
		if m.ReadVirt(fp, b[:]) != nil {
			break
		}
		next, ret := binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
		if ret == 0 {
			break
		}
		smp.Stack = append(smp.Stack, ret)
		if next <= fp {
			break // frames grow towards higher addresses
		}
		fp = next
	}
	m.Stats().Samples++
	if s.on == nil {
		return nil
	}
	return s.on(smp, m)
}

// frameSetup is the kit's frame prologue, after the register counter's
// count (abi.CountCode) if any: push %rbp (1 byte); mov %rsp,%rbp.
var frameSetup = []byte{0x55, 0x48, 0x89, 0xe5}

// unbuiltFrame says where, above rsp, the return address of the function
// at rip lies while rip's rbp is still its caller's: before the function's
// push %rbp (or anywhere in one without that prologue) at [rsp], between
// the push and the mov at [rsp+8]. ok is false once the frame is built,
// or where the code is not the image's.
func unbuiltFrame(img *elffile.Image, rip uint64) (off uint64, ok bool) {
	if img == nil {
		return 0, false
	}
	sym, _, found := img.Resolve(rip)
	if !found {
		return 0, false
	}
	seg, ok := img.ExecSegment(sym.Addr)
	if !ok {
		return 0, false
	}
	code, start := seg.Data[sym.Addr-seg.Addr:], sym.Addr
	if bytes.HasPrefix(code, abi.CountCode[:]) {
		code, start = code[len(abi.CountCode):], start+uint64(len(abi.CountCode))
	}
	switch {
	case !bytes.HasPrefix(code, frameSetup) || rip <= start:
		return 0, true
	case rip == start+1:
		return 8, true
	}
	return 0, false
}
