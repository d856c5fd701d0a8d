package vmm

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/kvm"
)

// asmMachine builds a machine for the assembly image src, closed when
// the test ends.
func asmMachine(t *testing.T, src string, cfg Config) *Machine {
	t.Helper()
	kvmtest.Require(t)
	img, err := elffile.OpenImage(kvmtest.AsmImage(t, src))
	require.NoError(t, err)
	cfg.Image = img
	m, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// bootAsm runs the assembly image src to its end (20 s at most) and
// returns the result and the console output.
func bootAsm(t *testing.T, src string, cfg Config) (*Result, string, error) {
	t.Helper()
	var out bytes.Buffer
	cfg.Console = &out
	res, err := runMachine(t, asmMachine(t, src, cfg))
	return res, out.String(), err
}

// runMachine runs m to its end, 20 s at most.
func runMachine(t *testing.T, m *Machine) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return m.Run(ctx)
}

// A bare CPL0 image: console bytes, a hypercall and an exit status.
const helloAsm = `
.globl _start
_start:
	mov $0x3f8, %dx
	lea msg(%rip), %rsi
1:	lodsb
	test %al, %al
	jz 2f
	out %al, %dx
	jmp 1b
2:	mov $0x510, %dx
	mov $1, %eax          /* HC_TIME: rax = ns */
	out %eax, %dx
	test %rax, %rax
	jz bad
	mov $0x501, %dx
	mov $7, %eax
	out %eax, %dx
bad:	mov $0x501, %dx
	mov $99, %eax
	out %eax, %dx
msg:	.asciz "hello from CPL0\n"
`

func TestBareImageConsoleAndStatus(t *testing.T) {
	res, out, err := bootAsm(t, helloAsm, Config{TimerHz: -1})
	require.NoError(t, err)
	require.Equal(t, uint32(7), res.Status)
	require.Equal(t, "hello from CPL0\n", out)
	require.Equal(t, uint64(1), res.Stats.Hypercalls)
}

// An image without handlers that executes ud2 takes #UD with an empty IDT:
// #NP, then #DF, then a triple fault.
const tripleAsm = `
.globl _start
_start:
	mov $0x3f8, %dx
	mov $'x', %al
	out %al, %dx
	mov $'\n', %al
	out %al, %dx
	ud2
`

func TestTripleFaultReport(t *testing.T) {
	_, _, err := bootAsm(t, tripleAsm, Config{TimerHz: -1})
	var gf *GuestFault
	require.True(t, errors.As(err, &gf), "want *GuestFault, got %v", err)
	require.Equal(t, kvm.ExitShutdown, gf.ExitReason)
	require.Contains(t, gf.Error(), "triple fault")
	require.Contains(t, gf.Error(), "rip ")
	require.Equal(t, []string{"x"}, gf.Console)
}

// HLT with interrupts off can never end: reported, not hung.
func TestHaltWithInterruptsOff(t *testing.T) {
	_, _, err := bootAsm(t, ".globl _start\n_start: cli\n hlt\n", Config{TimerHz: -1})
	var gf *GuestFault
	require.True(t, errors.As(err, &gf), "want *GuestFault, got %v", err)
	require.Contains(t, gf.Reason, "interrupts disabled")
}

// The interrupt path without a kernel: a one-entry handler table at a
// known symbol, the timer programmed at 100 Hz, and `sti; hlt` until ten
// ticks have been counted by the handler. Each tick finds the guest halted:
// the period is long enough that even an emulated machine (nested KVM under
// QEMU's TCG, where an exit takes a millisecond) re-enters the guest and
// reaches its HLT before the next tick is due.
var tickAsm = `
.globl _start, reprise_vectors
_start:
	mov $0x520, %dx
	mov $10000, %eax         /* 10 ms period */
	out %eax, %dx
1:	sti
	hlt
	cli
	cmpq $10, ticks(%rip)
	jb 1b
	mov $0x501, %dx
	mov $0, %eax
	out %eax, %dx
` + kvmtest.Vectors(0x20, `	incq ticks(%rip)         /* vector 0x20 */
	iretq`) + `
.data
ticks: .quad 0
`

// The guest halts until ten ticks came: each HLT it exits on is woken by
// an injected tick, and a tick that comes while it runs between two HLTs
// (a slow host) spares it one, so there are at most as many HLT exits as
// ticks, and some.
func TestTimerInterruptsWakeHalt(t *testing.T) {
	res, _, err := bootAsm(t, tickAsm, Config{TimerHz: -1})
	require.NoError(t, err)
	require.Equal(t, uint32(0), res.Status)
	require.GreaterOrEqual(t, res.Stats.Injected, uint64(10))
	require.NotZero(t, res.Stats.Exits[kvm.ExitHLT])
	require.LessOrEqual(t, res.Stats.Exits[kvm.ExitHLT], res.Stats.Injected)
}

func TestContextCancelStopsSpinningGuest(t *testing.T) {
	m := asmMachine(t, ".globl _start\n_start: jmp _start\n", Config{TimerHz: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := m.Run(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestImageMustNotOverlapSystemArea(t *testing.T) {
	kvmtest.Require(t)
	dir := kvmtest.AsmImage(t, ".globl _start\n_start: hlt\n")
	img, err := elffile.OpenImage(dir)
	require.NoError(t, err)
	img.Segments[0].Addr = abi.GDT
	_, err = New(Config{Image: img})
	require.ErrorContains(t, err, "must lie in")
}

// Dirty logging sees the page the guest wrote and not a page it never
// touched.
func TestDirtyPagesTrackGuestWrites(t *testing.T) {
	m := asmMachine(t, `
.globl _start
_start:
	movq $42, 0x500008
	mov $0x501, %dx
	xor %eax, %eax
	out %eax, %dx
`, Config{TimerHz: -1, TrackDirty: true})
	_, err := m.DirtyPages() // clear what loading and table building dirtied
	require.NoError(t, err)
	res, err := m.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint32(0), res.Status)
	bm, err := m.DirtyPages()
	require.NoError(t, err)
	dirty := func(gpa uint64) bool { p := gpa / 4096; return bm[p/64]&(1<<(p%64)) != 0 }
	require.True(t, dirty(0x500008), "written page not reported dirty")
	require.False(t, dirty(0x600000), "untouched page reported dirty")
}

// A guest MSR access is denied by the filter and reaches the VMM, which
// answers with #GP; here the guest's #GP handler exits with status 13.
func TestMSRAccessIsDeniedWithGP(t *testing.T) {
	kvmtest.Require(t)
	sys, err := kvm.Open(kvm.DevicePath)
	require.NoError(t, err)
	n, err := sys.CheckExtension(kvm.CapX86UserSpaceMSR)
	require.NoError(t, err)
	sys.Close()
	if n == 0 {
		t.Skip("this host cannot route MSR accesses to userspace")
	}
	res, _, err := bootAsm(t, `
.globl _start, reprise_vectors
_start:
	mov $0x10, %ecx          /* IA32_TIME_STAMP_COUNTER */
	rdmsr
	mov $0x501, %dx
	mov $1, %eax             /* not reached */
	out %eax, %dx
`+kvmtest.Vectors(13, `	mov $0x501, %dx          /* vector 13: #GP */
	mov $13, %eax
	out %eax, %dx`), Config{TimerHz: -1})
	require.NoError(t, err)
	require.Equal(t, uint32(13), res.Status)
	require.Equal(t, uint64(1), res.Stats.MSRDenied)
}

// A guest that masks its only wake-up source and halts is reported, not
// left hanging.
func TestHaltWithTimerMasked(t *testing.T) {
	_, _, err := bootAsm(t, `
.globl _start
_start:
	mov $0x520, %dx
	mov $1000, %eax
	out %eax, %dx            /* timer on */
	mov $0x530, %dx
	mov $1, %eax
	out %eax, %dx            /* ...but its line masked */
	sti
	hlt
`, Config{TimerHz: -1})
	var gf *GuestFault
	require.True(t, errors.As(err, &gf), "want *GuestFault, got %v", err)
	require.Contains(t, gf.Reason, "masked")
}
