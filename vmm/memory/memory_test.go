package memory_test

import (
	"math"
	"math/bits"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
)

const mib = 1 << 20

func newRAM(t testing.TB, size uint64) *memory.RAM {
	t.Helper()
	ram, err := memory.New(size)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ram.Close()) })
	return ram
}

func TestNewSizes(t *testing.T) {
	for _, size := range []uint64{0, 1, 4096, mib, 2*mib + 4096, 3 * mib, math.MaxUint64} {
		_, err := memory.New(size)
		require.ErrorContains(t, err, "multiple of 2 MiB", "size %#x", size)
	}
	// Multiples of 2 MiB too large to map (beyond the address space, or
	// negative as an int) fail cleanly instead of panicking.
	for _, size := range []uint64{1 << 62, 1 << 63} {
		_, err := memory.New(size)
		require.ErrorContains(t, err, "the limit is 4 GiB", "size %#x", size)
	}
	for _, size := range []uint64{2 * mib, 8 * mib} {
		ram := newRAM(t, size)
		require.Equal(t, size, ram.Size())
		require.Len(t, ram.Mapping(), int(size))
		require.Zero(t, ram.Mapping()[size-1], "fresh RAM is zero")
	}
}

// maxRSS is the process's peak resident set in bytes.
func maxRSS(t *testing.T) uint64 {
	var ru unix.Rusage
	require.NoError(t, unix.Getrusage(unix.RUSAGE_SELF, &ru))
	return uint64(ru.Maxrss) << 10
}

// A size above the guest limit is refused before anything is mapped: no
// time spent and no host memory touched (4 GiB would otherwise take ~30 s
// and 4 GiB of RSS).
func TestNewRefusesAboveLimitWithoutMapping(t *testing.T) {
	before := maxRSS(t)
	start := time.Now()
	_, err := memory.New(abi.MaxGuestBytes + 2*mib)
	require.ErrorContains(t, err, "guest RAM of 4098 MiB is too large: the limit is 4 GiB")
	require.Less(t, time.Since(start), time.Second)
	require.Less(t, maxRSS(t)-before, uint64(64*mib), "nothing was touched")
}

// A size the host does not have is refused the same way: a guest may touch
// all its RAM, so it would push the host out of memory.
func TestNewRefusesMoreThanTheHostHas(t *testing.T) {
	avail, ok := memory.HostAvailable()
	require.True(t, ok, "MemAvailable readable in /proc/meminfo")
	require.Greater(t, avail, uint64(0))

	defer memory.SetHostAvailable(1 << 30)()
	before := maxRSS(t)
	_, err := memory.New(1 << 30)
	require.ErrorContains(t, err, "guest RAM of 1 GiB is more than this host can give: 1 GiB available")
	require.Less(t, maxRSS(t)-before, uint64(64*mib), "nothing was touched")
	newRAM(t, 256*mib) // what fits is still given
}

func TestBounds(t *testing.T) {
	const size = 2 * mib
	ram := newRAM(t, size)
	for _, tc := range []struct {
		name   string
		gpa, n uint64
		ok     bool
	}{
		{"start", 0, 8, true},
		{"empty at start", 0, 0, true},
		{"whole", 0, size, true},
		{"exact end", size - 8, 8, true},
		{"empty at end", size, 0, true},
		{"one past end", size - 7, 8, false},
		{"empty past end", size + 1, 0, false},
		{"longer than RAM", 0, size + 1, false},
		{"gpa near 2^64", math.MaxUint64 - 3, 8, false},
		{"gpa+n wraps to 0", math.MaxUint64 - 7, 8, false},
		{"gpa+n wraps into RAM", math.MaxUint64, 16, false},
		{"len 2^64-1", 0, math.MaxUint64, false},
		{"len 2^64-1 from 1", 1, math.MaxUint64, false},
		{"both huge", math.MaxUint64, math.MaxUint64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ram.Slice(tc.gpa, tc.n)
			if !tc.ok {
				var re *memory.RangeError
				require.ErrorAs(t, err, &re)
				require.Equal(t, memory.RangeError{Addr: tc.gpa, Len: tc.n, Size: size}, *re)
				require.Nil(t, s)
				return
			}
			require.NoError(t, err)
			require.Len(t, s, int(tc.n))
			require.Equal(t, int(tc.n), cap(s), "appending must not spill into the next range")
		})
	}
}

func TestReadWriteUint64(t *testing.T) {
	const size = 2 * mib
	ram := newRAM(t, size)
	var re *memory.RangeError

	require.NoError(t, ram.Write(size-3, []byte{1, 2, 3}))
	got := make([]byte, 3)
	require.NoError(t, ram.Read(size-3, got))
	require.Equal(t, []byte{1, 2, 3}, got)
	require.Equal(t, []byte{1, 2, 3}, ram.Mapping()[size-3:])

	require.ErrorAs(t, ram.Write(size-2, []byte{1, 2, 3}), &re)
	require.ErrorAs(t, ram.Read(size-2, got), &re)
	require.ErrorAs(t, ram.Write(math.MaxUint64, []byte{1}), &re)
	require.ErrorAs(t, ram.Read(math.MaxUint64-1, got), &re)
	require.Equal(t, []byte{1, 2, 3}, got, "a failed Read leaves dst alone")

	require.NoError(t, ram.PutUint64(size-8, 0x0102030405060708))
	v, err := ram.Uint64(size - 8)
	require.NoError(t, err)
	require.Equal(t, uint64(0x0102030405060708), v)
	require.Equal(t, byte(0x08), ram.Mapping()[size-8], "little-endian")

	for _, gpa := range []uint64{size - 7, size, math.MaxUint64 - 7, math.MaxUint64} {
		_, err := ram.Uint64(gpa)
		require.ErrorAs(t, err, &re, "Uint64 at %#x", gpa)
		require.ErrorAs(t, ram.PutUint64(gpa, 1), &re, "PutUint64 at %#x", gpa)
	}
}

func TestRangeErrorMessage(t *testing.T) {
	err := &memory.RangeError{Addr: 0x1000, Len: 8, Size: 0x200000}
	require.Contains(t, err.Error(), "0x1000")
	require.Contains(t, err.Error(), "0x200000")
}

// FuzzSlice checks Slice against exact arithmetic: it succeeds iff
// [gpa, gpa+n) lies in RAM (computed without overflow), and then returns a
// capped view of exactly that range.
func FuzzSlice(f *testing.F) {
	const size = 2 * mib
	ram, err := memory.New(size)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ram.Close() })
	for _, seed := range [][2]uint64{
		{0, 0}, {0, size}, {size, 0}, {size - 8, 8}, {size - 7, 8}, {size + 1, 0},
		{math.MaxUint64, 1}, {math.MaxUint64 - 7, 8}, {1, math.MaxUint64}, {math.MaxUint64, math.MaxUint64},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, gpa, n uint64) {
		end, carry := bits.Add64(gpa, n, 0)
		inside := carry == 0 && end <= size
		s, err := ram.Slice(gpa, n)
		if !inside {
			re, ok := err.(*memory.RangeError)
			if !ok || re.Addr != gpa || re.Len != n || re.Size != size || s != nil {
				t.Fatalf("Slice(%#x, %#x) = len %d, %v; want a RangeError", gpa, n, len(s), err)
			}
			return
		}
		if err != nil || uint64(len(s)) != n || uint64(cap(s)) != n {
			t.Fatalf("Slice(%#x, %#x) = len %d cap %d, %v", gpa, n, len(s), cap(s), err)
		}
		if n > 0 && &s[0] != &ram.Mapping()[gpa] {
			t.Fatalf("Slice(%#x, %#x) does not alias RAM at gpa", gpa, n)
		}
	})
}
