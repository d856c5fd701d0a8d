package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// hostProgram is a program people run, as a user runs it under reprise:
// a shell command line in a directory holding files, nothing named by
// hand (no --file), the host's file system seen as it is.
type hostProgram struct {
	name  string
	tools []string          // what the host must have (installed by .ci/run)
	files map[string]string // written into the directory first
	env   []string          // beyond reprise's default environment
	cmd   string            // run by bash -c in the directory
	shows string            // what the output must hold (not an error both runs share)
}

// The programs of issue 26 part 3. Their output must not depend on
// time or the host: fixed dates for git's commits and tar's members, no
// owners' names beside a time.
var hostPrograms = []hostProgram{
	{name: "python3", tools: []string{"python3"}, cmd: `python3 -c '
import json, hashlib, threading, subprocess, sqlite3
out = []
t = threading.Thread(target=lambda: out.append(sum(range(100000))))
t.start(); t.join()
db = sqlite3.connect(":memory:")
db.execute("create table t(x)")
db.executemany("insert into t values (?)", [(i,) for i in range(100)])
print(json.dumps({"sum": out[0], "rows": db.execute("select sum(x) from t").fetchone()[0]}, sort_keys=True))
print(hashlib.sha256(b"reprise").hexdigest())
print(subprocess.run(["echo", "from a child"], capture_output=True, text=True).stdout, end="")
'`},
	{name: "python3-multiprocessing", tools: []string{"python3"},
		files: map[string]string{"mp.py": `import multiprocessing as mp
def square(x): return x * x
def add(v):
    with v.get_lock():
        v.value += 1
if __name__ == "__main__":
    with mp.Pool(2) as pool:
        print(sum(pool.map(square, range(100))))
    v = mp.Value("i", 0)
    ps = [mp.Process(target=add, args=(v,)) for _ in range(3)]
    for p in ps: p.start()
    for p in ps: p.join()
    print(v.value, [p.exitcode for p in ps])
`},
		cmd: `python3 mp.py`},
	{name: "python3-asyncio", tools: []string{"python3"},
		files: map[string]string{"aio.py": `import asyncio, socket
async def main():
    await asyncio.sleep(0.01)
    r, w = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=r)
    w.sendall(b"over a socketpair\n")
    print((await reader.readline()).decode().strip())
    p = await asyncio.create_subprocess_exec("echo", "from a child", stdout=asyncio.subprocess.PIPE)
    out, _ = await p.communicate()
    print(out.decode().strip(), p.returncode)
    print(sum(await asyncio.gather(*(asyncio.sleep(0.001, result=i) for i in range(10)))))
asyncio.run(main())
`},
		shows: "over a socketpair\nfrom a child 0\n45\n",
		cmd:   `python3 aio.py`},
	// getaddrinfo (whose sort connects a UDP socket to each address and
	// reads its source) and a UDP echo between asyncio and a plain socket.
	{name: "python3-udp", tools: []string{"python3"}, files: map[string]string{"udp.py": `import asyncio, socket
for fam, typ, proto, _, addr in socket.getaddrinfo("localhost", 7, type=socket.SOCK_DGRAM):
    print(fam.name, typ.name, addr[0], addr[1])
class Echo(asyncio.DatagramProtocol):
    def connection_made(self, t): self.t = t
    def datagram_received(self, data, addr): self.t.sendto(data.upper(), addr)
async def main():
    t, _ = await asyncio.get_running_loop().create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    port = t.get_extra_info("sockname")[1]
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.setblocking(False)
    for word in (b"one", b"two", b"three"):
        c.sendto(word, ("127.0.0.1", port))
        data = await asyncio.get_running_loop().sock_recv(c, 100)
        print(data.decode())
    t.close()
asyncio.run(main())
`},
		shows: "ONE\nTWO\nTHREE\n",
		cmd:   `python3 udp.py`},
	// A threaded HTTP server on a dual-stack socket and its client, one
	// program: TCP over the loopback, IPv4, IPv6 and localhost.
	{name: "python3-http", tools: []string{"python3"}, files: map[string]string{"web.py": `import http.server, threading, urllib.request, os, socket
os.makedirs("site", exist_ok=True)
with open("site/index.html", "w") as f:
    f.write("<h1>served inside the machine</h1>\n" * 200)
class Quiet(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k): super().__init__(*a, directory="site", **k)
    def log_message(self, *a): pass
class DualStack(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
srv = DualStack(("::", 0), Quiet)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()
for host in ("127.0.0.1", "[::1]", "localhost"):
    body = urllib.request.urlopen(f"http://{host}:{port}/index.html").read()
    print(host, len(body), body[:30])
srv.shutdown()
`},
		shows: "localhost 7000",
		cmd:   `python3 web.py`},
	// memcached with four worker threads and a client over TCP, one
	// recording: its own stats count what the client did.
	{name: "memcached", tools: []string{"memcached", "python3"}, files: map[string]string{"mc.py": `import socket, time
for i in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", 21211)); break
    except OSError: time.sleep(0.02)
f = s.makefile("rwb")
def cmd(line, data=None):
    f.write(line.encode() + b"\r\n")
    if data is not None: f.write(data + b"\r\n")
    f.flush()
for i in range(50): cmd(f"set k{i} 0 0 3", b"v%02d" % i); f.readline()
hits = 0
for i in range(80):
    cmd(f"get k{i}")
    line = f.readline()
    if line.startswith(b"VALUE"): f.readline(); f.readline(); hits += 1
for i in range(10): cmd(f"delete k{i}"); f.readline()
cmd("stats")
stats = {}
while True:
    line = f.readline().strip()
    if line == b"END": break
    _, k, v = line.decode().split(" ", 2); stats[k] = v
print(hits, {k: stats[k] for k in ("cmd_get", "get_hits", "get_misses", "cmd_set", "delete_hits", "curr_connections")})
cmd("shutdown")
`},
		shows: "'get_hits': '50'",
		cmd:   `memcached -u root -p 21211 -U 0 -t 4 -l 127.0.0.1 -A & python3 mc.py; wait`},
	// nginx, a master and two workers (their channels pass descriptors
	// with SCM_RIGHTS; the accept mutex is in shared memory), serving
	// files to curl over keep-alive connections, one recording.
	{name: "nginx", tools: []string{"nginx", "curl", "md5sum"},
		files: map[string]string{
			"nginx.conf": "user root;\ndaemon off;\nmaster_process on;\nworker_processes 2;\npid nginx.pid;\n" +
				"error_log /dev/null crit;\nevents { worker_connections 64; }\n" +
				"http { access_log off; server { listen 127.0.0.1:18080; root html; } }\n",
			"html/index.html": "hello from nginx\n",
			"html/big.txt":    strings.Repeat("a line of a file nginx serves whole\n", 4000),
		},
		shows: "hello from nginx\n",
		cmd: `/usr/sbin/nginx -p "$PWD/" -c nginx.conf & n=0
while ! curl -s -o /dev/null http://127.0.0.1:18080/ && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done
for i in 1 2 3; do curl -s http://127.0.0.1:18080/big.txt | md5sum; done
curl -s http://127.0.0.1:18080/index.html http://127.0.0.1:18080/index.html http://127.0.0.1:18080/missing -w '%{http_code}\n' -o /dev/null
curl -s http://127.0.0.1:18080/index.html; kill -QUIT $(cat nginx.pid); wait`},
	{name: "node", tools: []string{"node"}, cmd: `node -e '
const fs = require("fs"), crypto = require("crypto");
setTimeout(() => console.log("timer fired"), 20);
Promise.resolve(6).then(x => console.log("promise", x * 7));
fs.writeFileSync("n.txt", "written by node\n");
console.log(fs.readFileSync("n.txt", "utf8").trim());
console.log(crypto.createHash("sha256").update("reprise").digest("hex"));
'`},
	{name: "ruby", tools: []string{"ruby"}, cmd: `ruby -e '
require "json"; require "digest"
t = Thread.new { sleep 0.01; [3, 1, 2].sort }
puts JSON.generate({"sorted" => t.value})
puts Digest::SHA256.hexdigest("reprise")
'`},
	{name: "perl", tools: []string{"perl"}, cmd: `perl -MList::Util=sum,max -MPOSIX=floor -MData::Dumper -e '
$Data::Dumper::Sortkeys = 1; $Data::Dumper::Indent = 0;
print sum(1..100), " ", max(3, 9, 4), " ", floor(2.5), "\n", Dumper({a => [1, 2]}), "\n";
'`},
	{name: "git", tools: []string{"git"},
		env: []string{"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z",
			"GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A U Thor", "GIT_COMMITTER_EMAIL=a@example.com"},
		cmd: `set -e; git init -q -b main repo; cd repo; printf 'one\ntwo\n' > a.txt; mkdir sub; echo three > sub/b.txt
git add a.txt sub; git commit -q -m first; echo four >> a.txt; git diff; git commit -q -am second
git log --format='%H %s'; git cat-file -p HEAD:a.txt; git diff HEAD~1 --stat; git status --short`},
	{name: "make-gcc", tools: []string{"make", "gcc"},
		files: map[string]string{
			"Makefile": "prog: main.o sum.o\n\tgcc -o $@ $^\nmain.o: main.c\n\tgcc -c -O1 main.c\nsum.o: sum.c\n\tgcc -c -O1 sum.c\n",
			"main.c":   "#include <stdio.h>\nint sum(int);\nint main(void) { printf(\"sum %d\\n\", sum(100)); return 0; }\n",
			"sum.c":    "int sum(int n) { int s = 0; for (int i = 1; i <= n; i++) s += i; return s; }\n",
			"x.c":      "#include <stdio.h>\nint main(int c, char **v) { printf(\"%s has %d args\\n\", v[0], c); return 3; }\n",
		},
		cmd: `make -s -j2 && ./prog && gcc -o x x.c && ./x a b; echo "x exited $?"`},
	{name: "coreutils", tools: []string{"find", "sort"},
		cmd: `set -e; mkdir -p a/b/c; echo hello > a/b/c/f; ln -s b/c a/l; cp -a a z; mv z y; ln y/b/c/f hard
chmod 640 hard; stat -c '%A %h %n' hard y/b/c/f; readlink y/l; find . | sort; rm -r a; find . -type f | sort
seq 1 50000 | sort --parallel=2 -rn | head -3; seq 1 2000 | sort -R --random-source=/dev/zero | md5sum
timeout 0.2 sleep 5 || echo "timeout: $?"; timeout 5 true && echo "in time"`},
	// Listings in the host's order (getdents'), as find, ls -U and
	// os.listdir print them: the host's directories, not sorted.
	{name: "listing-order", tools: []string{"find", "python3"},
		cmd: `find /usr/include/linux | head -40; ls -U /etc | head -20; python3 -c 'import os; print(os.listdir("/usr/lib")[:20])'`},
	{name: "dash", tools: []string{"dash"}, cmd: `dash -c 'mkdir -p d/e; cd d/e; pwd; cd ..; echo $((6 * 7)) > n; cat n; cd -; ls ..'`},
	{name: "busybox", tools: []string{"busybox"}, cmd: `busybox sh -c 'mkdir -p d/e; cd d/e; pwd; cd ../..; echo $((6 * 7)); busybox ls d'`},
	{name: "tar", tools: []string{"tar", "gzip"},
		cmd: `set -e; mkdir -p t/sub; echo one > t/a; echo two > t/sub/b; ln -s a t/l
touch -h -d '2024-01-02 03:04:05' t/a t/sub/b t/l t/sub t; tar --numeric-owner -czf x.tgz t
tar --numeric-owner -tvzf x.tgz | sort -k6; gzip -dc x.tgz | tar --numeric-owner -tvf - | sort -k6
mkdir out; tar -xzf x.tgz -C out; cat out/t/sub/b; stat -c '%y %n' out/t/a`},
}

// Each program prints under reprise — run, recorded, replayed three
// times, and recorded with a jittered timer and replayed — what it prints
// on the host with the same environment, in the same directory, and
// exits the same.
func TestProgramsMatchHost(t *testing.T) {
	kvmtest.Require(t)
	for _, p := range hostPrograms {
		t.Run(p.name, func(t *testing.T) {
			kvmtest.RequireTools(t, append([]string{"bash"}, p.tools...)...)
			dir := t.TempDir()
			writeFiles(t, dir, p.files)
			bash, err := exec.LookPath("bash")
			require.NoError(t, err)
			args := []string{"--", bash, "-c", p.cmd}
			for _, kv := range p.env {
				args = append([]string{"--env", kv}, args...)
			}
			got := matchesAcrossReplays(t, dir, args)
			// Last, as reprise wrote nothing into the directory.
			want, code := onHost(t, dir, p.env, bash, "-c", p.cmd)
			require.Contains(t, want, p.shows, "the host's run")
			require.Equal(t, want, got.stdout)
			require.Equal(t, code, got.code, got.stderr)
		})
	}
}

// A script given as the program runs as exec runs it — its interpreter,
// given the script's path and the arguments, through "#!" lines that
// chain (/usr/bin/env, as pyenv's shims are) — and prints what the host
// prints.
func TestScriptAsTheProgram(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inner.sh"), []byte("#!/bin/sh -e\necho \"inner $0 $*\"; exit 4\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "outer"), []byte("#!/usr/bin/env bash\necho \"outer $0 $1\"; exec ./inner.sh \"$@\"\n"), 0o755))
	got := matchesAcrossReplays(t, dir, []string{"--", "./outer", "a", "b c"})
	want, code := onHost(t, dir, nil, "./outer", "a", "b c")
	require.Equal(t, "outer ./outer a\ninner "+filepath.Join(dir, "inner.sh")+" a b c\n", want) // bash runs it by its full path
	require.Equal(t, want, got.stdout)
	require.Equal(t, code, got.code, got.stderr)
}

// The Go runtime (goroutines, timers, its netpoller on epoll and an
// eventfd, os.ReadFile, garbage collection) prints the host's output
// through the CLI, recorded and replayed as the programs above.
func TestGoProgramMatchesHost(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.BuildGo(t, "gotimers")
	dir := t.TempDir()
	got := matchesAcrossReplays(t, dir, []string{"--", bin})
	want, code := onHost(t, dir, nil, bin)
	require.Equal(t, want, got.stdout)
	require.Equal(t, code, got.code, got.stderr)
}

// matchesAcrossReplays runs the program args (reprise's flags, then "--"
// and the command) in dir: live, then recorded and replayed three times,
// then recorded with the timer jittered and replayed; every replay must
// print what its recording did and exit as it did. It returns the live
// run, whose output must equal the recording's.
func matchesAcrossReplays(t *testing.T, dir string, args []string) cliResult {
	t.Helper()
	live := runCLIIn(t, dir, append([]string{"run"}, args...)...)
	for _, rec := range recordingsReplay(t, dir, args) {
		require.Equal(t, live.stdout, rec.stdout, "recorded: %s; live (exit %d): %s", rec.stderr, live.code, live.stderr)
		require.Equal(t, live.code, rec.code, rec.stderr)
	}
	return live
}

// recordingsReplay records the program args in dir, then replays it three
// times, and records it with the timer jittered and replays it once:
// every replay must print what its recording did. It returns the two
// recordings.
func recordingsReplay(t *testing.T, dir string, args []string) []cliResult {
	t.Helper()
	tapes := t.TempDir()
	var out []cliResult
	for _, jitter := range []string{"0s", "2ms"} {
		tp := filepath.Join(tapes, "prog-"+jitter+".tape")
		rec := runCLIIn(t, dir, append([]string{"record", "-o", tp, "--timer-jitter", jitter}, args...)...)
		replays := 3
		if jitter != "0s" {
			replays = 1
		}
		for i := range replays {
			rep := runCLIIn(t, dir, "replay", tp)
			require.Equal(t, rec.stdout, rep.stdout, "replay %d (jitter %s): %s", i, jitter, rep.stderr)
			require.Contains(t, rep.stderr, "replay matched")
		}
		out = append(out, rec)
	}
	return out
}

// redis-server and redis-benchmark in one recording (issue 27's first
// server): the benchmark's figures, every one, are printed again by each
// replay, and the keys the benchmark wrote are there (SET, INCR and
// LPUSH's three). Its rates are the recording's, so no host comparison.
func TestRedisBenchmarkReplays(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "redis-server", "redis-benchmark", "redis-cli")
	const port = "16379"
	cmd := `redis-server --port ` + port + ` --save "" --appendonly no --loglevel warning --logfile /dev/null & ` +
		`while ! redis-cli -p ` + port + ` ping >/dev/null 2>&1; do sleep 0.05; done; ` +
		`redis-benchmark -p ` + port + ` -q -n 300 -c 4 -t set,get,incr,lpush | tr '\r' '\n' | grep 'requests per second'; ` +
		`redis-cli -p ` + port + ` dbsize; redis-cli -p ` + port + ` shutdown nosave; wait`
	for _, rec := range recordingsReplay(t, t.TempDir(), []string{"--", "/bin/sh", "-c", cmd}) {
		require.Zero(t, rec.code, rec.stderr)
		for _, test := range []string{"SET", "GET", "INCR", "LPUSH"} {
			require.Regexp(t, "(?m)^"+test+": [0-9.]+ requests per second", rec.stdout)
		}
		require.Contains(t, rec.stdout, "\n3\n", "dbsize: the benchmark's keys")
	}
}

// writeFiles writes files (name to contents) into dir, making the
// directories they are in.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
}

// onHost runs name with args in dir natively, with the environment
// reprise gives a program plus env, standard output and error into one
// pipe as under reprise; it returns what was printed and the exit status.
func onHost(t testing.TB, dir string, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var err error
	cmd.Env, err = programEnv(env)
	require.NoError(t, err)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), 0
}

// BenchmarkHostPrograms times each program of TestProgramsMatchHost, and
// the Go program, natively and under reprise — run, record, replay — side
// by side in each iteration (a fresh directory each, the native run last
// as it writes there): the figures of docs/benchmarks.md. Ratios are to
// the native run, and replay to record.
//
//	go test -run '^$' -bench HostPrograms -benchtime 3x ./cmd/reprise
func BenchmarkHostPrograms(b *testing.B) {
	kvmtest.Require(b)
	bash, err := exec.LookPath("bash")
	require.NoError(b, err)
	programs := append(hostPrograms, hostProgram{name: "go", cmd: cprog.BuildGo(b, "gotimers")})
	for _, p := range programs {
		b.Run(p.name, func(b *testing.B) {
			kvmtest.RequireTools(b, p.tools...)
			command := []string{bash, "-c", p.cmd}
			if p.name == "go" {
				command = []string{p.cmd}
			}
			args := append([]string{"--"}, command...)
			for _, kv := range p.env {
				args = append([]string{"--env", kv}, args...)
			}
			var native, run, record, replay time.Duration
			timed := func(sum *time.Duration, f func()) {
				start := time.Now()
				f()
				*sum += time.Since(start)
			}
			for range b.N {
				dir := b.TempDir()
				writeFiles(b, dir, p.files)
				tp := filepath.Join(b.TempDir(), "prog.tape")
				timed(&run, func() { runCLIIn(b, dir, append([]string{"run"}, args...)...) })
				timed(&record, func() { runCLIIn(b, dir, append([]string{"record", "-o", tp}, args...)...) })
				timed(&replay, func() { runCLIIn(b, dir, "replay", tp) })
				timed(&native, func() { onHost(b, dir, p.env, command[0], command[1:]...) })
			}
			b.ReportMetric(native.Seconds()/float64(b.N), "native-s")
			b.ReportMetric(float64(run)/float64(native), "run/native")
			b.ReportMetric(float64(record)/float64(native), "record/native")
			b.ReportMetric(float64(replay)/float64(native), "replay/native")
			b.ReportMetric(float64(replay)/float64(record), "replay/record")
		})
	}
}

// BenchmarkRedis is issue 27's server figure: redis-benchmark's SET and
// GET rates against a redis-server, both natively and both inside one
// machine — live, recorded — side by side in each iteration, with the
// replay's time ÷ the recording's and the tape's bytes per request.
func BenchmarkRedis(b *testing.B) {
	kvmtest.Require(b)
	kvmtest.RequireTools(b, "redis-server", "redis-benchmark", "redis-cli")
	const port, requests = "16380", 2000
	cmd := `redis-server --port ` + port + ` --save "" --appendonly no --loglevel warning --logfile /dev/null & ` +
		`while ! redis-cli -p ` + port + ` ping >/dev/null 2>&1; do sleep 0.05; done; ` +
		`redis-benchmark -p ` + port + ` -q -n ` + strconv.Itoa(requests) + ` -c 4 -t set,get | tr '\r' '\n' | grep 'requests per second'; ` +
		`redis-cli -p ` + port + ` shutdown nosave; wait`
	rate := regexp.MustCompile(`(?m)^(SET|GET): ([0-9.]+) requests per second`)
	rates := func(out string) (sum float64) {
		for _, m := range rate.FindAllStringSubmatch(out, -1) {
			v, _ := strconv.ParseFloat(m[2], 64)
			sum += v
		}
		return sum / 2
	}
	var f serverFigures
	for range b.N {
		dir, tp := b.TempDir(), filepath.Join(b.TempDir(), "redis.tape")
		out, _ := onHost(b, dir, nil, "/bin/sh", "-c", cmd)
		f.native += rates(out)
		f.live += rates(runCLIIn(b, dir, "run", "--", "/bin/sh", "-c", cmd).stdout)
		start := time.Now()
		f.recorded += rates(runCLIIn(b, dir, "record", "-o", tp, "--", "/bin/sh", "-c", cmd).stdout)
		f.recordSecs += time.Since(start).Seconds()
		f.requests += 2 * requests
		f.replayed(b, dir, tp)
	}
	f.report(b)
}

// serverFigures sum a server benchmark's iterations: the request rates
// natively, live and recorded; the time to record and to replay; the
// tapes' bytes and the requests they hold.
type serverFigures struct {
	native, live, recorded float64
	recordSecs, replaySecs float64
	tapeBytes, requests    float64
}

// replayed replays tp in dir, checked, adding its time and the tape's size.
func (f *serverFigures) replayed(b *testing.B, dir, tp string) {
	start := time.Now()
	r := runCLIIn(b, dir, "replay", tp)
	require.Contains(b, r.stderr, "replay matched")
	f.replaySecs += time.Since(start).Seconds()
	st, err := os.Stat(tp)
	require.NoError(b, err)
	f.tapeBytes += float64(st.Size())
}

// report reports the mean rates and the ratios side by side.
func (f *serverFigures) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(f.native/n, "native-req/s")
	b.ReportMetric(f.live/n, "live-req/s")
	b.ReportMetric(f.live/f.native, "live/native")
	b.ReportMetric(f.recorded/f.live, "recorded/live")
	b.ReportMetric(f.replaySecs/f.recordSecs, "replay/record")
	b.ReportMetric(f.tapeBytes/f.requests, "tape-B/req")
}
