package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestByteSizeSet(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"64M", 64 << 20},
		{"64m", 64 << 20},
		{"1G", 1 << 30},
		{"1g", 1 << 30},
		{"512MiB", 512 << 20},
		{"64MB", 64 << 20},
		{"2gb", 2 << 30},
		{"512mib", 512 << 20},
		{"2GiB", 2 << 30},
		{"2097152", 2 << 20},
		{"4k", 4 << 10},
		{"4KiB", 4 << 10},
		{"100B", 100},
		{" 8M ", 8 << 20},
		{"8 M", 8 << 20},
		{"4294967296G", 1 << 62}, // the largest value accepted
	} {
		t.Run(tc.in, func(t *testing.T) {
			var s byteSize
			require.NoError(t, s.Set(tc.in))
			require.Equal(t, tc.want, uint64(s))
		})
	}
}

func TestByteSizeSetRejects(t *testing.T) {
	for _, in := range []string{
		"", " ", "0", "0M", "-1", "-1M", "1T", "1TiB", "abc", "M", "MiB", "1.5G", "0x100",
		"1MM", "1 2M",
		"4294967297G",          // (2^32+1) GiB > 2^62
		"4611686018427387905",  // 2^62+1
		"18446744073709551616", // 2^64
		"99999999999999999999999G",
	} {
		t.Run(in, func(t *testing.T) {
			s := byteSize(123)
			err := s.Set(in)
			require.Error(t, err)
			require.Contains(t, err.Error(), "size")
			require.Equal(t, byteSize(123), s, "a rejected Set leaves the value alone")
		})
	}
}

func TestByteSizeString(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{4 << 10, "4096"},
		{64 << 20, "64M"},
		{1536 << 20, "1536M"},
		{1 << 30, "1G"},
		{1 << 62, "4294967296G"},
		{1<<30 + 1, "1073741825"},
	} {
		s := byteSize(tc.v)
		require.Equal(t, tc.want, s.String())
		if tc.v == 0 {
			continue // 0 is the unset default, not a valid flag value
		}
		var back byteSize
		require.NoError(t, back.Set(s.String()), "String output %q must parse", s.String())
		require.Equal(t, s, back, "round trip of %q", s.String())
	}
	require.Equal(t, "size", new(byteSize).Type())
}
