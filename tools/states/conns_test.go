package states

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb"
)

// A connection's messages become exchanges: a request (host data, in as
// many messages as it came) and the reply after it, until the next
// request; acknowledgements and windows only stretch the connection; a
// program that speaks first opens an exchange with its reply alone.
func TestConns(t *testing.T) {
	db, err := eventdb.Open(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	run, in, err := db.NewRun("/tapes/web.tape", nil, "")
	require.NoError(t, err)
	msg := func(conn uint32, at int, op uint64, sent bool, n uint64) {
		a := op
		if sent {
			a += eventdb.ConnSent
		}
		require.NoError(t, in.Add(&eventdb.Event{Kind: eventdb.KindConn, Thread: conn, Time: us * 10 * time.Duration(at), Addr: a, Args: []uint64{n, 0}}))
	}
	msg(1, 1, eventdb.ConnOpen, false, 0)
	msg(1, 2, eventdb.ConnData, false, 40)
	msg(1, 3, eventdb.ConnData, false, 60) // the rest of the request
	msg(1, 4, eventdb.ConnData, true, 500)
	msg(1, 5, eventdb.ConnOther, false, 0)
	msg(1, 6, eventdb.ConnData, true, 20) // more of the reply
	msg(1, 7, eventdb.ConnData, false, 90)
	msg(1, 8, eventdb.ConnData, true, 7)
	msg(1, 9, eventdb.ConnEnd, true, 0)
	msg(2|1<<31, 3, eventdb.ConnOpen, true, 0)
	msg(2|1<<31, 4, eventdb.ConnOpen, false, 0)
	msg(2|1<<31, 5, eventdb.ConnData, true, 12) // the program speaks first
	msg(2|1<<31, 6, eventdb.ConnData, false, 30)
	require.NoError(t, in.Finish())
	r := &Run{}
	require.NoError(t, r.loadConns(db, run.ID))
	require.Len(t, r.Conns, 2)
	c := r.Conns[0]
	require.Equal(t, uint32(1), c.ID)
	require.Equal(t, Span{10 * us, 90 * us}, c.Span)
	require.Equal(t, []Exchange{{Span{20 * us, 60 * us}, 100, 520}, {Span{70 * us, 80 * us}, 90, 7}}, c.Exchanges)
	require.Equal(t, []Exchange{{Span{50 * us, 50 * us}, 0, 12}, {Span{60 * us, 60 * us}, 30, 0}}, r.Conns[1].Exchanges)
}
