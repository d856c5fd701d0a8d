package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/vmm/netback"
)

// A capture fed as network input is recorded; reprise pcap exports what the
// guest received (the capture's datagrams) and sent (its ACKs).
func TestNetInputAndPcapExport(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	f, err := os.Create(in)
	require.NoError(t, err)
	w := pcapgo.NewWriter(f)
	require.NoError(t, w.WriteFileHeader(65535, layers.LinkTypeEthernet))
	for i := 0; i < 3; i++ {
		frame, err := netback.UDPFrame(5000, 7000, []byte(fmt.Sprintf("datagram %d", i)))
		require.NoError(t, err)
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(1700000000, int64(i)*int64(time.Millisecond)), CaptureLength: len(frame), Length: len(frame)}
		require.NoError(t, w.WritePacket(ci, frame))
	}
	require.NoError(t, f.Close())

	tp := filepath.Join(dir, "net.tape")
	r := runCLI(t, nil, "record", "--net-input", in, "-o", tp, "udp", "port=7000", "count=3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "truth: received=3")

	out := filepath.Join(dir, "out.pcap")
	p := runCLI(t, nil, "pcap", tp, "-o", out)
	require.Equal(t, 0, p.code, p.stderr)
	require.Contains(t, p.stderr, "wrote 6 packets")
	pf, err := os.Open(out)
	require.NoError(t, err)
	defer pf.Close()
	pr, err := pcapgo.NewReader(pf)
	require.NoError(t, err)
	n := 0
	for pkt := range gopacket.NewPacketSource(pr, layers.LinkTypeEthernet).Packets() {
		require.Nil(t, pkt.ErrorLayer())
		require.NotNil(t, pkt.Layer(layers.LayerTypeUDP))
		n++
	}
	require.Equal(t, 6, n)

	rep := runCLI(t, nil, "replay", "-q", tp)
	require.Equal(t, 0, rep.code, rep.stderr)

	r = runCLI(t, nil, "run", "--udp", "192.0.2.1:7000", "udp")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "loopback")
	r = runCLI(t, nil, "run", "udp")
	require.Equal(t, 3, r.code, "no NIC: the workload says so with status 3")
	r = runCLI(t, nil, "pcap", tp)
	require.Equal(t, exitUsage, r.code)
}
