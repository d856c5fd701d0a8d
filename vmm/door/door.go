// Package door is the wire between a Linux program's published ports and
// the program's kernel: the messages that cross the machine's door. A
// host client's connection, its bytes, its end and the room it leaves are
// inputs (host → guest); what the program sends back, its end and the
// room it gives are outputs (guest → host). A recording logs the inputs
// as received frames at the position the guest sees them, and of the
// outputs only a digest, which a replay checks.
//
// A message, little-endian:
//
//	op u8 | conn u32 | body
//
//	Open    port u16 | peer address [16]byte | peer port u16
//	Connect port u16 | peer address [16]byte | peer port u16   (the guest's local port, where to)
//	Connected —
//	Datagram port u16 | peer address [16]byte | peer port u16 | bytes (0 … MaxData)   (a published UDP port's: the guest port, the client)
//	Data    offset u64 | bytes (1 … MaxData)
//	Sent    offset u64 | length u32 | SHA-256 prefix [16]byte   (Data's digest, as logged)
//	Fin     —
//	Close   —
//	Reset   —
//	Ack     n u32   (bytes the guest sent that reached the host client)
//	Window  n u32   (bytes the guest took off its receive buffer)
//
// Both sides keep a connection's window: the host reads no more from its
// client than the guest's receive buffer has room for (Window gives room
// back), and the guest sends no more than the host has acknowledged
// writing plus its send buffer (Ack gives room back) — so neither side
// queues without bound, and every wait is decided by logged inputs.
package door

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/reprise-vm/reprise/abi"
)

// Op is what a message says.
type Op uint8

const (
	// Open: a host client connected to a published port (host → guest).
	Open Op = iota + 1
	// Data: bytes of the connection, either way.
	Data
	// Sent is a Data message the guest sent, as a tape keeps it.
	Sent
	// Fin: no more bytes from this side (host's end of file, or the
	// guest's shutdown for writing).
	Fin
	// Close: the guest closed its socket: no more bytes either way.
	Close
	// Reset: the connection is gone at once (a TCP reset), either way.
	Reset
	// Ack: bytes the guest sent reached the client (host → guest).
	Ack
	// Window: the guest took bytes off its receive buffer (guest → host).
	Window
	// Connect: the program connects to a host address (guest → host),
	// allowed by --egress; Connected (host → guest) says it did, Reset
	// that it was refused.
	Connect
	Connected
	// Datagram: a UDP datagram through a published UDP port, from a
	// client to the guest port or back (Port the guest's, Peer the
	// client as the program sees it).
	Datagram
)

var opNames = [...]string{Open: "open", Data: "data", Sent: "sent", Fin: "fin", Close: "close", Reset: "reset", Ack: "ack", Window: "window",
	Connect: "connect", Connected: "connected", Datagram: "datagram"}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("op %d", uint8(o))
}

// The addresses either end sees across the door (the user-mode
// network's): the host's end is HostAddr to the program — a published
// connection's client, and the host's own loopback for egress — and the
// machine is GuestAddr to the host.
var (
	HostAddr  = addr4(abi.NetHostIP)
	GuestAddr = addr4(abi.NetGuestIP)
)

func addr4(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// EgressBit marks the connections the program opens (--egress), apart
// from those host clients open: the program's kernel numbers them with
// it set, the host side with it clear.
const EgressBit = 1 << 31

// MaxData bounds the bytes one Data message carries: with its header,
// a message fits a tape's frame (at most 65 535 bytes).
const MaxData = 64<<10 - 64

// Room is a connection's window each way: what the guest's receive
// buffer holds (vfs.SocketCapacity, Linux's default socket buffer).
const Room = 212992

// Msg is one message.
type Msg struct {
	Op   Op
	Conn uint32
	// Open: the guest port connected to and the client's address as the
	// guest sees it; Connect: the guest's local port and where it
	// connects.
	Port uint16
	Peer netip.AddrPort
	// Data and Sent: where the bytes start in the connection's stream;
	// Sent's Len and Digest stand for Data's bytes.
	Offset uint64
	Data   []byte
	Len    uint32
	Digest [16]byte
	// N is Ack's and Window's count.
	N uint32
}

const header = 5

// Encode is m on the wire.
func (m *Msg) Encode() []byte {
	b := make([]byte, header, header+32+len(m.Data))
	b[0] = byte(m.Op)
	binary.LittleEndian.PutUint32(b[1:], m.Conn)
	switch m.Op {
	case Open, Connect, Datagram:
		a := m.Peer.Addr().As16()
		b = binary.LittleEndian.AppendUint16(b, m.Port)
		b = append(b, a[:]...)
		b = binary.LittleEndian.AppendUint16(b, m.Peer.Port())
		if m.Op == Datagram {
			b = append(b, m.Data...)
		}
	case Data:
		b = binary.LittleEndian.AppendUint64(b, m.Offset)
		b = append(b, m.Data...)
	case Sent:
		b = binary.LittleEndian.AppendUint64(b, m.Offset)
		b = binary.LittleEndian.AppendUint32(b, m.Len)
		b = append(b, m.Digest[:]...)
	case Ack, Window:
		b = binary.LittleEndian.AppendUint32(b, m.N)
	}
	return b
}

// Logged is m as a tape keeps what the guest sent: Data by its length
// and digest, anything else whole.
func (m *Msg) Logged() []byte {
	if m.Op != Data {
		return m.Encode()
	}
	sum := sha256.Sum256(m.Data)
	s := Msg{Op: Sent, Conn: m.Conn, Offset: m.Offset, Len: uint32(len(m.Data)), Digest: [16]byte(sum[:16])}
	return s.Encode()
}

// ErrMalformed is a message that is not one: it came from a damaged tape.
var ErrMalformed = errors.New("malformed door message")

// Parse reads a message, refusing one of the wrong length, an unknown
// op, or Data of no bytes or more than MaxData.
func Parse(b []byte) (Msg, error) {
	if len(b) < header {
		return Msg{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	m := Msg{Op: Op(b[0]), Conn: binary.LittleEndian.Uint32(b[1:])}
	body := b[header:]
	want := map[Op]int{Open: 20, Connect: 20, Connected: 0, Sent: 28, Fin: 0, Close: 0, Reset: 0, Ack: 4, Window: 4}
	switch n, ok := want[m.Op]; {
	case m.Op == Data:
		if len(body) <= 8 || len(body) > 8+MaxData {
			return Msg{}, fmt.Errorf("%w: data of %d bytes", ErrMalformed, len(body)-min(len(body), 8))
		}
	case m.Op == Datagram:
		if len(body) < 20 || len(body) > 20+MaxData {
			return Msg{}, fmt.Errorf("%w: a datagram of %d bytes", ErrMalformed, len(body)-min(len(body), 20))
		}
	case !ok || len(body) != n:
		return Msg{}, fmt.Errorf("%w: %v with a body of %d bytes", ErrMalformed, m.Op, len(body))
	}
	switch m.Op {
	case Open, Connect, Datagram:
		m.Port = binary.LittleEndian.Uint16(body)
		m.Peer = netip.AddrPortFrom(netip.AddrFrom16([16]byte(body[2:18])).Unmap(), binary.LittleEndian.Uint16(body[18:20]))
		if m.Op == Datagram {
			m.Data = body[20:]
		}
	case Data:
		m.Offset, m.Data = binary.LittleEndian.Uint64(body), body[8:]
	case Sent:
		m.Offset, m.Len = binary.LittleEndian.Uint64(body), binary.LittleEndian.Uint32(body[8:])
		m.Digest = [16]byte(body[12:28])
	case Ack, Window:
		m.N = binary.LittleEndian.Uint32(body)
	}
	return m, nil
}

// String names the message for an error: its connection, what it says
// and, for bytes, where they are in the stream.
func (m Msg) String() string {
	s := fmt.Sprintf("connection %d: %v", m.Conn, m.Op)
	switch m.Op {
	case Open:
		s += fmt.Sprintf(" to port %d from %v", m.Port, m.Peer)
	case Connect:
		s += fmt.Sprintf(" from port %d to %v", m.Port, m.Peer)
	case Datagram:
		s += fmt.Sprintf(" of %d bytes between port %d and %v", len(m.Data), m.Port, m.Peer)
	case Data:
		s += fmt.Sprintf(" of %d bytes at offset %d", len(m.Data), m.Offset)
	case Sent:
		s += fmt.Sprintf(" of %d bytes at offset %d (sha256 %x…)", m.Len, m.Offset, m.Digest[:4])
	case Ack, Window:
		s += fmt.Sprintf(" %d", m.N)
	}
	return s
}

// Describe names a message on the wire, or says it is not one.
func Describe(b []byte) string {
	m, err := Parse(b)
	if err != nil {
		return err.Error()
	}
	return m.String()
}
