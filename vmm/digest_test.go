package vmm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/kvm"
)

// settleAsm reads the serial scratch register back (an IN, whose value
// KVM writes into RAX at the next KVM_RUN) and writes it (an OUT, which
// KVM completes then too), then powers off.
const settleAsm = `
.globl _start
_start:
	mov $0x3ff, %dx
	mov $0x5a, %al
	out %al, %dx
	xor %eax, %eax
	in %dx, %al
	out %al, %dx
	mov $0x501, %dx
	xor %eax, %eax
	out %eax, %dx
`

// settlingEngine settles the vCPU at every stop after a serial scratch
// access, as a checkpoint does, noting the digests before and after.
type settlingEngine struct {
	live
	seen []settled
	err  error
}

type settled struct {
	in                           bool
	event, eventAfter, regsAfter uint64
	raxAfter                     uint64
}

func (e *settlingEngine) BeforeEntry(stop Stop) error {
	m := e.m
	if e.err == nil && stop == StopGuestExit && m.ExitReason() == kvm.ExitIO && m.ExitPort() == 0x3ff {
		s := settled{in: !m.cpu.IOExit().Out, event: m.EventDigest()}
		if e.err = m.Settle(); e.err == nil {
			s.eventAfter, s.regsAfter, s.raxAfter = m.EventDigest(), m.RegsDigest(), m.Regs().RAX
			e.seen = append(e.seen, s)
		}
	}
	return e.live.BeforeEntry(stop)
}

// An event's digest is the same whether or not a Settle (a checkpoint's)
// completed the exit's instruction first: a recording that takes
// checkpoints and a replay that takes none log the same registers. The
// registers themselves do change (the IN's value lands in RAX).
func TestEventDigestIgnoresSettle(t *testing.T) {
	eng := &settlingEngine{}
	m := asmMachine(t, settleAsm, Config{Engine: eng})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := m.Run(ctx)
	require.NoError(t, err)
	require.NoError(t, eng.err)
	require.Equal(t, uint32(0), res.Status)
	require.Len(t, eng.seen, 3, "the scratch's write, read and write")
	for i, s := range eng.seen {
		require.Equal(t, s.event, s.eventAfter, "access %d: the event digest after a Settle", i)
	}
	in := eng.seen[1]
	require.True(t, in.in)
	require.Equal(t, uint64(0x5a), in.raxAfter&0xff, "the Settle completed the IN")
	require.NotEqual(t, in.event, in.regsAfter, "the settled registers differ from the exit's")
}
