package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/tools/lockstat"
	"github.com/reprise-vm/reprise/tools/profile"
	"github.com/reprise-vm/reprise/vmm/door"
)

// freePort is a host TCP port nothing listens on (the host's choice).
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// servedRecording is a server recorded behind a published port while a
// host client loaded it: what reprise printed, and what the client saw.
type servedRecording struct {
	tape   string
	rec    cliResult
	client string
}

// recordServed records args (a Linux program after "--") in dir with
// guestPort published on a free host port, runs client against that
// address meanwhile, and then waits for the program to end (endsItself)
// or ends the recording with SIGINT.
func recordServed(t *testing.T, dir, jitter string, guestPort int, endsItself bool, args []string, client func(addr string) string) servedRecording {
	t.Helper()
	tp := filepath.Join(t.TempDir(), "served-"+jitter+".tape")
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(reprise, append([]string{"record", "-o", tp, "--timer-jitter", jitter,
		"--publish", fmt.Sprintf("%s:%d", addr, guestPort)}, args...)...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	transcript := client(addr)
	wait := time.Minute
	if !endsItself {
		wait = 0
	}
	select {
	case <-done:
	case <-time.After(wait):
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		select {
		case <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatalf("the recording did not end on SIGINT: %s", errb.String())
		}
	}
	return servedRecording{tp, cliResult{cmd.ProcessState.ExitCode(), out.String(), errb.String()}, transcript}
}

// replaysMatch replays a served recording n times: each prints what the
// recording printed, and matches it.
func replaysMatch(t *testing.T, dir string, s servedRecording, n int) {
	t.Helper()
	for i := range n {
		rep := runCLIIn(t, dir, "replay", s.tape)
		require.Equal(t, s.rec.stdout, rep.stdout, "replay %d: %s", i, rep.stderr)
		require.Contains(t, rep.stderr, "replay matched", "replay %d", i)
	}
}

// untilServed retries get until it answers (the door takes a connection
// before the program listens, and resets it if nothing does), for a
// minute at most.
func untilServed(t testing.TB, get func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := get()
		if err == nil {
			return
		}
		require.True(t, time.Now().Before(deadline), "the server never answered: %v", err)
		time.Sleep(50 * time.Millisecond)
	}
}

// blob is what gohttp's /blob?n=N serves.
func blob(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>10)
	}
	return b
}

// A Go net/http server behind a published port, loaded from the host:
// keep-alive requests from four connections at once, a response and an
// upload each several times a connection's window, clients that connect
// and vanish (one mid-request with a reset), and the server's own count
// of what it served — recorded, jittered, and replayed exactly, each
// replay opening no host socket.
func TestPublishedGoServer(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.BuildGo(t, "gohttp")
	dir := t.TempDir()
	for _, jitter := range []string{"0s", "2ms"} {
		s := recordServed(t, dir, jitter, 8080, true, []string{"--", bin, "8080"}, func(addr string) string {
			return loadGoServer(t, addr)
		})
		require.Zero(t, s.rec.code, s.rec.stderr)
		require.Equal(t, "gohttp served 44 requests\n", s.rec.stdout)
		require.Equal(t, "served 44\n", s.client)
		replays := 3
		if jitter != "0s" {
			replays = 1
		}
		replaysMatch(t, dir, s, replays)
		if jitter == "0s" {
			checkPcap(t, dir, s.tape)
			checkTimeline(t, dir, s.tape)
		}
	}
}

// checkTimeline replays a TestPublishedGoServer recording into an event
// DB and reads its timeline: a track per connection, a slice per request
// as the server served it, the megabyte upload and download among them.
func checkTimeline(t *testing.T, dir, tp string) {
	db := filepath.Join(t.TempDir(), "db")
	r := runCLIIn(t, dir, "replay", "-q", "--db", db, tp)
	require.Zero(t, r.code, r.stderr)
	trace := filepath.Join(t.TempDir(), "t.json")
	r = runCLIIn(t, dir, "timeline", "--json", "-o", trace, db)
	require.Zero(t, r.code, r.stderr)
	b, err := os.ReadFile(trace)
	require.NoError(t, err)
	var tr struct {
		TraceEvents []struct {
			Ph, Name string
			Pid, Tid int
			Args     map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(b, &tr))
	connPid, tracks := 0, 0
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" && strings.HasPrefix(fmt.Sprint(e.Args["name"]), "connections of ") {
			connPid = e.Pid
		}
	}
	require.NotZero(t, connPid, "a process of the connections")
	exchange := regexp.MustCompile(`^(\d+) B in, (\d+) B out$`)
	requests, bigIn, bigOut := 0, false, false
	for _, e := range tr.TraceEvents {
		if e.Pid != connPid {
			continue
		}
		if e.Ph == "M" && e.Name == "thread_name" {
			tracks++
		}
		if m := exchange.FindStringSubmatch(e.Name); e.Ph == "X" && m != nil {
			requests++
			in, _ := strconv.Atoi(m[1])
			out, _ := strconv.Atoi(m[2])
			bigIn = bigIn || in > 1<<20
			bigOut = bigOut || out > 1<<20
		}
	}
	require.GreaterOrEqual(t, tracks, 6, "the four load connections, the blob's, the vanishing ones")
	require.GreaterOrEqual(t, requests, 45, "every request the server answered, /quit's too")
	require.True(t, bigIn, "the upload, a request of over a megabyte")
	require.True(t, bigOut, "the blob, a reply of over a megabyte")
}

// checkPcap exports a TestPublishedGoServer recording's conversations and
// reads them back with tshark: every request as the client made it, the
// responses' sizes, and no segment missing or acknowledged unseen.
func checkPcap(t *testing.T, dir, tp string) {
	kvmtest.RequireTools(t, "tshark")
	pcap := filepath.Join(t.TempDir(), "served.pcap")
	r := runCLIIn(t, dir, "pcap", tp, "-o", pcap)
	require.Zero(t, r.code, r.stderr)
	tshark := func(args ...string) string {
		out, err := exec.Command("tshark", append([]string{"-r", pcap}, args...)...).Output()
		require.NoError(t, err)
		return string(out)
	}
	uris := strings.Fields(tshark("-Y", "http.request", "-T", "fields", "-e", "http.request.uri"))
	require.Equal(t, "/quit", uris[len(uris)-1])
	slices.Sort(uris)
	// 44 served and /quit; the readiness probe may have been sent again
	// after a connection made before the server listened was reset.
	require.Len(t, slices.Compact(uris), 45)
	require.Contains(t, uris, "/hello?i=3-9")
	require.Contains(t, uris, "/blob?n=1048576")
	require.Contains(t, uris, "/echo")
	longest := 0
	for _, f := range strings.Fields(tshark("-Y", "http.response", "-T", "fields", "-e", "tcp.reassembled.length")) {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		longest = max(longest, n)
	}
	require.Greater(t, longest, 1<<20, "the blob's response, reassembled whole")
	expert := tshark("-q", "-z", "expert,warn")
	for _, bad := range []string{"Malformed", "not captured", "unseen segment", "Retransmission"} {
		require.NotContains(t, expert, bad)
	}
}

// loadGoServer is the host client of TestPublishedGoServer; it returns
// what /quit answered.
func loadGoServer(t *testing.T, addr string) string {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	get := func(path string) ([]byte, error) {
		r, err := client.Get("http://" + addr + path)
		if err != nil {
			return nil, err
		}
		defer r.Body.Close()
		if r.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", path, r.Status)
		}
		return io.ReadAll(r.Body)
	}
	untilServed(t, func() error { _, err := get("/hello?i=0"); return err })
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				want := fmt.Sprintf("hello %d-%d\n", c, i)
				b, err := get(fmt.Sprintf("/hello?i=%d-%d", c, i))
				if err == nil && string(b) != want {
					err = fmt.Errorf("got %q, want %q", b, want)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	const big = 1 << 20 // ~5 windows each way
	b, err := get(fmt.Sprintf("/blob?n=%d", big))
	require.NoError(t, err)
	require.True(t, bytes.Equal(blob(big), b), "the blob differs (%d bytes)", len(b))

	upload := blob(big + 12345)
	r, err := client.Post("http://"+addr+"/echo", "application/octet-stream", bytes.NewReader(upload))
	require.NoError(t, err)
	echoed, err := io.ReadAll(r.Body)
	r.Body.Close()
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d %x\n", len(upload), sha256.Sum256(upload)), string(echoed))

	// Clients that vanish: one at once, one mid-request with a reset.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	c.Close()
	c, err = net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = c.Write([]byte("GET /hel"))
	require.NoError(t, err)
	c.(*net.TCPConn).SetLinger(0)
	c.Close()

	b, err = get("/hello?i=after")
	require.NoError(t, err)
	require.Equal(t, "hello after\n", string(b))
	quit, err := get("/quit")
	require.NoError(t, err)
	return string(quit)
}

// The machine flags of one kind of guest are refused for the other —
// a guest image given a Linux program's world, a Linux program given a
// guest image's kernel or NIC — with a usage error naming both, before
// any machine is made (the KVM device named here does not exist) and
// before a tape is written.
func TestOtherGuestsFlagsAreRefused(t *testing.T) {
	dir := t.TempDir()
	noKVM := "--kvm=" + filepath.Join(dir, "no-kvm")
	for _, flags := range [][]string{{"--publish", "9001:80"}, {"--egress", "127.0.0.1:80"}, {"--fast-calls"}, {"--env", "A=1"}, {"--stdin", "/dev/null"}, {"--file", "/etc/hostname"}, {"--root", dir}, {"--keep-writes", dir}} {
		r := runCLIIn(t, dir, append(append([]string{"run", noKVM}, flags...), "hello")...)
		require.Equal(t, exitUsage, r.code, flags)
		require.Contains(t, r.stderr, flags[0]+" is for a Linux program, and hello is a guest image", flags)
	}
	for _, flags := range [][]string{{"--plain"}, {"--disk", "/dev/null"}, {"--overlay", filepath.Join(dir, "o")}, {"--udp", "127.0.0.1:7777"}, {"--net-input", "/dev/null"}} {
		r := runCLIIn(t, dir, append(append([]string{"record", noKVM, "-o", filepath.Join(dir, "refused.tape")}, flags...), "--", "/bin/true")...)
		require.Equal(t, exitUsage, r.code, flags)
		require.Contains(t, r.stderr, flags[0]+" is for a guest image, and /bin/true is a Linux program", flags)
		require.NoFileExists(t, filepath.Join(dir, "refused.tape"))
	}
}

// Bad --publish values are refused before anything runs, naming what is
// wrong; a host port already in use is an error naming it.
func TestPublishRefusals(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	for spec, why := range map[string]string{
		"8080":                "no guest port",
		"x:80":                "host port",
		"8080:0":              "guest port",
		"8080:70000":          "guest port",
		"8080:80/icmp":        "tcp or udp is published",
		"nohost:8080:80":      "host address",
		"[::1]:8080:80/sctp":  "tcp or udp",
		"127.0.0.1:8080:80:9": "host address",
	} {
		r := runCLIIn(t, dir, "run", "--publish", spec, "--", "/bin/true")
		require.Equal(t, exitUsage, r.code, spec)
		require.Contains(t, r.stderr, why, spec)
	}
	r := runCLIIn(t, dir, "run", "--publish", "9001:80", "--publish", "127.0.0.1:9001:81", "--", "/bin/true")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "published twice")
	r = runCLIIn(t, dir, "run", "--egress", "nohost.invalid:80", "--", "/bin/true")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `--egress "nohost.invalid:80": want HOST:PORT`)

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	spec := busy.Addr().String() + ":80"
	for _, args := range [][]string{{"run"}, {"record", "-o", filepath.Join(dir, "t.tape")}} {
		r = runCLIIn(t, dir, append(args, "--publish", spec, "--", "/bin/true")...)
		require.Equal(t, exitFailure, r.code, r.stderr)
		require.Contains(t, r.stderr, "publish "+busy.Addr().String())
		require.Contains(t, r.stderr, "address already in use")
	}
	_, err = os.Stat(filepath.Join(dir, "t.tape"))
	require.True(t, os.IsNotExist(err), "a recording that never started leaves no tape")
}

// A published port nothing listens on resets the host's connection, as a
// closed port does; the program never sees it.
func TestPublishedPortNothingListens(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	s := recordServed(t, dir, "0s", 8080, true, []string{"--", "/bin/sh", "-c", "sleep 3; echo slept"}, func(addr string) string {
		var c net.Conn
		untilServed(t, func() (err error) { c, err = net.Dial("tcp", addr); return err }) // the host side accepts...
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err := c.Read(make([]byte, 1))
		require.Error(t, err) // ...and the program's kernel refuses it
		if !strings.Contains(err.Error(), "reset") {
			require.ErrorIs(t, err, io.EOF)
		}
		return ""
	})
	require.Zero(t, s.rec.code, s.rec.stderr)
	require.Equal(t, "slept\n", s.rec.stdout)
	replaysMatch(t, dir, s, 1)
}

// memcached with four worker threads behind a published port, loaded by
// a host client over three connections at once: memcached's own stats
// count exactly what the client did, and every replay sends the client
// the same bytes (checked by digest) as the recording did.
func TestPublishedMemcached(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "memcached")
	dir := t.TempDir()
	s := recordMemcached(t, dir)
	require.Equal(t, "cmd_get 90 get_hits 60 get_misses 30 cmd_set 60 delete_hits 15 delete_misses 5", s.client)
	replaysMatch(t, dir, s, 3)
}

// recordMemcached records memcached -t 4 in dir behind a published port
// while loadMemcached loads it; memcached ends at the client's shutdown.
func recordMemcached(t *testing.T, dir string) servedRecording {
	s := recordServed(t, dir, "0s", 11211, true, []string{"--", "/usr/bin/memcached", "-u", "root", "-p", "11211", "-U", "0", "-t", "4", "-l", "127.0.0.1", "-A"},
		func(addr string) string { return loadMemcached(t, addr) })
	require.Zero(t, s.rec.code, s.rec.stderr)
	return s
}

// loadMemcached makes 60 sets, 90 gets (60 hits) and 20 deletes (15
// hits) over three connections at once, then asks for the stats and
// shuts memcached down.
func loadMemcached(t *testing.T, addr string) string {
	dial := func() (net.Conn, *bufio.Reader) {
		var c net.Conn
		untilServed(t, func() error {
			var err error
			if c, err = net.Dial("tcp", addr); err != nil {
				return err
			}
			if _, err = c.Write([]byte("version\r\n")); err == nil {
				c.SetReadDeadline(time.Now().Add(30 * time.Second))
				_, err = bufio.NewReader(c).ReadString('\n')
			}
			if err != nil {
				c.Close()
			}
			return err
		})
		return c, bufio.NewReader(c)
	}
	cmd := func(c net.Conn, r *bufio.Reader, line string) string {
		_, err := c.Write([]byte(line + "\r\n"))
		require.NoError(t, err)
		reply, err := r.ReadString('\n')
		require.NoError(t, err, line)
		if strings.HasPrefix(reply, "VALUE") {
			data, err := r.ReadString('\n')
			require.NoError(t, err)
			end, err := r.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "END\r\n", end)
			return data
		}
		return reply
	}
	var wg sync.WaitGroup
	for w := range 3 {
		c, r := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for i := range 20 {
				require.Equal(t, "STORED\r\n", cmd(c, r, fmt.Sprintf("set k%d-%d 0 0 6\r\nv-%d-%02d", w, i, w, i)))
			}
			for i := range 30 {
				want := "END\r\n"
				if i < 20 {
					want = fmt.Sprintf("v-%d-%02d\r\n", w, i)
				}
				require.Equal(t, want, cmd(c, r, fmt.Sprintf("get k%d-%d", w, i)))
			}
		}()
	}
	wg.Wait()
	c, r := dial()
	defer c.Close()
	for i := range 20 {
		want := "DELETED\r\n"
		if i >= 15 {
			want = "NOT_FOUND\r\n"
		}
		require.Equal(t, want, cmd(c, r, fmt.Sprintf("delete k%d-%d", i%3, i/3+100*(i/15))))
	}
	_, err := c.Write([]byte("stats\r\n"))
	require.NoError(t, err)
	stats := map[string]string{}
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if line == "END\r\n" {
			break
		}
		f := strings.Fields(line)
		stats[f[1]] = f[2]
	}
	_, err = c.Write([]byte("shutdown\r\n"))
	require.NoError(t, err)
	var out []string
	for _, k := range []string{"cmd_get", "get_hits", "get_misses", "cmd_set", "delete_hits", "delete_misses"} {
		out = append(out, k, stats[k])
	}
	return strings.Join(out, " ")
}

// nginx (a master running as root and two workers it drops to nobody,
// passing the published connections' sockets by SCM_RIGHTS) serving files
// behind a published port to a host client making many keep-alive
// requests on two connections: every body byte-identical to its file, in
// the recording and, by digest, in every replay.
func TestPublishedNginx(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "nginx")
	if os.Geteuid() != 0 {
		t.Skip("nginx's master must be root to start its workers as nobody (CI runs as root)")
	}
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		require.NoError(t, os.Chmod(d, 0o755)) // the workers, as nobody, read the files
	}
	big := strings.Repeat("a line of a file nginx serves whole\n", 12000) // two windows
	writeFiles(t, dir, map[string]string{
		"nginx.conf": "daemon off;\nmaster_process on;\nworker_processes 2;\npid nginx.pid;\n" +
			"error_log /dev/null crit;\nevents { worker_connections 64; }\n" +
			"http { access_log off; keepalive_requests 1000; server { listen 8080; root html; } }\n",
		"html/index.html": "hello from nginx\n",
		"html/big.txt":    big,
	})
	files := map[string]string{"/index.html": "hello from nginx\n", "/big.txt": big}
	s := recordServed(t, dir, "0s", 8080, false, []string{"--", "/usr/sbin/nginx", "-p", dir + "/", "-c", "nginx.conf"}, func(addr string) string {
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
		get := func(path string) (string, error) {
			r, err := client.Get("http://" + addr + path)
			if err != nil {
				return "", err
			}
			defer r.Body.Close()
			b, err := io.ReadAll(r.Body)
			return string(b), err
		}
		untilServed(t, func() error { _, err := get("/index.html"); return err })
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					path := []string{"/index.html", "/big.txt"}[i%2]
					b, err := get(path)
					require.NoError(t, err)
					require.True(t, b == files[path], "%s: %d bytes, want %d", path, len(b), len(files[path]))
				}
			}()
		}
		wg.Wait()
		return ""
	})
	require.Equal(t, exitInterrupted, s.rec.code, s.rec.stderr)
	replaysMatch(t, dir, s, 3)
}

// python3 -m http.server, bound dual-stack, behind a published port: a
// file and a directory listing, as the host's python serves them.
func TestPublishedPythonHTTP(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "python3")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"www/a.txt": "served by python\n", "www/sub/b.txt": "b\n"})
	s := recordServed(t, dir, "0s", 8000, false, []string{"--", "/usr/bin/python3", "-m", "http.server", "-d", "www", "--bind", "::", "8000"}, func(addr string) string {
		var got []string
		for _, path := range []string{"/a.txt", "/sub/", "/missing"} {
			var r *http.Response
			untilServed(t, func() (err error) { r, err = http.Get("http://" + addr + path); return err })
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			require.NoError(t, err)
			got = append(got, fmt.Sprintf("%s %d %s", path, r.StatusCode, b))
		}
		return strings.Join(got, "\n")
	})
	require.Equal(t, exitInterrupted, s.rec.code, s.rec.stderr)
	require.Contains(t, s.client, "/a.txt 200 served by python\n")
	require.Contains(t, s.client, `<a href="b.txt">b.txt</a>`)
	require.Contains(t, s.client, "/missing 404")
	require.Contains(t, s.rec.stdout, `"GET /a.txt HTTP/1.1" 200`)
	replaysMatch(t, dir, s, 2)
}

// A server recorded with checkpoints while host clients are connected
// replays from checkpoints taken mid-conversation (the door's connections,
// their windows and unacknowledged bytes are in them), and split into
// segments between all of them.
func TestPublishedServerFromCheckpoints(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.BuildGo(t, "gohttp")
	dir := t.TempDir()
	tp := filepath.Join(t.TempDir(), "ck.tape")
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(reprise, "record", "-o", tp, "--checkpoint-every", "20ms", "--publish", addr+":8080", "--", bin, "8080")
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	quit := loadGoServer(t, addr)
	require.NoError(t, cmd.Wait(), errb.String())
	require.Equal(t, "served 44\n", quit)
	m := regexp.MustCompile(`(\d+) checkpoints`).FindStringSubmatch(errb.String())
	require.NotNil(t, m, errb.String())
	n, _ := strconv.Atoi(m[1])
	require.GreaterOrEqual(t, n, 5, errb.String())
	for _, from := range []string{"100ms", "300ms", "600ms"} {
		r := runCLIIn(t, dir, "replay", "--from", from, tp)
		require.Equal(t, out.String(), r.stdout, "from %s: %s", from, r.stderr)
		require.Contains(t, r.stderr, "replay matched", "from %s", from)
	}
	r := runCLIIn(t, dir, "replay", "--jobs", "2", "--db", filepath.Join(t.TempDir(), "db"), tp)
	require.Zero(t, r.code, r.stderr)
}

// A server for BenchmarkPublished: its command line serving port, and
// a host client's load against addr, which returns how many requests it
// made.
type benchServer struct {
	name  string
	tools []string
	files map[string]string
	args  func(dir string, port int) []string
	load  func(b *testing.B, addr string) int
}

// httpLoad makes n keep-alive GETs of path from four connections at once.
func httpLoad(path string, n int) func(b *testing.B, addr string) int {
	return func(b *testing.B, addr string) int {
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		get := func() error {
			r, err := client.Get("http://" + addr + path)
			if err != nil {
				return err
			}
			defer r.Body.Close()
			_, err = io.Copy(io.Discard, r.Body)
			return err
		}
		untilServed(b, get)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n / 4 {
					require.NoError(b, get())
				}
			}()
		}
		wg.Wait()
		return n / 4 * 4
	}
}

// exchangeLoad makes n request/reply exchanges of a text protocol from
// four connections at once; exchange makes the i-th on a connection.
func exchangeLoad(n int, exchange func(rw *bufio.ReadWriter, i int) error) func(b *testing.B, addr string) int {
	return func(b *testing.B, addr string) int {
		dial := func() (*bufio.ReadWriter, net.Conn, error) {
			c, err := net.DialTimeout("tcp", addr, 30*time.Second)
			if err != nil {
				return nil, nil, err
			}
			c.SetDeadline(time.Now().Add(time.Minute))
			return bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), c, nil
		}
		untilServed(b, func() error {
			rw, c, err := dial()
			if err != nil {
				return err
			}
			defer c.Close()
			return exchange(rw, 0)
		})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rw, c, err := dial()
				require.NoError(b, err)
				defer c.Close()
				for i := range n / 4 {
					require.NoError(b, exchange(rw, i))
				}
			}()
		}
		wg.Wait()
		return n / 4 * 4
	}
}

// expect sends req and reads until the reply ends with want's last line,
// failing unless the reply is want.
func expect(rw *bufio.ReadWriter, req, want string) error {
	if _, err := rw.WriteString(req); err != nil {
		return err
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(rw, got); err != nil {
		return err
	}
	if string(got) != want {
		return fmt.Errorf("%q answered %q, want %q", req, got, want)
	}
	return nil
}

// memcacheExchange alternates a set and a get of one key.
func memcacheExchange(rw *bufio.ReadWriter, i int) error {
	if i%2 == 0 {
		return expect(rw, "set k 0 0 5\r\nhello\r\n", "STORED\r\n")
	}
	return expect(rw, "get k\r\n", "VALUE k 0 5\r\nhello\r\nEND\r\n")
}

// redisExchange alternates a SET and a GET of one key.
func redisExchange(rw *bufio.ReadWriter, i int) error {
	if i%2 == 0 {
		return expect(rw, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", "+OK\r\n")
	}
	return expect(rw, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "$5\r\nhello\r\n")
}

// BenchmarkPublished is issue 27's published-port figure: a host client's
// requests per second against a server running natively, under reprise
// (live), and recorded — with the host's view (the default, --host full:
// every exit and the host scheduler's switches on every CPU) and without
// it (--host off: the door's logging alone) — side by side in each
// iteration, with the replay's time ÷ the recording's and the tape's
// bytes per request.
func BenchmarkPublished(b *testing.B) {
	kvmtest.Require(b)
	gohttp := cprog.BuildGo(b, "gohttp")
	for _, s := range []benchServer{
		{name: "go-net-http", args: func(_ string, p int) []string { return []string{gohttp, strconv.Itoa(p)} }, load: httpLoad("/hello?i=1", 2000)},
		{name: "nginx", tools: []string{"nginx"},
			files: map[string]string{"html/index.html": strings.Repeat("<p>nginx</p>\n", 100)},
			args: func(dir string, p int) []string {
				conf := fmt.Sprintf("nginx-%d.conf", p)
				writeFiles(b, dir, map[string]string{conf: fmt.Sprintf("user root; daemon off; master_process on; worker_processes 2; pid nginx.pid; error_log /dev/null crit;\n"+
					"events { worker_connections 64; } http { access_log off; keepalive_requests 100000; server { listen %d; root html; } }\n", p)})
				return []string{"/usr/sbin/nginx", "-p", dir + "/", "-c", conf}
			}, load: httpLoad("/index.html", 2000)},
		{name: "memcached", tools: []string{"memcached"},
			args: func(_ string, p int) []string {
				return []string{"/usr/bin/memcached", "-t", "4", "-u", "root", "-U", "0", "-p", strconv.Itoa(p)}
			}, load: exchangeLoad(2000, memcacheExchange)},
		{name: "redis", tools: []string{"redis-server"},
			args: func(_ string, p int) []string {
				return []string{"/usr/bin/redis-server", "--port", strconv.Itoa(p), "--save", "", "--appendonly", "no",
					"--protected-mode", "no", "--loglevel", "warning", "--logfile", "/dev/null"}
			}, load: exchangeLoad(2000, redisExchange)},
	} {
		b.Run(s.name, func(b *testing.B) {
			kvmtest.RequireTools(b, s.tools...)
			var f serverFigures
			var bare float64
			for range b.N {
				dir := b.TempDir()
				writeFiles(b, dir, s.files)
				rate, _ := serveAndLoad(b, dir, s, "native", "")
				f.native += rate
				rate, _ = serveAndLoad(b, dir, s, "run", "")
				f.live += rate
				rate, _ = serveAndLoad(b, dir, s, "record", filepath.Join(b.TempDir(), "bare.tape"), "--host", "off")
				bare += rate
				tp := filepath.Join(b.TempDir(), "served.tape")
				start := time.Now()
				rate, n := serveAndLoad(b, dir, s, "record", tp)
				f.recordSecs += time.Since(start).Seconds()
				f.recorded += rate
				f.requests += float64(n)
				f.replayed(b, dir, tp)
			}
			f.report(b)
			b.ReportMetric(bare/f.live, "recorded-host-off/live")
		})
	}
}

// serveAndLoad starts s natively, under reprise run or recorded to tape
// (mode, with reprise's flags), loads it from the host and stops it; it
// returns the load's requests per second and how many it made.
func serveAndLoad(b *testing.B, dir string, s benchServer, mode, tp string, flags ...string) (float64, int) {
	hostPort := freePort(b)
	args := s.args(dir, hostPort)
	if mode != "native" {
		flags = append([]string{reprise, mode, "--publish", fmt.Sprintf("%d:8080", hostPort)}, flags...)
		if mode == "record" {
			flags = append(flags, "-o", tp)
		}
		args = append(append(flags, "--"), s.args(dir, 8080)...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	require.NoError(b, cmd.Start())
	addr := fmt.Sprintf("127.0.0.1:%d", hostPort)
	s.load(b, addr) // warm: the server is up, its first requests served
	start := time.Now()
	n := s.load(b, addr)
	rate := float64(n) / time.Since(start).Seconds()
	require.NoError(b, cmd.Process.Signal(os.Interrupt))
	cmd.Wait()
	return rate, 2 * n
}

// lockstat and deadlock on memcached -t 4 serving host clients through a
// published port: every lock it takes is named (memcached's own by file
// and offset: Debian strips its symbols), its worker threads share them,
// the acquisitions are at least its requests, two replays report the
// same figures, and deadlock finds no cycle in the order its threads took
// their locks in.
func TestToolsOnPublishedMemcached(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "memcached")
	dir := t.TempDir()
	s := recordMemcached(t, dir)
	var reports []string
	for i := range 2 {
		db := filepath.Join(t.TempDir(), "db")
		r := runCLIIn(t, dir, "replay", "-q", "--locks", "--db", db, s.tape)
		require.Zero(t, r.code, r.stderr)
		ls := runCLIIn(t, dir, "lockstat", "--json", db)
		require.Zero(t, ls.code, ls.stderr)
		reports = append(reports, ls.stdout)
		if i == 0 {
			dl := runCLIIn(t, dir, "deadlock", db)
			require.Zero(t, dl.code, dl.stderr)
			require.Contains(t, dl.stdout, "no potential deadlock")
		}
	}
	require.Equal(t, reports[0], reports[1], "two replays, one report")
	var rep lockstat.Report
	require.NoError(t, json.Unmarshal([]byte(reports[0]), &rep))
	require.GreaterOrEqual(t, len(rep.Threads), 5, "main and the four workers took locks")
	shared := 0
	for _, l := range rep.Locks {
		require.NotRegexp(t, `^0x`, l.Name, "every lock has a name")
		if l.Threads >= 2 {
			shared++
		}
	}
	require.Greater(t, shared, 0, "locks the threads share")
	require.GreaterOrEqual(t, rep.Total.Acquired, uint64(60+90+20), "at least a lock a request")
}

// egressClient is a Python program that connects to each address given
// (host:port) and prints the echo of what it sent, or the error.
const egressClient = `import errno, socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=20)
        s.sendall(b"hello from the machine\n" * 1000)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            b = s.recv(65536)
            if not b: break
            data += b
        print("echoed", len(data), data[:22].decode())
    except OSError as e:
        print("refused", errno.errorcode[e.errno])
`

// --egress lets a program connect to a host address, the host's loopback
// as 10.0.2.2 (python's create_connection: a nonblocking connect, poll and
// SO_ERROR), its traffic recorded both ways: a replay, with the host's
// server gone, prints the same echo. A port not allowed and an address
// off the host are refused; without --egress every host address is
// unreachable, as before. pcap writes the conversation the program began.
func TestEgress(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "python3")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"client.py": egressClient})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				c.Write(bytes.ToUpper(b))
			}()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	targets := []string{fmt.Sprintf("10.0.2.2:%d", port), fmt.Sprintf("10.0.2.2:%d", port+1), "192.0.2.1:80"}
	tp := filepath.Join(t.TempDir(), "egress.tape")
	rec := runCLIIn(t, dir, append([]string{"record", "-o", tp, "--egress", l.Addr().String(), "--", "/usr/bin/python3", "client.py"}, targets...)...)
	require.Zero(t, rec.code, rec.stderr)
	require.Equal(t, "echoed 23000 HELLO FROM THE MACHINE\nrefused ECONNREFUSED\nrefused ECONNREFUSED\n", rec.stdout)
	l.Close()
	for i := range 2 {
		rep := runCLIIn(t, dir, "replay", tp)
		require.Equal(t, rec.stdout, rep.stdout, "replay %d: %s", i, rep.stderr)
		require.Contains(t, rep.stderr, "replay matched")
	}
	live := runCLIIn(t, dir, append([]string{"run", "--", "/usr/bin/python3", "client.py"}, targets...)...)
	require.Equal(t, strings.Repeat("refused ENETUNREACH\n", 3), live.stdout, live.stderr)

	kvmtest.RequireTools(t, "tshark")
	pcap := filepath.Join(t.TempDir(), "egress.pcap")
	r := runCLIIn(t, dir, "pcap", tp, "-o", pcap)
	require.Zero(t, r.code, r.stderr)
	out, err := exec.Command("tshark", "-r", pcap, "-q", "-z", "conv,tcp").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "10.0.2.15:", "the program's end")
	require.Contains(t, string(out), fmt.Sprintf("10.0.2.2:%d", port))
	syn, err := exec.Command("tshark", "-r", pcap, "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields", "-e", "ip.src").Output()
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("10.0.2.15\n", 3), string(syn), "three connects, each a SYN from the program (two answered by a reset)")
}

// A UDP server behind a published UDP port: a host client's datagrams
// reach it from 10.0.2.2 and its own port, its replies come back from the
// published address, each datagram whole; a replay, with no socket,
// serves them again; pcap writes them as UDP.
func TestPublishedUDP(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "python3")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"echo.py": `import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(("::", 5353))
n = 0
while True:
    data, peer = s.recvfrom(65535)
    if data == b"quit": break
    n += 1
    s.sendto(b"%d %s" % (n, data.upper()), peer)
print("served", n, "from", peer[0])
`})
	hostPort := freePort(t)
	tp := filepath.Join(t.TempDir(), "udp.tape")
	cmd := exec.Command(reprise, "record", "-o", tp, "--publish", fmt.Sprintf("%d:5353/udp", hostPort), "--", "/usr/bin/python3", "echo.py")
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	c, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", hostPort))
	require.NoError(t, err)
	defer c.Close()
	buf := make([]byte, 70000)
	ask := func(msg []byte, wait time.Duration) (string, error) {
		if _, err := c.Write(msg); err != nil {
			return "", err
		}
		c.SetReadDeadline(time.Now().Add(wait))
		n, err := c.Read(buf)
		return string(buf[:n]), err
	}
	var first string
	untilServed(t, func() (err error) { first, err = ask([]byte("ping"), 200*time.Millisecond); return err }) // dropped until it binds
	require.Regexp(t, `^\d+ PING$`, first)
	var n int
	fmt.Sscan(first, &n) // pings sent before it bound were dropped; late replies to others are read below
	for {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		k, err := c.Read(buf)
		if err != nil {
			break
		}
		fmt.Sscan(string(buf[:k]), &n)
	}
	for i := range 30 {
		msg := fmt.Sprintf("datagram %d %s", i, strings.Repeat("x", i*1000))
		got, err := ask([]byte(msg), 30*time.Second)
		require.NoError(t, err, "datagram %d", i)
		n++
		require.Equal(t, fmt.Sprintf("%d %s", n, strings.ToUpper(msg)), got)
	}
	_, err = c.Write([]byte("quit"))
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), errb.String())
	require.Equal(t, fmt.Sprintf("served %d from ::ffff:10.0.2.2\n", n), out.String())
	for i := range 2 {
		rep := runCLIIn(t, dir, "replay", tp)
		require.Equal(t, out.String(), rep.stdout, "replay %d: %s", i, rep.stderr)
		require.Contains(t, rep.stderr, "replay matched")
	}
	kvmtest.RequireTools(t, "tshark")
	pcap := filepath.Join(t.TempDir(), "udp.pcap")
	r := runCLIIn(t, dir, "pcap", tp, "-o", pcap)
	require.Zero(t, r.code, r.stderr)
	replies, err := exec.Command("tshark", "-r", pcap, "-Y", "udp.srcport == 5353", "-T", "fields", "-e", "ip.dst").Output()
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("10.0.2.2\n", n), string(replies), "a reply for every datagram served")
}

// A tape is as untrusted as a guest: a door message a replay cannot parse
// (a received frame cut short) ends the replay with an error naming it;
// one replaced by a message for no connection is dropped, as TCP drops a
// segment for none, and the replay diverges where the recording answered
// the real one — never a crash.
func TestForgedDoorMessages(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	s := recordServed(t, dir, "0s", 8080, true, []string{"--", "/bin/sh", "-c", "sleep 2; echo slept"}, func(addr string) string {
		var c net.Conn
		untilServed(t, func() (err error) { c, err = net.Dial("tcp", addr); return err })
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		c.Read(make([]byte, 1)) // reset: nothing listens
		c.Close()
		return ""
	})
	require.Zero(t, s.rec.code, s.rec.stderr)
	for name, forge := range map[string]struct {
		edit func([]byte) []byte
		want string
	}{
		"cut short": {func(b []byte) []byte { return b[:3] }, "malformed door message: 3 bytes"},
		"replaced": {func(b []byte) []byte {
			m, err := door.Parse(b)
			require.NoError(t, err)
			w := door.Msg{Op: door.Window, Conn: m.Conn, N: 1}
			return w.Encode()
		}, "(net-tx at exit "},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := tape.Open(s.tape)
			require.NoError(t, err)
			defer r.Close()
			var out bytes.Buffer
			w, err := tape.NewWriter(&out, r.Header())
			require.NoError(t, err)
			// The client's connection is the first net-rx; its close may
			// come in a second, as the host's timing has it.
			forged := 0
			for {
				e, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				if e.Kind == tape.KindNetRX && forged == 0 {
					e.Data = forge.edit(e.Data)
					forged++
				}
				require.NoError(t, w.Append(e))
			}
			require.NoError(t, w.Close())
			require.Equal(t, 1, forged, "the client's connection")
			tp := filepath.Join(t.TempDir(), "forged.tape")
			require.NoError(t, os.WriteFile(tp, out.Bytes(), 0o644))
			rep := runCLIIn(t, dir, "replay", tp)
			require.NotZero(t, rep.code, rep.stderr)
			require.NotContains(t, rep.stderr, "panic")
			require.Contains(t, rep.stderr, forge.want)
			require.NotContains(t, rep.stderr, "replay matched")
		})
	}
}

// hashLoad asks gohttp for 24 SHA-256s of 96 MiB each, one at a time, and
// then to quit: a server whose time goes to its own code.
func hashLoad(t *testing.T, addr string) {
	untilServed(t, func() error { _, err := http.Get("http://" + addr + "/hello"); return err })
	for range 24 {
		r, err := http.Get("http://" + addr + "/hash?mb=96")
		require.NoError(t, err)
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	r, err := http.Get("http://" + addr + "/quit")
	require.NoError(t, err)
	r.Body.Close()
}

// reprise profile of a server under load from the host against perf
// record of the same server under the same load on the host, user mode
// on both sides (perf's cpu-clock:u; reprise's --user leaves out the
// samples taken while the VMM served a system call or fault, which perf
// counts as kernel time): the hottest function is the same, and its share
// is within 5 points of perf's. (Measured: perf 97.8–98.0%, reprise
// 95.6–96.5%, with another package's tests running beside, at 48 MiB a
// request. The gap is memory first touched — Go's memclr of each
// request's fresh megabyte: the host's shadow paging, inside KVM_RUN,
// charged to the touching code, where perf counts a page fault as kernel
// time — and the start-up, slower under reprise. Both are fixed costs,
// and the first touches cost the host's: on a later PVM host ~1 ms a
// request, and 48 MiB gave perf 97.9–98.4%, reprise 92.0–93.3%; 96 MiB
// gives 98.9–99.2% / 95.8–96.2%.)
func TestServerProfileAgainstPerf(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "perf")
	bin := cprog.BuildGo(t, "gohttp")
	dir := t.TempDir()

	data := filepath.Join(t.TempDir(), "perf.data")
	port := freePort(t)
	perfRecord(t, data, func() { hashLoad(t, fmt.Sprintf("127.0.0.1:%d", port)) }, bin, strconv.Itoa(port))
	top := perfReport(t, data)[0] // one static file: by file and symbol is by symbol
	perfTop, perfFn := top.pct, top.name

	s := recordServed(t, dir, "0s", 8080, true, []string{"--", bin, "8080"}, func(addr string) string { hashLoad(t, addr); return "" })
	require.Zero(t, s.rec.code, s.rec.stderr)
	db := filepath.Join(t.TempDir(), "db")
	r := runCLIIn(t, dir, "replay", "-q", "--sample-period", "1ms", "--db", db, s.tape)
	require.Zero(t, r.code, r.stderr)
	pr := runCLIIn(t, dir, "profile", "--user", "--json", "--top", "8", db)
	require.Zero(t, pr.code, pr.stderr)
	var p profile.Profile
	require.NoError(t, json.Unmarshal([]byte(pr.stdout), &p), pr.stdout)
	require.NotEmpty(t, p.Functions)
	require.True(t, p.User)
	require.Greater(t, p.System, uint64(0), "samples in the VMM, left out")
	require.GreaterOrEqual(t, p.Samples, uint64(300), "enough samples for a share within points")
	require.Equal(t, perfFn, p.Functions[0].Function, "the hottest function")
	for _, f := range p.Functions {
		t.Logf("reprise: %5.1f%% %s", f.SelfPct, f.Function)
	}
	require.InDelta(t, perfTop, p.Functions[0].SelfPct, 5, "%s: perf %.1f%%, reprise %.1f%%", perfFn, perfTop, p.Functions[0].SelfPct)
	t.Logf("%s: perf %.1f%% of user samples, reprise %.1f%% of %d (%d in the VMM left out)", perfFn, perfTop, p.Functions[0].SelfPct, p.Samples, p.System)
}
