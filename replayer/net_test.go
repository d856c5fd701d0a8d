package replayer_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

func fnv64(b []byte) uint64 { h := fnv.New64a(); h.Write(b); return h.Sum64() }

// send runs senders concurrent senders of per datagrams each, with random
// sizes and random pauses, each waiting for the guest's ACK; it returns the
// order-independent sum of the payloads' FNVs (what the guest reports).
func send(t *testing.T, port, senders, per int) uint64 {
	var mu sync.Mutex
	var sum uint64
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(s), uint64(time.Now().UnixNano())))
			ack := make([]byte, 256)
			for i := 0; i < per; i++ {
				p := []byte(fmt.Sprintf("sender %d datagram %d %s", s, i, strings.Repeat("x", rng.IntN(1000))))
				mu.Lock()
				sum += fnv64(p)
				mu.Unlock()
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				if _, err := c.Write(p); err != nil {
					t.Error(err)
					return
				}
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Read(ack); err != nil {
					t.Errorf("sender %d, datagram %d: no ACK: %v", s, i, err)
					return
				}
			}
		}(s)
	}
	wg.Wait()
	return sum
}

func recordUDP(t *testing.T, img *elffile.Image, path string, net *vmm.NetConfig, port, count int, feed func()) (string, *recorder.Result) {
	t.Helper()
	console := kvmtest.NewConsole("truth: port=")
	type out struct {
		res *recorder.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := recorder.Record(context.Background(), recorder.Options{
			Image: img, Cmdline: fmt.Sprintf("udp port=%d count=%d", port, count), Output: path,
			Console: console, Net: net, TimerHz: 250, TimerJitter: 2 * time.Millisecond,
		})
		done <- out{res, err}
	}()
	select {
	case <-console.Seen():
	case o := <-done:
		t.Fatalf("the receiver ended before listening: %v\n%s", o.err, console.String())
	}
	feed()
	o := <-done
	require.NoError(t, o.err, console.String())
	require.Equal(t, uint32(0), o.res.Status, console.String())
	return console.String(), o.res
}

// InSight's network correctness experiment: several senders on loopback
// with random timing; the receiver's checksums are identical in the
// recording and in every replay, and match what the senders sent.
func TestNetworkRecordReplay(t *testing.T) {
	img := kitImage(t)
	port := kvmtest.FreeUDPPort(t)
	const senders, per = 3, 40
	path := filepath.Join(t.TempDir(), "net.tape")
	var sent uint64
	console, rec := recordUDP(t, img, path, &vmm.NetConfig{UDP: fmt.Sprintf("127.0.0.1:%d", port)}, port, senders*per,
		func() { sent = send(t, port, senders, per) })
	tr := truthWith(t, console, "received", fmt.Sprint(senders*per))
	require.Equal(t, fmt.Sprintf("0x%016x", sent), tr["sum"], "the guest did not get exactly what was sent")

	for i := 0; i < 5; i++ {
		again, res := replay(t, path)
		require.Equal(t, console, again, "replay %d", i)
		require.Equal(t, rec.End.RAMHash, res.End.RAMHash)
	}
	// Checkpoints hold the NIC's rings: replays from them end alike.
	replaysFromCheckpoints(t, path, console)

	// The capture: every datagram in, every ACK out, parseable.
	pcapPath := filepath.Join(t.TempDir(), "net.pcap")
	exportPcap(t, path, pcapPath)
	rx, tx := countPcap(t, pcapPath, port)
	require.Equal(t, senders*per, rx)
	require.Equal(t, senders*per, tx)
	// tshark reads the capture back as an independent check (in CI always).
	if _, err := exec.LookPath("tshark"); err == nil || os.Getenv("CI") == "true" {
		kvmtest.RequireTools(t, "tshark")
		out, err := exec.Command("tshark", "-r", pcapPath, "-Y", "udp", "-T", "fields", "-e", "udp.dstport").Output()
		require.NoError(t, err)
		require.Equal(t, 2*senders*per, len(strings.Fields(string(out))))
	}

	// The capture fed back as network input reaches the guest in the same
	// order: the same checksums, order-dependent one included.
	path2 := filepath.Join(t.TempDir(), "fed.tape")
	console2, _ := recordUDP(t, img, path2, &vmm.NetConfig{Pcap: pcapPath}, port, senders*per, func() {})
	tr2 := truthWith(t, console2, "received", fmt.Sprint(senders*per))
	require.Equal(t, tr["sum"], tr2["sum"])
	require.Equal(t, tr["fnv"], tr2["fnv"])
}

func exportPcap(t *testing.T, tapePath, out string) {
	t.Helper()
	r, err := tape.Open(tapePath)
	require.NoError(t, err)
	defer r.Close()
	f, err := os.Create(out)
	require.NoError(t, err)
	defer f.Close()
	_, err = tape.WritePcap(r, f)
	require.NoError(t, err)
}

// countPcap counts UDP datagrams to the guest's port (rx) and from it (tx).
func countPcap(t *testing.T, path string, port int) (rx, tx int) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	require.NoError(t, err)
	src := gopacket.NewPacketSource(r, layers.LinkTypeEthernet)
	for p := range src.Packets() {
		require.Nil(t, p.ErrorLayer(), "undecodable frame in the capture")
		udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		require.True(t, ok)
		switch {
		case int(udp.DstPort) == port:
			rx++
		case int(udp.SrcPort) == port:
			tx++
		}
	}
	return rx, tx
}
