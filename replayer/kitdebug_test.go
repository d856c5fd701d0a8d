package replayer_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
)

// stepper debugs a kit guest's replay: from the start a breakpoint at
// addr; at its first hit, that thread stepped n instructions, each
// landing noted, and the breakpoint gone; then the program runs on.
type stepper struct {
	addr  uint64
	n     int
	tid   int
	rips  []uint64
	check func(b *replayer.KitBreak) error
}

func (s *stepper) Mapped(linux.Mapping, []byte) ([]uint64, error) { return nil, nil }
func (s *stepper) Interrupted(uint64, func() time.Duration) bool  { return false }

func (s *stepper) KitBreak(b *replayer.KitBreak) error {
	switch {
	case b.Start:
		return b.SetBreakpoint(s.addr)
	case b.Stepped && b.TID == s.tid:
		s.rips = append(s.rips, b.Regs.RIP)
		if len(s.rips) < s.n {
			return b.Step(b.TID)
		}
		return nil
	case s.tid == 0 && b.Regs.RIP == s.addr:
		s.tid = b.TID
		if err := s.check(b); err != nil {
			return err
		}
		if err := b.ClearBreakpoint(s.addr); err != nil {
			return err
		}
		return b.Step(b.TID)
	}
	return fmt.Errorf("unexpected stop: thread %d at %#x (stepped %v)", b.TID, b.Regs.RIP, b.Stepped)
}

// A debugger's breakpoints and software single steps change nothing the
// kit guest computes: a thread of syn_cont stepped thousands of
// instructions — through the branch counter's loads (done by the VMM) and
// the other threads' switches and the timer's interrupts — and the
// replay ends as recorded, RAM hash included, the same landings in a
// second replay. At the breakpoint the debugger sees the code without its
// int3, the thread among the live ones, its registers the trap's.
func TestKitDebuggerStepsAThread(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=2 work=300", recorder.Auto)
	require.NoError(t, rec.err)
	comp, ok := img.Lookup("comp")
	require.True(t, ok)
	seg, ok := img.ExecSegment(comp.Addr)
	require.True(t, ok)
	orig := seg.Data[comp.Addr-seg.Addr]

	steps := func() []uint64 {
		s := &stepper{addr: comp.Addr, n: 4000, check: func(b *replayer.KitBreak) error {
			var code [1]byte
			if err := b.ReadMemory(comp.Addr, code[:]); err != nil || code[0] != orig {
				return fmt.Errorf("the code at the breakpoint reads %x (%v), not %x", code, err, orig)
			}
			if !slices.Contains(b.Threads(), replayer.KitThread{TID: b.TID}) {
				return fmt.Errorf("thread %d is not among %v", b.TID, b.Threads())
			}
			regs, _, ok, err := b.State(b.TID)
			if err != nil || !ok || regs != *b.Regs {
				return fmt.Errorf("thread %d's state: %v, %v, %+v", b.TID, ok, err, regs)
			}
			return nil
		}}
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_, err := replayer.Replay(ctx, replayer.Options{Tape: rec.path, Console: &out, KitDebugger: s})
		require.NoError(t, err)
		require.Equal(t, rec.console, out.String())
		require.Len(t, s.rips, s.n)
		return s.rips
	}
	first := steps()
	require.Equal(t, comp.Addr+4, first[0], "past the count's lea")
	require.Equal(t, comp.Addr+8, first[1], "past the count's load, which the VMM does")
	require.Contains(t, first, comp.Addr, "comp called again")
	for _, rip := range first {
		_, ok := img.ExecSegment(rip)
		require.True(t, ok, "%#x is not code", rip)
	}
	require.Equal(t, first, steps(), "a second replay steps the same")
}
