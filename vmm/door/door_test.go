package door

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/tape"
)

func TestRoundTrip(t *testing.T) {
	for _, m := range []Msg{
		{Op: Open, Conn: 7, Port: 8080, Peer: netip.MustParseAddrPort("10.0.2.2:40000")},
		{Op: Data, Conn: 1, Offset: 1 << 40, Data: []byte("GET / HTTP/1.1\r\n")},
		{Op: Data, Conn: 2, Data: bytes.Repeat([]byte{9}, MaxData)},
		{Op: Fin, Conn: 3}, {Op: Close, Conn: 4}, {Op: Reset, Conn: 5},
		{Op: Ack, Conn: 6, N: 212992}, {Op: Window, Conn: 6, N: 53248},
	} {
		b := m.Encode()
		require.LessOrEqual(t, len(b), tape.MaxFrame, "a message fits a tape's frame")
		got, err := Parse(b)
		require.NoError(t, err, m.String())
		require.Equal(t, m.String(), got.String())
		require.Equal(t, b, got.Encode())
	}
}

// A tape keeps what the guest sends by digest: equal bytes log equally,
// one changed byte does not, and the log names connection and offset.
func TestLogged(t *testing.T) {
	a := Msg{Op: Data, Conn: 3, Offset: 100, Data: []byte("HTTP/1.1 200 OK")}
	b := a
	b.Data = []byte("HTTP/1.1 500 OK")
	require.Equal(t, a.Logged(), (&Msg{Op: Data, Conn: 3, Offset: 100, Data: []byte("HTTP/1.1 200 OK")}).Logged())
	require.NotEqual(t, a.Logged(), b.Logged())
	require.Less(t, len(a.Logged()), 40)
	require.Contains(t, Describe(a.Logged()), "connection 3: sent of 15 bytes at offset 100")
	fin := Msg{Op: Fin, Conn: 3}
	require.Equal(t, fin.Encode(), fin.Logged())
}

func TestParseRefuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"short":        {1, 0, 0},
		"unknown op":   {99, 0, 0, 0, 0},
		"op zero":      {0, 0, 0, 0, 0},
		"empty data":   {byte(Data), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"long data":    append([]byte{byte(Data), 1, 0, 0, 0}, make([]byte, 8+MaxData+1)...),
		"open short":   {byte(Open), 1, 0, 0, 0, 80, 0},
		"fin body":     {byte(Fin), 1, 0, 0, 0, 1},
		"ack truncate": {byte(Ack), 1, 0, 0, 0, 1, 0},
	} {
		_, err := Parse(b)
		require.ErrorIs(t, err, ErrMalformed, name)
	}
}

// The parser takes bytes from a tape: nothing crashes it, and what it
// accepts encodes back to the same bytes.
func FuzzParse(f *testing.F) {
	f.Add((&Msg{Op: Open, Conn: 1, Port: 80, Peer: netip.MustParseAddrPort("10.0.2.2:1")}).Encode())
	f.Add((&Msg{Op: Data, Conn: 1, Data: []byte("x")}).Encode())
	f.Add((&Msg{Op: Ack, Conn: 1, N: 5}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		require.Equal(t, b, m.Encode())
	})
}
