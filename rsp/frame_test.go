package rsp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendPacketEscapes(t *testing.T) {
	for _, tc := range []struct{ payload, want string }{
		{"", "$#00"},
		{"OK", "$OK#9a"},
		{"a$b", "$a}\x04b#" + hexSum("a}\x04b")},
		{"#", "$}\x03#" + hexSum("}\x03")},
		{"}", "$}]#" + hexSum("}]")},
		{"0*", "$0}\x0a#" + hexSum("0}\x0a")},
		{"\x03\x00\xff", "$\x03\x00\xff#" + hexSum("\x03\x00\xff")},
	} {
		require.Equal(t, tc.want, string(appendPacket(nil, []byte(tc.payload))), "payload %q", tc.payload)
	}
}

func hexSum(raw string) string {
	p := packet(raw)
	return p[len(p)-2:]
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"", ""},
		{"abc", "abc"},
		{"0* ", "0000"},
		{"0*!", "00000"},
		{"0*\"0", "0000000"},
		{"x*~", strings.Repeat("x", 98)},
		{"a* * ", "aaaaaaa"}, // a run repeats the last byte of the one before
		{"}\x03}\x04}]}\x0a", "#$}*"},
		{"}]* ", "}]]]"},     // runs expand before escapes are undone
		{"}** ", "]]]]]]] "}, // "}*" is no escape: 13 more '}', then pairs
	} {
		got, err := decode([]byte(tc.raw))
		require.NoError(t, err, "raw %q", tc.raw)
		require.Equal(t, tc.want, string(got), "raw %q", tc.raw)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct{ raw, err string }{
		{"*a", "nothing to repeat"},
		{"a*", "without a count"},
		{"a*\x7f", "not printable"},
		{"a*\x1f", "not printable"},
		{"ab}", "escape '}' at the end"},
		{strings.Repeat("a*~", MaxPacket/98+1), "over MaxPacket"},
	} {
		_, err := decode([]byte(tc.raw))
		require.ErrorContains(t, err, tc.err, "raw %q", quote(tc.raw))
	}
}

func TestDecodeBoundary(t *testing.T) {
	// MaxPacket/98 runs of 98 bytes, then single bytes up to MaxPacket exactly.
	runs := MaxPacket / 98
	raw := strings.Repeat("a*~", runs) + strings.Repeat("b", MaxPacket-98*runs)
	got, err := decode([]byte(raw))
	require.NoError(t, err)
	require.Len(t, got, MaxPacket)
	_, err = decode([]byte(raw + "b"))
	require.ErrorContains(t, err, "expands to 65537 bytes")
}

func TestQuoteCutsLongPackets(t *testing.T) {
	require.Equal(t, `"m1,2"`, quote("m1,2"))
	long := strings.Repeat("x", 100)
	require.Equal(t, `"`+long[:quoteLimit]+`"... (100 bytes)`, quote([]byte(long)))
}
