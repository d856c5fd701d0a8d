package abi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckRAMSize(t *testing.T) {
	for _, ok := range []uint64{MinGuestBytes, 64 << 20, 130 << 20, MaxGuestBytes} {
		require.NoError(t, CheckRAMSize(ok), "%d", ok)
	}
	for size, want := range map[uint64]string{
		0:                     "0 bytes is too small: at least 8 MiB",
		6 << 20:               "6 MiB is too small",
		MaxGuestBytes + 2<<20: "4098 MiB is too large: the limit is 4 GiB, all the VMM's page tables can map",
		32 << 30:              "32 GiB is too large",
		1 << 62:               "too large",
		^uint64(0):            "too large",
		65<<20 + 0:            "65 MiB is not a multiple of 2 MiB",
		64<<20 + 4096:         "65540 KiB is not a multiple of 2 MiB",
		MaxGuestBytes - 1<<20: "4095 MiB is not a multiple",
	} {
		require.ErrorContains(t, CheckRAMSize(size), want, "%d", size)
	}
}

func TestCheckTimerHz(t *testing.T) {
	for _, ok := range []int{-1, 0, 1, 100, MaxTimerHz} {
		require.NoError(t, CheckTimerHz(ok))
	}
	require.ErrorContains(t, CheckTimerHz(MaxTimerHz+1), "the limit is 10000 Hz")
	require.ErrorContains(t, CheckTimerHz(100_000_000), "100000000 Hz is too fast")
}
