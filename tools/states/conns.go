package states

import (
	"slices"

	"github.com/reprise-vm/reprise/eventdb"
)

// Conn is a connection through a Linux program's door (a published port's
// client, or --egress), as the program served it: an exchange is bytes
// the host's end sent (a request) and what the program sent back before
// the next request, from the request's first byte to the reply's last.
type Conn struct {
	ID        uint32
	Span      Span // from its first message to its last
	Exchanges []Exchange
}

// Exchange is one request and its reply on a connection.
type Exchange struct {
	Span
	In, Out uint64 // bytes
}

// loadConns gathers the run's door messages (eventdb.KindConn) into
// connections, in order of their first message.
func (r *Run) loadConns(db *eventdb.DB, run uint32) error {
	it := db.Merged(eventdb.Query{Run: run, Kinds: []eventdb.Kind{eventdb.KindConn}})
	byID := map[uint32]*Conn{}
	for it.Next() {
		e := it.Event()
		c := byID[e.Thread]
		if c == nil {
			c = &Conn{ID: e.Thread, Span: Span{e.Time, e.Time}}
			byID[e.Thread] = c
			r.Conns = append(r.Conns, c)
		}
		c.Span.End = max(c.Span.End, e.Time)
		if e.Addr%eventdb.ConnSent != eventdb.ConnData || len(e.Args) == 0 {
			continue
		}
		n, sent := e.Args[0], e.Addr >= eventdb.ConnSent
		last := len(c.Exchanges) - 1
		switch {
		case sent && last >= 0:
			x := &c.Exchanges[last]
			x.Out += n
			x.End = max(x.End, e.Time)
		case sent: // the program spoke first (a greeting)
			c.Exchanges = append(c.Exchanges, Exchange{Span: Span{e.Time, e.Time}, Out: n})
		case last >= 0 && c.Exchanges[last].Out == 0: // more of the request
			c.Exchanges[last].In += n
			c.Exchanges[last].End = max(c.Exchanges[last].End, e.Time)
		default:
			c.Exchanges = append(c.Exchanges, Exchange{Span: Span{e.Time, e.Time}, In: n})
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	slices.SortStableFunc(r.Conns, func(a, b *Conn) int { return int(a.Span.Start - b.Span.Start) })
	return nil
}
