package devices_test

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/devices"
)

// recorder is a fake PortDevice that logs what it sees.
type recorder struct {
	reads, writes []uint16
	last          []byte
	readValue     byte
}

func (r *recorder) PortRead(port uint16, data []byte) {
	r.reads = append(r.reads, port)
	for i := range data {
		data[i] = r.readValue
	}
}

func (r *recorder) PortWrite(port uint16, data []byte) error {
	r.writes = append(r.writes, port)
	r.last = append([]byte(nil), data...)
	return nil
}

func TestBusAttach(t *testing.T) {
	var b devices.Bus
	require.NoError(t, b.Attach("a", 0x100, 8, &recorder{}))
	require.NoError(t, b.Attach("b", 0x108, 1, &recorder{}), "adjacent above")
	require.NoError(t, b.Attach("c", 0xf0, 0x10, &recorder{}), "adjacent below")
	for _, tc := range []struct {
		name       string
		base, size uint16
	}{
		{"same", 0x100, 8},
		{"inside", 0x103, 1},
		{"covers", 0xf8, 0x20},
		{"straddles start", 0xef, 2},
		{"straddles end", 0x107, 2},
		{"empty", 0x200, 0},
		{"past 0xffff", 0xfff0, 0x11},
	} {
		require.Error(t, b.Attach(tc.name, tc.base, tc.size, &recorder{}), tc.name)
	}
}

func TestBusDispatch(t *testing.T) {
	var b devices.Bus
	lo, hi := &recorder{readValue: 0x11}, &recorder{readValue: 0x22}
	// Attach out of order: dispatch must not depend on attach order.
	require.NoError(t, b.Attach("hi", 0x500, 4, hi))
	require.NoError(t, b.Attach("lo", 0x3f8, 8, lo))

	data := make([]byte, 2)
	b.Read(0x3fa, data)
	require.Equal(t, []byte{0x11, 0x11}, data)
	require.NoError(t, b.Write(0x3ff, []byte{7}))
	require.NoError(t, b.Write(0x503, []byte{1, 2, 3, 4}))
	b.Read(0x500, data[:1])
	require.Equal(t, byte(0x22), data[0])

	require.Equal(t, []uint16{2}, lo.reads, "devices see offsets, not ports")
	require.Equal(t, []uint16{7}, lo.writes)
	require.Equal(t, []uint16{0}, hi.reads)
	require.Equal(t, []uint16{3}, hi.writes)
	require.Equal(t, []byte{1, 2, 3, 4}, hi.last)
	require.Zero(t, b.Unassigned)
}

func TestBusUnassigned(t *testing.T) {
	var b devices.Bus
	dev := &recorder{}
	require.NoError(t, b.Attach("dev", 0x500, 4, dev))
	for i, port := range []uint16{0, 0x4ff, 0x504, 0xffff} {
		for _, size := range []int{1, 2, 4} {
			data := bytes.Repeat([]byte{0x5a}, size)
			b.Read(port, data)
			require.Equal(t, bytes.Repeat([]byte{0xff}, size), data, "port %#x size %d", port, size)
		}
		require.NoError(t, b.Write(port, []byte{1}))
		require.Equal(t, uint64(4*(i+1)), b.Unassigned)
	}
	require.Empty(t, dev.reads)
	require.Empty(t, dev.writes)
}

// TestBusTopOfPortSpace attaches a device whose range ends exactly at
// 0xffff. Attach accepts it (base+size == 0x10000 is allowed), so it must
// also be reachable and must block overlapping attaches.
func TestBusTopOfPortSpace(t *testing.T) {
	var b devices.Bus
	dev := &recorder{readValue: 0x42}
	require.NoError(t, b.Attach("top", 0xfff0, 0x10, dev))
	require.Error(t, b.Attach("overlap", 0xfff8, 4, &recorder{}))
	data := []byte{0}
	b.Read(0xfff5, data)
	require.Equal(t, byte(0x42), data[0])
	require.Zero(t, b.Unassigned)
}

func TestIntc(t *testing.T) {
	var notified atomic.Int32
	c := devices.NewIntc(0x20, func() { notified.Add(1) })

	_, ok := c.Next()
	require.False(t, ok)
	require.False(t, c.Pending())

	c.Raise(5)
	c.Raise(3)
	c.Raise(3) // edges coalesce
	require.Equal(t, int32(3), notified.Load(), "every Raise notifies")
	v, ok := c.Next()
	require.True(t, ok)
	require.Equal(t, uint8(0x23), v, "lowest line wins")

	c.Ack(0x23)
	v, ok = c.Next()
	require.True(t, ok)
	require.Equal(t, uint8(0x25), v)

	// Masking line 5 hides it; unmasking brings it back and notifies.
	require.NoError(t, c.PortWrite(0, []byte{0x20, 0, 0, 0}))
	_, ok = c.Next()
	require.False(t, ok)
	require.False(t, c.Pending())
	data := make([]byte, 4)
	c.PortRead(0, data)
	require.Equal(t, []byte{0x20, 0, 0, 0}, data)
	before := notified.Load()
	require.NoError(t, c.PortWrite(0, []byte{0}))
	require.Equal(t, before+1, notified.Load(), "unmasking a pending line wakes the vCPU")
	require.True(t, c.Pending())

	c.Ack(0x25)
	require.False(t, c.Pending())

	// Out-of-range lines and vectors are ignored.
	before = notified.Load()
	c.Raise(-1)
	c.Raise(devices.IntcLines)
	c.Raise(1000)
	require.Equal(t, before, notified.Load())
	require.False(t, c.Pending())
	c.Ack(0x1f)
	c.Ack(0x20 + devices.IntcLines)

	// The top line works and a 16-bit mask write masks only the low half.
	c.Raise(devices.IntcLines - 1)
	v, ok = c.Next()
	require.True(t, ok)
	require.Equal(t, uint8(0x20+devices.IntcLines-1), v)
	require.NoError(t, c.PortWrite(0, []byte{0xff, 0xff}))
	require.True(t, c.Pending(), "line 31 is outside a 16-bit mask")
	c.Ack(0x20 + devices.IntcLines - 1)
	require.False(t, c.Pending())
}

func TestIntcNilNotify(t *testing.T) {
	c := devices.NewIntc(0x40, nil)
	c.Raise(0)
	require.NoError(t, c.PortWrite(0, []byte{0}))
	v, ok := c.Next()
	require.True(t, ok)
	require.Equal(t, uint8(0x40), v)
}

func TestTimerFiresAndStops(t *testing.T) {
	var raised atomic.Int64
	tm := devices.NewTimer(func() { raised.Add(1) }, 0)
	t.Cleanup(tm.Stop)
	require.Zero(t, tm.Period())

	tm.SetPeriod(time.Millisecond)
	require.Equal(t, time.Millisecond, tm.Period())
	require.Eventually(t, func() bool { return raised.Load() >= 3 }, 2*time.Second, time.Millisecond)

	tm.Stop()
	require.Zero(t, tm.Period())
	requireQuiet(t, &raised, "no raises after Stop")
}

// requireQuiet checks that raised stops counting once an expiry already
// running has had time to finish.
func requireQuiet(t *testing.T, raised *atomic.Int64, msg string) {
	t.Helper()
	time.Sleep(20 * time.Millisecond)
	n := raised.Load()
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, n, raised.Load(), msg)
}

func TestTimerReprogram(t *testing.T) {
	var raised atomic.Int64
	tm := devices.NewTimer(func() { raised.Add(1) }, 0)
	t.Cleanup(tm.Stop)
	tm.SetPeriod(time.Hour)
	tm.SetPeriod(time.Millisecond)
	require.Eventually(t, func() bool { return raised.Load() >= 2 }, 2*time.Second, time.Millisecond)
	tm.SetPeriod(time.Hour) // a long period is as good as stopped for this test
	requireQuiet(t, &raised, "no raises after the period grew to an hour")
}

func TestTimerPeriodClampAndPorts(t *testing.T) {
	tm := devices.NewTimer(func() {}, 0)
	t.Cleanup(tm.Stop)

	tm.SetPeriod(time.Nanosecond)
	require.Equal(t, devices.MinTimerPeriod, tm.Period(), "clamped up to MinTimerPeriod")
	tm.SetPeriod(-time.Second)
	require.Zero(t, tm.Period(), "negative stops")
	tm.SetPeriod(devices.MaxTimerPeriod + time.Microsecond)
	require.Equal(t, devices.MaxTimerPeriod, tm.Period(), "clamped down to what the port can read back")

	for _, tc := range []struct {
		write []byte
		want  time.Duration
	}{
		{[]byte{0x10, 0x27, 0, 0}, 10 * time.Millisecond}, // 10000 µs
		{[]byte{0xe8, 0x03}, time.Millisecond},            // 1000 µs, 16-bit write
		{[]byte{50}, devices.MinTimerPeriod},              // 50 µs is clamped
		{[]byte{0, 0, 0, 0}, 0},                           // stop
		{[]byte{0xff, 0xff, 0xff, 0xff}, 0xffffffff * time.Microsecond},
	} {
		require.NoError(t, tm.PortWrite(0, tc.write))
		require.Equal(t, tc.want, tm.Period(), "write % x", tc.write)
		data := make([]byte, 4)
		tm.PortRead(0, data)
		us := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		require.Equal(t, uint32(tc.want/time.Microsecond), us, "read back after % x", tc.write)
	}
}

// serialOut is an io.Writer that can be told to fail.
type serialOut struct {
	bytes.Buffer
	fail bool
}

func (w *serialOut) Write(p []byte) (int, error) {
	if w.fail {
		return 0, errors.New("console gone")
	}
	return w.Buffer.Write(p)
}

func serialRead(s *devices.Serial, port uint16) byte {
	data := []byte{0xee}
	s.PortRead(port, data)
	return data[0]
}

func TestSerial(t *testing.T) {
	out := &serialOut{}
	s := &devices.Serial{Out: out}
	for _, c := range []byte("hi\n") {
		require.NoError(t, s.PortWrite(0, []byte{c}))
	}
	require.Equal(t, "hi\n", out.String())
	require.Equal(t, byte(0x60), serialRead(s, 5), "LSR: THRE|TEMT")
	require.Equal(t, byte(0x01), serialRead(s, 2), "IIR: no interrupt pending")
	require.Equal(t, byte(0xb0), serialRead(s, 6), "MSR: DCD|DSR|CTS")
	require.Zero(t, serialRead(s, 0), "RBR reads 0")

	// A wide OUT sends only the low byte.
	require.NoError(t, s.PortWrite(0, []byte{'x', 'y', 'z', 'w'}))
	require.Equal(t, "hi\nx", out.String())

	// Scratch round-trips; IER keeps its low nibble; MCR its low 5 bits.
	require.NoError(t, s.PortWrite(7, []byte{0x9c}))
	require.Equal(t, byte(0x9c), serialRead(s, 7))
	require.NoError(t, s.PortWrite(1, []byte{0xff}))
	require.Equal(t, byte(0x0f), serialRead(s, 1))
	require.NoError(t, s.PortWrite(4, []byte{0xff}))
	require.Equal(t, byte(0x1f), serialRead(s, 4))

	// DLAB: THR and IER become the divisor latch; nothing is printed.
	require.NoError(t, s.PortWrite(3, []byte{0x83}))
	require.Equal(t, byte(0x83), serialRead(s, 3))
	require.NoError(t, s.PortWrite(0, []byte{0x01}))
	require.NoError(t, s.PortWrite(1, []byte{0x02}))
	require.Equal(t, byte(0x01), serialRead(s, 0), "DLL")
	require.Equal(t, byte(0x02), serialRead(s, 1), "DLM")
	require.Equal(t, "hi\nx", out.String(), "divisor writes are not output")

	// Clearing DLAB restores THR and the IER value from before.
	require.NoError(t, s.PortWrite(3, []byte{0x03}))
	require.Equal(t, byte(0x0f), serialRead(s, 1))
	require.Zero(t, serialRead(s, 0))
	require.NoError(t, s.PortWrite(0, []byte{'!'}))
	require.Equal(t, "hi\nx!", out.String())

	// Output errors are dropped, not returned to the guest.
	out.fail = true
	require.NoError(t, s.PortWrite(0, []byte{'?'}))
	require.Equal(t, "hi\nx!", out.String())

	// A serial without Out swallows bytes.
	require.NoError(t, (&devices.Serial{}).PortWrite(0, []byte{'a'}))
}

func TestExitPort(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		want uint32
	}{
		{[]byte{0}, 0},
		{[]byte{7}, 7},
		{[]byte{0x34, 0x12}, 0x1234},
		{[]byte{0xff, 0xff, 0xff, 0xff}, 0xffffffff},
	} {
		err := devices.ExitPort{}.PortWrite(0, tc.data)
		var off *devices.PowerOff
		require.ErrorAs(t, err, &off)
		require.Equal(t, tc.want, off.Status)
		require.Contains(t, err.Error(), "status")
	}
	data := []byte{1, 2, 3, 4}
	devices.ExitPort{}.PortRead(0, data)
	require.Equal(t, []byte{0, 0, 0, 0}, data)
}

func TestNull(t *testing.T) {
	require.NoError(t, devices.Null{}.PortWrite(0, []byte{1, 2, 3, 4}))
	data := []byte{9, 9}
	devices.Null{}.PortRead(0, data)
	require.Equal(t, []byte{0, 0}, data)
}

func TestExitThroughBus(t *testing.T) {
	var b devices.Bus
	require.NoError(t, b.Attach("exit", 0x501, 1, devices.ExitPort{}))
	err := b.Write(0x501, []byte{3, 0, 0, 0})
	var off *devices.PowerOff
	require.ErrorAs(t, err, &off)
	require.Equal(t, uint32(3), off.Status)
}

// A detached timer (replay) keeps its programmed period but never fires.
func TestDetachedTimerNeverFires(t *testing.T) {
	tm := devices.NewTimer(nil, 0)
	tm.SetPeriod(devices.MinTimerPeriod)
	require.Equal(t, devices.MinTimerPeriod, tm.Period())
	time.Sleep(20 * devices.MinTimerPeriod) // would be ~20 expiries if armed
	tm.Stop()
	require.Zero(t, tm.Period())
}

// Jitter moves expiries but the timer keeps ticking.
func TestTimerJitterStillTicks(t *testing.T) {
	var raised atomic.Int64
	tm := devices.NewTimer(func() { raised.Add(1) }, 500*time.Microsecond)
	tm.SetPeriod(time.Millisecond)
	defer tm.Stop()
	require.Eventually(t, func() bool { return raised.Load() >= 5 }, 5*time.Second, time.Millisecond)
}

func TestEntropyReadsDiffer(t *testing.T) {
	var e devices.Entropy
	a, b := make([]byte, 4), make([]byte, 4)
	e.PortRead(0, a)
	e.PortRead(0, b)
	// 2^-32 chance of a false failure.
	require.NotEqual(t, a, b)
	require.NoError(t, e.PortWrite(0, a))
}
