package rsp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseVContRefuses(t *testing.T) {
	for _, tc := range []struct{ payload, err string }{
		{"vCont;", `action 1 "": empty action`},
		{"vCont;c;", `action 2 "": empty action`},
		{"vCont;x", `action 1 "x": unknown action 'x'`},
		{"vCont;cc", `"c" after 'c'`},
		{"vCont;c:", `thread id "": empty number`},
		{"vCont;c:p1.x", `tid: 'x' is not a hex digit`},
		{"vCont;C", `signal: empty number`},
		{"vCont;C123:p1.1", `signal "123": over two hex digits`},
		{"vCont;r10,5", `range [0x10, 0x5) ends before it starts`},
		{"vCont;r10", `missing comma`},
		{"vCont;r,5", `range start: empty number`},
		{"vCont;r10,:p1.1", `range end: empty number`},
		{"vCont" + strings.Repeat(";c", maxVContActions+1), `1025 actions, over 1024`},
	} {
		_, err := Parse([]byte(tc.payload))
		require.ErrorContains(t, err, tc.err, tc.payload)
	}
}

func TestParseVContMostActions(t *testing.T) {
	c, err := Parse([]byte("vCont" + strings.Repeat(";s:p1.1", maxVContActions)))
	require.NoError(t, err)
	require.Len(t, c.(VCont).Actions, maxVContActions)
}
