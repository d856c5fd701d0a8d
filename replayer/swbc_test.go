package replayer_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
)

// wideHookAsm is a CPL0 image with its own branch-counter hook, the kit's
// (guest/lib/swbc.S) with a spin between the compare and the exit: the
// instant at which the guest has met its target but not yet exited, a few
// instructions wide in the kit's hook, lasts milliseconds here (CPL0 is
// emulated on the test machines, slower still), so the timer's next tick
// kicks the vCPU inside it nearly every time. On a busy host the same
// instant widens when the vCPU thread is preempted right there.
var wideHookAsm = `
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

` + kvmtest.Vectors(0x20, `	incq ticks(%rip)           /* vector 0x20: the timer */
	iretq`) + `
.data
ticks: .quad 0
`

// recordWideHook records wideHookAsm with branch-counter positions and
// returns the tape and its events.
func recordWideHook(t *testing.T) (path string, events []*tape.Event, rec *recorder.Result) {
	t.Helper()
	kvmtest.Require(t)
	img, err := elffile.OpenImage(kvmtest.AsmImage(t, wideHookAsm))
	require.NoError(t, err)
	path = filepath.Join(t.TempDir(), "wide.tape")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err = recorder.Record(ctx, recorder.Options{Image: img, TimerHz: -1, Console: &bytes.Buffer{},
		PositionSource: tape.SourceSWBC, Output: path, Host: recorder.HostOff})
	require.NoError(t, err)
	require.NotNil(t, rec.End)
	return path, readEvents(t, path), rec
}

// readEvents reads every event of the tape at path.
func readEvents(t *testing.T, path string) []*tape.Event {
	t.Helper()
	r, err := tape.Open(path)
	require.NoError(t, err)
	defer r.Close()
	var evs []*tape.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, ev)
	}
}

// writeEvents writes a tape with the header of the tape at from and evs.
func writeEvents(t *testing.T, from string, evs []*tape.Event) string {
	t.Helper()
	r, err := tape.Open(from)
	require.NoError(t, err)
	defer r.Close()
	path := filepath.Join(t.TempDir(), "forged.tape")
	w, err := tape.Create(path, r.Header())
	require.NoError(t, err)
	for _, ev := range evs {
		require.NoError(t, w.Append(ev))
	}
	require.NoError(t, w.Close())
	return path
}

func replayWide(path string) (*replayer.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return replayer.Replay(ctx, replayer.Options{Tape: path, Console: &bytes.Buffer{}})
}

// A kick that lands after the hook has met its target but before its exit
// must not move the target: the hook does not look at it again, so its exit
// would come at a target the VMM no longer expects. It used to: the exit
// was counted as the guest's own, the pending interrupt injected and logged
// there, where no replay ever stops, and the replay diverged at the guest's
// next exit — same exit ordinal, a branch count far past the recorded one.
func TestKickBetweenHookCompareAndExit(t *testing.T) {
	path, events, rec := recordWideHook(t)
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

	// The RAM hash covers the branch count, kept in guest RAM.
	rep, err := replayWide(path)
	require.NoError(t, err)
	require.Equal(t, rec.End.RAMHash, rep.End.RAMHash)
	require.Equal(t, rec.Stats.Injected, rep.Stats.Injected)
}

// A replay whose guest goes past its branch-counter target without
// stopping says so at its next stop, rather than at whatever the guest
// does next: here a forged event placed behind the one before it, whose
// target the count has already passed when it is set.
func TestReplayReportsAMissedTarget(t *testing.T) {
	path, events, _ := recordWideHook(t)
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
	_, err := replayWide(writeEvents(t, path, events))
	var div *replayer.DivergenceError
	require.ErrorAs(t, err, &div)
	require.Equal(t, "branch-counter target", div.What, "%v", err)
}
