// Package netback is the host side of the guest's NIC: a user-mode network
// that turns host UDP traffic into Ethernet frames for the guest and the
// guest's frames back into UDP datagrams (UDP), or feeds a packet capture
// in as the guest's network input (Pcap). Frames are built and parsed with
// gopacket.
package netback

import (
	"net"
	"sync"
	"time"

	"github.com/reprise-vm/reprise/abi"
)

// Frame is a received Ethernet frame and when it arrived on the host.
type Frame struct {
	Data []byte
	At   time.Time
}

// Backend is where the guest's received frames come from and its sent
// frames go.
type Backend interface {
	// Take removes and returns up to n queued frames, oldest first.
	Take(n int) []Frame
	// Backlog is how many frames are queued.
	Backlog() int
	// Send transmits a frame the guest sent.
	Send(frame []byte) error
	Close() error
}

// MaxBacklog bounds the frames queued for a guest that does not read them;
// beyond it new frames are dropped (and counted), as by a full NIC.
const MaxBacklog = 4096

// Addresses of the user-mode network (abi.NetGuest*, abi.NetHost*).
var (
	GuestMAC = mac(abi.NetGuestMAC)
	HostMAC  = mac(abi.NetHostMAC)
	GuestIP  = ip4(abi.NetGuestIP)
	HostIP   = ip4(abi.NetHostIP)
)

func mac(v uint64) net.HardwareAddr {
	return net.HardwareAddr{byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

func ip4(v uint32) net.IP { return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4() }

// queue is the received-frame queue both backends share.
type queue struct {
	mu      sync.Mutex
	frames  []Frame // guarded by mu
	Dropped uint64  // guarded by mu
	raise   func()  // called after a frame is queued
}

func (q *queue) push(f Frame) {
	q.mu.Lock()
	if len(q.frames) >= MaxBacklog {
		q.Dropped++
		q.mu.Unlock()
		return
	}
	q.frames = append(q.frames, f)
	q.mu.Unlock()
	q.raise()
}

func (q *queue) Take(n int) []Frame {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.frames))
	out := append([]Frame(nil), q.frames[:n]...)
	q.frames = q.frames[n:]
	return out
}

func (q *queue) Backlog() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames)
}
