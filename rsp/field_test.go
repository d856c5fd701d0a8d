package rsp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseHex(t *testing.T) {
	for s, want := range map[string]uint64{
		"0":                0,
		"ff":               0xff,
		"FF":               0xff,
		"7fffffffe000":     0x7fffffffe000,
		"ffffffffffffffff": 1<<64 - 1,
		"0000000000000001": 1,
	} {
		got, err := parseHex(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	for s, msg := range map[string]string{
		"":                  "empty number",
		"0x10":              `'x' is not a hex digit`,
		"-1":                `'-' is not a hex digit`,
		"+1":                `'+' is not a hex digit`,
		"1_0":               `'_' is not a hex digit`,
		"10000000000000000": "17 hex digits, over 16",
	} {
		_, err := parseHex(s)
		require.ErrorContains(t, err, msg, s)
	}
}

func TestParseHexBytes(t *testing.T) {
	got, err := parseHexBytes("00ff7E")
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0xff, 0x7e}, got)
	got, err = parseHexBytes("")
	require.NoError(t, err)
	require.Nil(t, got)
	_, err = parseHexBytes("abc")
	require.ErrorContains(t, err, "odd number of hex digits (3)")
	_, err = parseHexBytes("0g")
	require.ErrorContains(t, err, `"0g" is not a hex byte`)
}

func TestCheckRange(t *testing.T) {
	require.NoError(t, checkRange(1<<64-1, 1))
	require.NoError(t, checkRange(1<<64-1, 0))
	require.NoError(t, checkRange(0, 1<<64-1))
	require.ErrorContains(t, checkRange(1<<64-1, 2), "wraps past 2^64")
	require.NoError(t, checkRange(1, 1<<64-1))
	require.ErrorContains(t, checkRange(2, 1<<64-1), "wraps past 2^64")
}
