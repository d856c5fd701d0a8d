package rsp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseThreadID(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want ThreadID
	}{
		{"p1.2", ThreadID{PID: 1, TID: 2}},
		{"p1a.ff", ThreadID{PID: 0x1a, TID: 0xff}},
		{"p1", ThreadID{PID: 1, TID: All}},
		{"p1.-1", ThreadID{PID: 1, TID: All}},
		{"p-1", AllThreads},
		{"p-1.-1", AllThreads},
		{"p0.0", AnyThread},
		{"2", ThreadID{PID: Any, TID: 2}},
		{"-1", AllThreads},
		{"0", AnyThread},
		{"7fffffff", ThreadID{PID: Any, TID: 0x7fffffff}},
	} {
		got, err := parseThreadID(tc.s)
		require.NoError(t, err, tc.s)
		require.Equal(t, tc.want, got, tc.s)
	}
}

func TestParseThreadIDRefuses(t *testing.T) {
	for _, tc := range []struct{ s, err string }{
		{"", "empty number"},
		{"p", "pid: empty number"},
		{"p1.", "tid: empty number"},
		{"px.1", `pid: 'x' is not a hex digit`},
		{"p1.2.3", `tid: '.' is not a hex digit`},
		{"-2", `'-' is not a hex digit`},
		{"80000000", "over 2^31-1"},
		{"p1.80000000", "over 2^31-1"},
		{"p-1.2", "a single thread of every process"},
		{"12345678901234567", "17 hex digits, over 16"},
	} {
		_, err := parseThreadID(tc.s)
		require.ErrorContains(t, err, tc.err, tc.s)
	}
}

func TestThreadIDString(t *testing.T) {
	require.Equal(t, "p1.2", ThreadID{PID: 1, TID: 2}.String())
	require.Equal(t, "p1a.ff", ThreadID{PID: 0x1a, TID: 0xff}.String())
	require.Equal(t, "p-1.-1", AllThreads.String())
	require.Equal(t, "p1.-1", ThreadID{PID: 1, TID: All}.String())
	require.Equal(t, "p0.0", AnyThread.String())
	for _, id := range []ThreadID{{PID: 5, TID: 0x1234}, AllThreads, AnyThread, {PID: 1, TID: All}} {
		got, err := parseThreadID(id.String())
		require.NoError(t, err)
		require.Equal(t, id, got)
	}
}
