package kvmtest

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
)

// Console collects a guest's console output (written from the vCPU thread)
// and closes Seen the first time the output contains Want: tests wait on it
// before talking to the guest, e.g. until a receiver is listening.
type Console struct {
	want string
	seen chan struct{}
	once sync.Once
	mu   sync.Mutex
	buf  bytes.Buffer // guarded by mu
}

// NewConsole returns a console that watches for want.
func NewConsole(want string) *Console { return &Console{want: want, seen: make(chan struct{})} }

func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.want) {
		c.once.Do(func() { close(c.seen) })
	}
	return len(p), nil
}

// Seen is closed once the output contains the watched text.
func (c *Console) Seen() <-chan struct{} { return c.seen }

// String is the output so far.
func (c *Console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// FreeUDPPort returns a loopback UDP port nobody uses at this moment.
func FreeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
