package netback

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reprise-vm/reprise/vmm/door"
)

// Publish is a published port: host clients connecting to Host reach the
// program's port Guest (docker's -p HOSTADDR:HOSTPORT:GUESTPORT), over
// TCP, or UDP.
type Publish struct {
	Host  netip.AddrPort
	Guest uint16
	UDP   bool
}

func (p Publish) String() string {
	proto := "tcp"
	if p.UDP {
		proto = "udp"
	}
	return fmt.Sprintf("%v:%d/%s", p.Host, p.Guest, proto)
}

// ParsePublish reads [HOSTADDR:]HOSTPORT:GUESTPORT[/tcp|/udp], the host
// address 127.0.0.1 by default (an IPv6 one in brackets).
func ParsePublish(s string) (Publish, error) {
	bad := func(why string) (Publish, error) {
		return Publish{}, fmt.Errorf("--publish %q: %s (want [HOSTADDR:]HOSTPORT:GUESTPORT[/tcp|/udp])", s, why)
	}
	spec, proto, hasProto := strings.Cut(s, "/")
	if hasProto && proto != "tcp" && proto != "udp" {
		return bad("tcp or udp is published")
	}
	i := strings.LastIndex(spec, ":")
	if i < 0 {
		return bad("no guest port")
	}
	guest, err := port(spec[i+1:])
	if err != nil {
		return bad("guest port: " + err.Error())
	}
	host := spec[:i]
	addr := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	if j := strings.LastIndex(host, ":"); j >= 0 {
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host[:j], "["), "]"))
		if err != nil {
			return bad("host address: " + err.Error())
		}
		addr, host = a, host[j+1:]
	}
	hp, err := port(host)
	if err != nil {
		return bad("host port: " + err.Error())
	}
	return Publish{Host: netip.AddrPortFrom(addr, hp), Guest: guest, UDP: proto == "udp"}, nil
}

func port(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a port from 1 to 65535", s)
	}
	return uint16(n), nil
}

// MaxDoorConns bounds the host connections open at once through a
// machine's published ports: past it the door stops accepting (clients
// wait in the host's listen backlog), so clients cannot grow the VMM.
const MaxDoorConns = 256

// Door is a machine's published ports: the host side of connections
// host clients make to them (a Backend whose frames are door messages).
// Each connection has a reader, which takes no more from its client than
// the guest gave window for, and a writer, which writes what the guest
// sent and acknowledges it.
type Door struct {
	raise     func()
	egress    map[netip.AddrPort]bool // the host addresses the program may connect to
	listeners []net.Listener
	// udp are the published UDP ports' sockets, by guest port, and
	// clients each one's clients by the port the program sees them at
	// (at most a port's worth each).
	udp     map[uint16]*net.UDPConn
	clients map[uint16]map[uint16]netip.AddrPort // guarded by mu
	// datagrams are the datagrams queued for the guest (MaxDatagrams).
	datagrams int
	slots     chan struct{} // one per open connection (MaxDoorConns)
	done      chan struct{} // closed by Close
	wg        sync.WaitGroup

	mu     sync.Mutex
	cond   *sync.Cond // credit given, writes queued, closing
	queue  []*pending // messages for the guest, oldest first
	conns  map[uint32]*doorConn
	next   uint32
	closed bool
}

// pending is a message queued for the guest; a connection adds to its
// last Data or Ack while that is still queued.
type pending struct {
	msg door.Msg
	at  time.Time
}

// doorConn is one host connection.
type doorConn struct {
	id     uint32
	c      *net.TCPConn
	credit int    // bytes the guest has room for
	read   uint64 // bytes read from the client
	out    [][]byte
	// guestDone: the guest closed or reset its side; finAfter: a write
	// shutdown follows the queued writes.
	guestDone, finAfter, reset bool
	readerDone, writerDone     bool
	data, ack                  *pending // still queued, to add to
}

// OpenDoor listens on each published port's host address (an address in
// use is an error naming it) and lets the program connect to the egress
// addresses.
func OpenDoor(pubs []Publish, egress []netip.AddrPort, raise func()) (*Door, error) {
	d := &Door{raise: raise, slots: make(chan struct{}, MaxDoorConns), done: make(chan struct{}), conns: map[uint32]*doorConn{},
		egress: map[netip.AddrPort]bool{}}
	for _, e := range egress {
		d.egress[e] = true
	}
	d.cond = sync.NewCond(&d.mu)
	d.udp, d.clients = map[uint16]*net.UDPConn{}, map[uint16]map[uint16]netip.AddrPort{}
	var guests []uint16
	for _, p := range pubs {
		if p.UDP {
			if d.udp[p.Guest] != nil { // its replies could not tell which host address they leave from
				d.Close()
				return nil, fmt.Errorf("publish %v: guest port %d is published over UDP already", p, p.Guest)
			}
			c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(p.Host))
			if err != nil {
				d.Close()
				return nil, fmt.Errorf("publish %v: %w", p, err)
			}
			d.udp[p.Guest] = c
			continue
		}
		l, err := net.Listen("tcp", p.Host.String())
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("publish %v: %w", p, err)
		}
		d.listeners = append(d.listeners, l)
		guests = append(guests, p.Guest)
	}
	for i, l := range d.listeners {
		d.wg.Add(1)
		go d.accept(l, guests[i])
	}
	for guest, c := range d.udp {
		d.wg.Add(1)
		go d.receive(c, guest)
	}
	return d, nil
}

// MaxDatagrams bounds the datagrams queued for a guest that does not take
// them: past it they are dropped, as a full socket buffer drops them.
const MaxDatagrams = 1024

// receive queues the datagrams host clients send a published UDP port;
// each client is seen by the program at door.HostAddr and its own port.
func (d *Door) receive(c *net.UDPConn, guest uint16) {
	defer d.wg.Done()
	buf := make([]byte, door.MaxData)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return // closed
		}
		d.mu.Lock()
		if d.datagrams < MaxDatagrams && !d.closed {
			if d.clients[guest] == nil {
				d.clients[guest] = map[uint16]netip.AddrPort{}
			}
			d.clients[guest][from.Port()] = from
			d.datagrams++
			d.push(door.Msg{Op: door.Datagram, Port: guest, Peer: netip.AddrPortFrom(door.HostAddr, from.Port()), Data: append([]byte(nil), buf[:n]...)})
		}
		d.mu.Unlock()
	}
}

// reply sends a datagram the program sent from a published UDP port back
// to the client it names; one to anyone else is dropped (d.mu held).
func (d *Door) reply(m door.Msg) {
	c := d.udp[m.Port]
	to, ok := d.clients[m.Port][m.Peer.Port()]
	if c == nil || !ok || m.Peer.Addr() != door.HostAddr {
		return
	}
	c.WriteToUDPAddrPort(m.Data, to) // a datagram lost on the host is lost
}

// Addrs are the host addresses listened on, TCP then UDP (a port 0
// chosen by the host).
func (d *Door) Addrs() []net.Addr {
	var out []net.Addr
	for _, l := range d.listeners {
		out = append(out, l.Addr())
	}
	for _, c := range d.udp {
		out = append(out, c.LocalAddr())
	}
	return out
}

func (d *Door) accept(l net.Listener, guest uint16) {
	defer d.wg.Done()
	for {
		select { // a slot first: past the bound, clients wait in the host's backlog
		case d.slots <- struct{}{}:
		case <-d.done:
			return
		}
		c, err := l.Accept()
		if err != nil {
			<-d.slots
			return // closed
		}
		tc := c.(*net.TCPConn)
		client := netip.MustParseAddrPort(tc.RemoteAddr().String())
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			tc.Close()
			<-d.slots
			return
		}
		d.next++
		d.start(d.next, tc, door.Msg{Op: door.Open, Conn: d.next, Port: guest, Peer: netip.AddrPortFrom(door.HostAddr, client.Port())})
		d.mu.Unlock()
	}
}

// start runs a connection whose slot is taken: announced to the guest
// with m, then read and written (d.mu held).
func (d *Door) start(id uint32, c *net.TCPConn, m door.Msg) {
	dc := &doorConn{id: id, c: c, credit: door.Room}
	d.conns[id] = dc
	d.push(m)
	d.wg.Add(2)
	go d.reader(dc)
	go d.writer(dc)
}

// dialTimeout bounds an egress connection's wait for the host's answer.
const dialTimeout = 10 * time.Second

// connect dials an egress address for the program: the answer, Connected
// or Reset (not allowed, no slot, refused, timed out), is an input
// (d.mu held).
func (d *Door) connect(m door.Msg) {
	if m.Conn&door.EgressBit == 0 || d.conns[m.Conn] != nil {
		return // not the program's to open: dropped
	}
	refuse := func() { d.push(door.Msg{Op: door.Reset, Conn: m.Conn}) }
	to := m.Peer
	if to.Addr() == door.HostAddr { // the host's loopback, as the program sees it
		to = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), to.Port())
	}
	if !d.egress[to] {
		refuse()
		return
	}
	select {
	case d.slots <- struct{}{}:
	default:
		refuse()
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		c, err := net.DialTimeout("tcp", to.String(), dialTimeout)
		d.mu.Lock()
		defer d.mu.Unlock()
		if err != nil || d.closed {
			if c != nil {
				c.Close()
			}
			<-d.slots
			refuse()
			return
		}
		d.start(m.Conn, c.(*net.TCPConn), door.Msg{Op: door.Connected, Conn: m.Conn})
	}()
}

// push queues m for the guest (d.mu held), adding Data and Acks to the
// connection's one still queued, and raises the NIC line.
func (d *Door) push(m door.Msg) {
	dc := d.conns[m.Conn]
	switch {
	case m.Op == door.Data && dc != nil && dc.data != nil && len(dc.data.msg.Data)+len(m.Data) <= door.MaxData:
		dc.data.msg.Data = append(dc.data.msg.Data, m.Data...)
		return
	case m.Op == door.Ack && dc != nil && dc.ack != nil:
		dc.ack.msg.N += m.N
		return
	}
	p := &pending{msg: m, at: time.Now()}
	d.queue = append(d.queue, p)
	if dc != nil {
		switch m.Op {
		case door.Data:
			dc.data = p
		case door.Ack:
			dc.ack = p
		}
	}
	d.raise()
}

func (dc *doorConn) forget(p *pending) {
	if dc.data == p {
		dc.data = nil
	}
	if dc.ack == p {
		dc.ack = nil
	}
}

// reader reads the client within the guest's window: end of file is a
// Fin, an error a Reset.
func (d *Door) reader(dc *doorConn) {
	defer d.wg.Done()
	buf := make([]byte, door.MaxData)
	for {
		d.mu.Lock()
		for dc.credit == 0 && !dc.guestDone && !d.closed {
			d.cond.Wait()
		}
		n := min(dc.credit, len(buf))
		if dc.guestDone {
			n = len(buf) // the guest takes no more: what comes is dropped
		}
		d.mu.Unlock()
		got, err := dc.c.Read(buf[:n])
		d.mu.Lock()
		switch {
		case got > 0 && dc.guestDone:
			// Bytes for a socket the program closed: Linux resets.
			dc.c.SetLinger(0)
			err = errors.New("reset")
		case got > 0:
			d.push(door.Msg{Op: door.Data, Conn: dc.id, Offset: dc.read, Data: append([]byte(nil), buf[:got]...)})
			dc.read += uint64(got)
			dc.credit -= got
		}
		if err != nil {
			if !dc.guestDone && !d.closed {
				op := door.Fin
				if !errors.Is(err, io.EOF) {
					op, dc.reset = door.Reset, true // the writer stops too
				}
				d.push(door.Msg{Op: op, Conn: dc.id})
			}
			dc.readerDone = true
			d.finish(dc)
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
}

// writer writes what the guest sent, acknowledging each write; a failed
// write resets the guest's side.
func (d *Door) writer(dc *doorConn) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		for len(dc.out) == 0 && !dc.finAfter && !dc.reset && !d.closed {
			d.cond.Wait()
		}
		if len(dc.out) == 0 || dc.reset || d.closed {
			if dc.finAfter && !dc.reset && !d.closed {
				dc.c.CloseWrite()
			}
			dc.writerDone = true
			d.finish(dc)
			d.mu.Unlock()
			return
		}
		b := dc.out[0]
		dc.out = dc.out[1:]
		d.mu.Unlock()
		_, err := dc.c.Write(b)
		d.mu.Lock()
		if err != nil && !dc.guestDone && !d.closed {
			d.push(door.Msg{Op: door.Reset, Conn: dc.id})
			dc.reset = true
		}
		if err == nil {
			d.push(door.Msg{Op: door.Ack, Conn: dc.id, N: uint32(len(b))})
		}
		d.mu.Unlock()
	}
}

// finish closes a connection both of whose sides are done (d.mu held).
func (d *Door) finish(dc *doorConn) {
	if !dc.readerDone || !dc.writerDone {
		d.cond.Broadcast()
		return
	}
	if dc.reset {
		dc.c.SetLinger(0)
	}
	dc.c.Close()
	delete(d.conns, dc.id)
	<-d.slots
}

// Take removes up to n messages for the guest, oldest first.
func (d *Door) Take(n int) []Frame {
	d.mu.Lock()
	defer d.mu.Unlock()
	n = min(n, len(d.queue))
	out := make([]Frame, n)
	for i, p := range d.queue[:n] {
		if p.msg.Op == door.Datagram {
			d.datagrams--
		} else if dc := d.conns[p.msg.Conn]; dc != nil {
			dc.forget(p)
		}
		out[i] = Frame{Data: p.msg.Encode(), At: p.at}
	}
	d.queue = d.queue[n:]
	return out
}

// Backlog is how many messages wait for the guest.
func (d *Door) Backlog() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue)
}

// Send takes a message the guest sent: bytes to write, room it gave, its
// side's end. A message for a connection already gone is dropped, as
// TCP drops a segment for a closed one.
func (d *Door) Send(frame []byte) error {
	m, err := door.Parse(frame)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch m.Op {
	case door.Connect:
		d.connect(m)
		return nil
	case door.Datagram:
		d.reply(m)
		return nil
	}
	dc := d.conns[m.Conn]
	if dc == nil {
		return nil
	}
	switch m.Op {
	case door.Data:
		if !dc.reset {
			dc.out = append(dc.out, append([]byte(nil), m.Data...))
		}
	case door.Window:
		dc.credit = min(dc.credit+int(m.N), door.Room)
	case door.Fin:
		dc.finAfter = true
	case door.Close:
		dc.finAfter, dc.guestDone = true, true
	case door.Reset:
		dc.reset, dc.guestDone = true, true
		dc.out = nil
		dc.c.SetLinger(0)
		dc.c.CloseRead() // the reader stops now
	default:
		return fmt.Errorf("door: the guest sent %v", m)
	}
	d.cond.Broadcast()
	return nil
}

// Close stops listening and closes every connection.
func (d *Door) Close() error {
	d.mu.Lock()
	if !d.closed {
		close(d.done)
	}
	d.closed = true
	for _, dc := range d.conns {
		dc.c.Close()
	}
	d.cond.Broadcast()
	d.mu.Unlock()
	var errs []error
	for _, l := range d.listeners {
		errs = append(errs, l.Close())
	}
	for _, c := range d.udp {
		errs = append(errs, c.Close())
	}
	d.wg.Wait()
	return errors.Join(errs...)
}
