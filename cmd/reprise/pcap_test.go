package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// TestPcapInternalAgainstLoopback records a server and client talking on
// the loopback (internal/cprog/testdata/loopback.c: HTTP on 127.0.0.1, a
// reset on ::1, UDP pings) and exports the replay's loopback traffic with
// pcap --internal, against dumpcap's capture of Linux's loopback while the
// same program runs on the host: the same connections, each with the same
// bytes each way and the same ends (FIN, RST), the same datagrams, and
// nothing Wireshark's analysis finds wrong. Two exports are byte-identical.
func TestPcapInternalAgainstLoopback(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "tshark", "dumpcap")
	bin := cprog.Build(t, "gcc", "loopback", "-O1")
	dir := t.TempDir()

	native := filepath.Join(dir, "native.pcapng")
	capture := exec.Command("dumpcap", "-B", "64", "-i", "lo", "-f", "portrange 18431-18433", "-w", native)
	var capErr strings.Builder
	capture.Stderr = &capErr
	require.NoError(t, capture.Start())
	require.Eventually(t, func() bool { fi, err := os.Stat(native); return err == nil && fi.Size() > 0 }, 20*time.Second, 20*time.Millisecond, "dumpcap: %s", &capErr)
	want, err := exec.Command(bin).Output()
	// dumpcap reads the kernel's ring a block at a time, a block handed
	// over when full or after its read timeout (250 ms): what is still in
	// one when it stops is lost.
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, capture.Process.Signal(syscall.SIGINT))
	require.NoError(t, capture.Wait(), "dumpcap: %s", &capErr)
	require.Contains(t, capErr.String(), "/0 (", "dumpcap dropped none: %s", &capErr)
	require.NoError(t, err, "%s on the host", bin)

	tp := filepath.Join(dir, "loopback.tape")
	r := runCLIIn(t, dir, "record", "-o", tp, "--", bin)
	require.Zero(t, r.code, r.stderr)
	require.Equal(t, string(want), r.stdout, "the program's output, recorded and native")

	r = runCLIIn(t, dir, "pcap", tp, "-o", filepath.Join(dir, "door.pcap"))
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stderr, "wrote 0 packets", "without --internal: no published port, nothing")

	var exports [2][]byte
	for i := range exports {
		out := filepath.Join(dir, fmt.Sprintf("internal-%d.pcap", i))
		r = runCLIIn(t, dir, "pcap", "--internal", tp, "-o", out)
		require.Zero(t, r.code, r.stderr)
		exports[i], err = os.ReadFile(out)
		require.NoError(t, err)
	}
	require.Equal(t, exports[0], exports[1], "two exports of one recording")
	replayed := filepath.Join(dir, "internal-0.pcap")

	got, ref := loopTraffic(t, replayed), loopTraffic(t, native)
	t.Logf("native: %v", ref)
	t.Logf("replay: %v", got)
	require.Equal(t, ref, got)

	tshark := func(args ...string) string {
		out, err := exec.Command("tshark", append([]string{"-r", replayed, "-d", "tcp.port==18431,http"}, args...)...).Output()
		require.NoError(t, err)
		return string(out)
	}
	require.Equal(t, "/loop?n=300000", strings.TrimSpace(tshark("-Y", "http.request", "-T", "fields", "-e", "http.request.uri")))
	require.Equal(t, "300000", strings.TrimSpace(tshark("-Y", "http.response", "-T", "fields", "-e", "http.content_length")))
	expert := tshark("-q", "-z", "expert,note")
	for _, bad := range []string{"Malformed", "not captured", "unseen segment", "Retransmission", "Out-Of-Order", "checksum"} {
		require.NotContains(t, expert, bad)
	}
}

// loopTraffic is a capture's loopback conversations as a comparable
// summary: each TCP connection (by its server port and IP version) with
// the payload bytes and ends each way, and each UDP datagram in order.
func loopTraffic(t *testing.T, pcap string) []string {
	out, err := exec.Command("tshark", "-r", pcap, "-T", "fields", "-E", "separator=;",
		"-e", "tcp.stream", "-e", "ipv6.src", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.len", "-e", "tcp.flags",
		"-e", "udp.srcport", "-e", "udp.dstport", "-e", "data.data").Output()
	require.NoError(t, err, pcap)
	type way struct{ bytes, syn, fin, rst int }
	type tcpConn struct {
		v6   bool
		port int
		in   way // to the server
		out  way // from it
	}
	conns := map[string]*tcpConn{}
	var order, datagrams []string
	isServer := func(port string) bool { return port >= "18431" && port <= "18433" && len(port) == 5 }
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ";")
		require.Len(t, f, 9, line)
		if f[6] != "" { // UDP
			dir := "to " + f[7]
			if isServer(f[6]) {
				dir = "from " + f[6]
			}
			datagrams = append(datagrams, fmt.Sprintf("udp %s %s", dir, f[8]))
			continue
		}
		c := conns[f[0]]
		if c == nil {
			c = &tcpConn{v6: f[1] != ""}
			conns[f[0]] = c
			order = append(order, f[0])
		}
		w := &c.in
		if isServer(f[2]) {
			w = &c.out
			c.port, _ = strconv.Atoi(f[2])
		} else {
			c.port, _ = strconv.Atoi(f[3])
		}
		n, _ := strconv.Atoi(f[4])
		flags, err := strconv.ParseUint(strings.TrimPrefix(f[5], "0x"), 16, 16)
		require.NoError(t, err, line)
		w.bytes += n
		w.syn += int(flags >> 1 & 1)
		w.fin += int(flags & 1)
		w.rst += int(flags >> 2 & 1)
	}
	var summary []string
	for _, s := range order {
		c := conns[s]
		summary = append(summary, fmt.Sprintf("tcp v6=%v port %d: in %+v, out %+v", c.v6, c.port, c.in, c.out))
	}
	return append(summary, datagrams...)
}
