package vmm

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elfimage"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
)

// eventSlice is an in-memory tape: an EventLog for a recording and, read
// back with script, an EventScript for its replay.
type eventSlice struct{ evs []*tape.Event }

func (l *eventSlice) Append(e *tape.Event) error {
	c := *e
	l.evs = append(l.evs, &c)
	return nil
}

type sliceScript struct{ evs []*tape.Event }

func (s *sliceScript) Peek() (*tape.Event, error) {
	if len(s.evs) == 0 {
		return nil, io.EOF
	}
	return s.evs[0], nil
}

func (s *sliceScript) Next() (*tape.Event, error) {
	ev, err := s.Peek()
	if err == nil {
		s.evs = s.evs[1:]
	}
	return ev, err
}

// wideHookAsm is a CPL0 image with its own branch-counter hook, the kit's
// (guest/lib/swbc.S) with a spin between the compare and the exit: the
// instant at which the guest has met its target but not yet exited, a few
// instructions wide in the kit's hook, lasts milliseconds here (CPL0 is
// emulated on the test machines, slower still), so the timer's next tick
// kicks the vCPU inside it nearly every time. On a busy host the same
// instant widens when the vCPU thread is preempted right there.
const wideHookAsm = `
.globl _start, reprise_vectors, __sanitizer_cov_trace_pc
_start:
	mov $0x520, %dx
	mov $300, %eax             /* timer period: 300 µs */
	out %eax, %dx
	sti
	xor %ebx, %ebx
1:	call __sanitizer_cov_trace_pc
	inc %ebx
	test $15, %ebx
	jnz 4f
	mov $0x5f0, %dx
	out %al, %dx               /* a guest exit now and then (null port) */
4:	cmpq $40, ticks(%rip)
	jb 1b
	cli
	mov $0x520, %dx
	xor %eax, %eax
	out %eax, %dx              /* timer off */
	mov $0x501, %dx
	xor %eax, %eax
	out %eax, %dx

	.type __sanitizer_cov_trace_pc, @function
__sanitizer_cov_trace_pc:
	mov 0xF000, %rax           /* count */
	lea 1(%rax), %rax
	mov %rax, 0xF000           /* store first, then compare */
	cmp 0xF008, %rax
	je 2f
1:	add $0, %rax
	ret
2:	mov $4000, %ecx            /* the window: met, not yet exited */
3:	dec %ecx
	jnz 3b
	out %al, $0xE5
	jmp 1b
	.size __sanitizer_cov_trace_pc, . - __sanitizer_cov_trace_pc

.balign 16
reprise_vectors:
	.rept 0x20
	.balign 16
	ud2
	.endr
	.balign 16
	incq ticks(%rip)           /* vector 0x20: the timer */
	iretq
.data
ticks: .quad 0
`

// recordWideHook records wideHookAsm with branch-counter positions.
func recordWideHook(t *testing.T) (img *elfimage.Image, events []*tape.Event, rec *Result, cpuid []kvm.CPUIDEntry, count uint64) {
	t.Helper()
	var log eventSlice
	m := asmMachine(t, wideHookAsm, Config{TimerHz: -1, Console: &bytes.Buffer{}, Mode: Record, PositionSource: tape.SourceSWBC, Log: &log})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := m.Run(ctx)
	require.NoError(t, err)
	require.NotNil(t, rec.End)
	count, err = m.BranchCount()
	require.NoError(t, err)
	return m.Image(), log.evs, rec, m.CPUID(), count
}

func replayEvents(t *testing.T, img *elfimage.Image, events []*tape.Event, cpuid []kvm.CPUIDEntry) (*Machine, *Result, error) {
	t.Helper()
	m, err := New(Config{Image: img, TimerHz: -1, Console: &bytes.Buffer{}, Mode: Replay,
		Script: &sliceScript{evs: events}, CPUID: cpuid})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := m.Run(ctx)
	return m, res, err
}

// A kick that lands after the hook has met its target but before its exit
// must not move the target: the hook does not look at it again, so its exit
// would come at a target the VMM no longer expects. It used to: the exit
// was counted as the guest's own, the pending interrupt injected and logged
// there, where no replay ever stops, and the replay diverged at the guest's
// next exit — same exit ordinal, a branch count far past the recorded one.
func TestKickBetweenHookCompareAndExit(t *testing.T) {
	img, events, rec, cpuid, count := recordWideHook(t)
	t.Logf("recorded: %d injections, %d kicks, %d EINTR, %d branch-counter exits, %d kicks at a met target, %d stray",
		rec.Stats.Injected, rec.Stats.KicksSent, rec.Stats.Interrupted, rec.Stats.SWBCExits, rec.Stats.SWBCKickedAtTarget, rec.Stats.SWBCStray)
	require.Zero(t, rec.Stats.SWBCStray, "the hook exited at a target the VMM had moved")
	require.NotZero(t, rec.Stats.SWBCKickedAtTarget, "no kick landed between the hook's compare and its exit: the test did not test anything")
	require.Zero(t, rec.Stats.SWBCMissed)
	for i, ev := range events {
		if ev.Kind == tape.KindInterrupt && ev.Port == abi.PortSWBC {
			require.Equal(t, tape.AtBranch, ev.Where, "event %d: an interrupt logged at a branch-counter exit that was not at the target: %+v", i, ev)
		}
	}

	rm, rep, err := replayEvents(t, img, events, cpuid)
	require.NoError(t, err)
	require.Equal(t, rec.End.RAMHash, rep.End.RAMHash)
	require.Equal(t, rec.Stats.Injected, rep.Stats.Injected)
	replayed, err := rm.BranchCount()
	require.NoError(t, err)
	require.Equal(t, count, replayed)
}

// A replay whose guest goes past its branch-counter target without
// stopping says so at its next stop, rather than at whatever the guest
// does next: here a forged event placed behind the one before it, whose
// target the count has already passed when it is set.
func TestReplayReportsAMissedTarget(t *testing.T) {
	img, events, _, cpuid, _ := recordWideHook(t)
	prev := -1
	for i, ev := range events {
		if ev.Kind != tape.KindInterrupt || ev.Where != tape.AtBranch {
			continue
		}
		if prev >= 0 {
			forged := *ev
			forged.Pos.Branch = events[prev].Pos.Branch - 1
			events[i] = &forged
			break
		}
		prev = i
	}
	require.GreaterOrEqual(t, prev, 0, "no two interrupts at branch-counter targets")
	_, _, err := replayEvents(t, img, events, cpuid)
	var div *DivergenceError
	require.ErrorAs(t, err, &div)
	require.Equal(t, "branch-counter target", div.What, "%v", err)
}

// classify tells the hook's exits from user code's own writes to the port
// by the hook's extent, so a recording needs the symbol's size.
func TestUnsizedHookIsRefused(t *testing.T) {
	img, err := elfimage.Open(kvmtest.AsmImage(t, `
.globl _start, __sanitizer_cov_trace_pc
_start:
__sanitizer_cov_trace_pc:
	ret
`))
	require.NoError(t, err)
	_, err = New(Config{Image: img, Mode: Record, PositionSource: tape.SourceSWBC, Log: &eventSlice{}})
	require.ErrorContains(t, err, "has no size")
}
