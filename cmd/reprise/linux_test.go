package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux"
)

// An unmodified static Linux program runs, records, replays and shows in
// info through the CLI, with its arguments after --, and --env.
func TestLinuxProgramCLI(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc")
	dir := t.TempDir()
	bin := filepath.Join(dir, "hello")
	out, err := exec.Command("musl-gcc", "-static", "-O2", "-o", bin, filepath.Join("..", "..", "linux", "testdata", "hello.c")).CombinedOutput()
	require.NoError(t, err, string(out))

	want := "hello from " + bin + " with 3 args\narg 1: -o\narg 2: x y\n" +
		"env: PATH=/usr/local/bin:/usr/bin:/bin\nenv: HOME=/\nenv: LANG=C\nenv: TERM=dumb\nenv: COLOR=blue\n" +
		"heap works\nclock ok: 1\n"
	r := runCLI(t, nil, "run", "--stats", "--env", "COLOR=blue", "--", bin, "-o", "x y")
	require.Equal(t, 3, r.code, r.stderr)
	require.Equal(t, want, r.stdout)
	// --stats says where the time went: in KVM_RUN, in the VMM, on each call.
	require.Regexp(t, `time: \S+ in KVM_RUN over \d+ entries \(\S+ each: the guest and KVM\), \S+ in the VMM between them \(\S+ an exit, idle waits left out\)\n`, r.stderr)
	require.Regexp(t, `VMM time per system call, exit to return: \S+ on average  (\w+=\S+  )*writev=`, r.stderr)

	tp := filepath.Join(dir, "hello.tape")
	r = runCLI(t, nil, "record", "-o", tp, "--env", "COLOR=blue", "--", bin, "-o", "x y")
	require.Equal(t, 3, r.code, r.stderr)
	require.Equal(t, want, r.stdout)
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, want, rep.stdout)
	require.Contains(t, rep.stderr, "replay matched")

	info := runCLI(t, nil, "info", tp)
	require.Equal(t, 0, info.code, info.stderr)
	require.Regexp(t, `program\s+`+regexp.QuoteMeta(bin)+` \(Linux`, info.stdout)
	require.Regexp(t, `argv\s+\["`+regexp.QuoteMeta(bin)+`" "-o" "x y"\]`, info.stdout)
	require.Contains(t, info.stdout, "syscall-granular")

	// Not an executable: a clear refusal naming the file.
	r = runCLI(t, nil, "run", "--", filepath.Join("..", "..", "linux", "testdata", "hello.c"))
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "hello.c: not an ELF file")
}

// A Linux program's recording taken with checkpoints replays split —
// threads, a child process, a pipe, locks, %return probes — into the
// events and lock statistics a replay from boot gives.
func TestSplitLinuxReplayCLI(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	bin := cprog.Build(t, "gcc", "pipeline", "-O1", "-pthread")
	tp := filepath.Join(dir, "p.tape")
	r := runCLI(t, nil, "record", "--mem", "64M", "--checkpoint-every", "10ms", "-o", tp, "--", bin, "40")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "child 7 sigchld 1")
	require.Regexp(t, `wrote ([3-9]|\d\d+) checkpoints`, r.stderr)
	splitReplaysMatch(t, dir, tp, "probe-entry,probe-return,mapping,thread-create,thread-exit")
}

// busybox is the host's busybox (busybox-static: a static glibc program
// nobody here wrote), for a test that runs it under reprise.
func busybox(t *testing.T) string {
	t.Helper()
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "busybox")
	bb, err := exec.LookPath("busybox")
	require.NoError(t, err)
	return bb
}

// busybox-static is a static glibc program nobody here wrote; its echo
// and its own arithmetic print what the host's do.
func TestBusyboxEcho(t *testing.T) {
	bb := busybox(t)
	r := runCLI(t, nil, "run", "--", bb, "echo", "hello", "from", "busybox")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "hello from busybox\n", r.stdout)
}

// recordReplay records the Linux program args (after "--") with --file
// specs, checks three replays print exactly what the recording did, and
// returns the recorded output.
func recordReplay(t *testing.T, files []string, args ...string) string {
	t.Helper()
	tp := filepath.Join(t.TempDir(), "prog.tape")
	cmdline := []string{"record", "-o", tp}
	for _, f := range files {
		cmdline = append(cmdline, "--file", f)
	}
	rec := runCLI(t, nil, append(append(cmdline, "--"), args...)...)
	require.Equal(t, 0, rec.code, rec.stderr)
	info := runCLI(t, nil, "info", tp)
	require.Equal(t, 0, info.code, info.stderr)
	require.Regexp(t, `program\s+`+regexp.QuoteMeta(args[0])+` \(Linux`, info.stdout)
	for i := 0; i < 3; i++ {
		rep := runCLI(t, nil, "replay", tp)
		require.Equal(t, 0, rep.code, rep.stderr)
		require.Equal(t, rec.stdout, rep.stdout, "replay %d", i)
	}
	jit := runCLI(t, nil, append(append(append([]string{"record", "-o", tp + ".jitter", "--timer-jitter", "2ms"}, cmdline[3:]...), "--"), args...)...)
	require.Equal(t, 0, jit.code, jit.stderr)
	rep := runCLI(t, nil, "replay", tp+".jitter")
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, jit.stdout, rep.stdout)
	return rec.stdout
}

// hostOutput runs name with args on the host.
func hostOutput(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	require.NoError(t, err)
	return string(out)
}

// pigz (dynamic glibc, four pthreads) compresses a file to the same bytes
// as on the host, recorded and replayed.
func TestPigzMatchesHost(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "pigz")
	input := filepath.Join(t.TempDir(), "big.bin")
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * i >> 7) // compressible, not trivially
	}
	require.NoError(t, os.WriteFile(input, data, 0o644))
	pigz, err := exec.LookPath("pigz")
	require.NoError(t, err)
	got := recordReplay(t, []string{input + ":/data/big.bin"}, pigz, "-n", "-p", "4", "-c", "/data/big.bin")
	require.Equal(t, hostOutput(t, pigz, "-n", "-p", "4", "-c", input), got)
	// And it decompresses back to the input.
	gz := filepath.Join(t.TempDir(), "big.gz")
	require.NoError(t, os.WriteFile(gz, []byte(got), 0o644))
	back := hostOutput(t, pigz, "-d", "-c", gz)
	require.Equal(t, string(data), back)
}

// xz and zstd compress with two threads (glibc's AVX memcpy in both,
// their blocks handed between them) to the host's bytes, live — where a
// tick switches threads anywhere — and recorded and replayed.
func TestThreadedCompressorsMatchHost(t *testing.T) {
	kvmtest.Require(t)
	input := filepath.Join(t.TempDir(), "text")
	var text bytes.Buffer
	for i := 0; text.Len() < 7<<20; i++ {
		fmt.Fprintf(&text, "line %d: the quick brown fox %x jumps over the lazy dog %d\n", i, i*i, i%97)
	}
	require.NoError(t, os.WriteFile(input, text.Bytes(), 0o644))
	for _, tool := range [][]string{{"xz", "-1", "-T2", "-c"}, {"zstd", "-1", "-T2", "-c"}} {
		t.Run(tool[0], func(t *testing.T) {
			kvmtest.RequireTools(t, tool[0])
			bin, err := exec.LookPath(tool[0])
			require.NoError(t, err)
			want := hostOutput(t, bin, append(tool[1:], input)...)
			live := runCLI(t, nil, append(append([]string{"run", "--file", input, "--", bin}, tool[1:]...), input)...)
			require.Equal(t, 0, live.code, live.stderr)
			require.Equal(t, want, live.stdout, "live")
			require.Equal(t, want, recordReplay(t, []string{input}, append(append([]string{bin}, tool[1:]...), input)...))
		})
	}
}

// sqlite3 (dynamic glibc, several libraries) runs a SQL script to the
// host's output.
func TestSqliteMatchesHost(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "sqlite3")
	script := filepath.Join(t.TempDir(), "t.sql")
	require.NoError(t, os.WriteFile(script, []byte(`create table t(id integer primary key, name text, v real);
with recursive c(x) as (select 1 union all select x+1 from c where x < 10000)
insert into t(name, v) select 'name' || x, x * 1.5 from c;
create index iv on t(v);
select count(*), sum(v), min(name), max(name) from t;
select name from t where v between 100 and 110 order by v;
`), 0o644))
	sqlite, err := exec.LookPath("sqlite3")
	require.NoError(t, err)
	got := recordReplay(t, []string{script + ":/data/t.sql"}, sqlite, ":memory:", ".read /data/t.sql")
	require.Equal(t, hostOutput(t, sqlite, ":memory:", ".read "+script), got)
	require.Contains(t, got, "10000|75007500.0|name1|name9999\n")
}

// sqlite3 on a database file, with transactions, prints the host's
// output: it locks the file with fcntl (F_SETLK), which failed with "disk
// I/O error" before the personality had locks. The database is created
// in the program's memory, in its /tmp.
func TestSqliteDatabaseFile(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "sqlite3")
	sql := `create table t(id integer primary key, v text);
begin; insert into t(v) values ('one'), ('two'); commit;
begin; update t set v = 'three' where id = 2; rollback;
begin immediate; insert into t(v) values ('four'); commit;
select id, v from t order by id;
pragma integrity_check;
`
	sqlite, err := exec.LookPath("sqlite3")
	require.NoError(t, err)
	got := recordReplay(t, nil, sqlite, "/tmp/t.db", sql)
	require.Equal(t, hostOutput(t, sqlite, filepath.Join(t.TempDir(), "t.db"), sql), got)
	require.Equal(t, "1|one\n2|two\n3|four\nok\n", got)
}

// A busybox shell script with pipes (fork, exec of /proc/self/exe, pipes,
// wait) prints what the same script prints under the host's busybox.
func TestBusyboxScriptMatchesHost(t *testing.T) {
	bb := busybox(t)
	script := filepath.Join(t.TempDir(), "s.sh")
	require.NoError(t, os.WriteFile(script, []byte(`seq 1 200 | sort -r | head -3
echo "zebra apple mango" | tr ' ' '\n' | sort | md5sum
seq 1 100 | awk '{ s += $1 } END { print "sum", s }'
printf 'one\ntwo\nthree\n' | sed -e 's/o/0/g' | sort
echo done: $(seq 1 10 | wc -l)
`), 0o644))
	got := recordReplay(t, []string{script + ":/data/s.sh"}, bb, "sh", "/data/s.sh")
	want := hostOutput(t, bb, "sh", script)
	require.Equal(t, want, got)
	require.Contains(t, got, "sum 5050\n")
}

// repriseCC builds linux/testdata/src with 'reprise cc --compiler
// musl-gcc' and flags into dir and returns the output's path.
func repriseCC(t *testing.T, dir, src string, flags ...string) string {
	t.Helper()
	return repriseCCWith(t, "musl-gcc", dir, src, flags...)
}

// repriseCCWith is repriseCC with another compiler.
func repriseCCWith(t *testing.T, compiler, dir, src string, flags ...string) string {
	t.Helper()
	out := filepath.Join(dir, compiler+"-"+strings.TrimSuffix(src, ".c")+".out")
	args := append(append([]string{"cc", "--compiler", compiler, "--"}, flags...), "-o", out, filepath.Join("..", "..", "linux", "testdata", src))
	r := runCLI(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	return out
}

// A program built with 'reprise cc' records with exact (swbc) positions,
// and replays: musl static here, and with gcc a dynamic PIE (its hook
// moved by the PIE base) below.
func TestInstrumentedProgram(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc")
	dir := t.TempDir()
	bin := repriseCC(t, dir, "threads.c", "-static", "-O2", "-pthread")
	nm, err := exec.Command("nm", bin).Output()
	require.NoError(t, err)
	require.Contains(t, string(nm), "__sanitizer_cov_trace_pc")

	tp := filepath.Join(dir, "threads.tape")
	rec := runCLI(t, nil, "record", "-o", tp, "--timer-jitter", "1ms", "--", bin)
	require.Equal(t, 0, rec.code, rec.stderr)
	require.Equal(t, "total=400000\n", rec.stdout)
	require.Contains(t, rec.stderr, "(swbc positions)")
	for i := 0; i < 3; i++ {
		rep := runCLI(t, nil, "replay", tp)
		require.Equal(t, 0, rep.code, rep.stderr)
		require.Equal(t, rec.stdout, rep.stdout)
	}
	info := runCLI(t, nil, "info", tp)
	require.Regexp(t, `source\s+swbc`, info.stdout)
	require.NotContains(t, info.stdout, "syscall-granular")

	dyn := repriseCCWith(t, "gcc", dir, "threads.c", "-O2", "-pthread")
	rec = runCLI(t, nil, "record", "-o", filepath.Join(dir, "dyn.tape"), "--", dyn)
	require.Equal(t, 0, rec.code, rec.stderr)
	require.Equal(t, "total=400000\n", rec.stdout)
	require.Contains(t, rec.stderr, "(swbc positions)")
	rep := runCLI(t, nil, "replay", filepath.Join(dir, "dyn.tape"))
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, rec.stdout, rep.stdout)

	// Compiling without linking adds no hook object.
	obj := repriseCC(t, dir, "threads.c", "-c")
	nm, err = exec.Command("nm", obj).Output()
	require.NoError(t, err)
	require.Contains(t, string(nm), "U __sanitizer_cov_trace_pc", "instrumented, the hook left to the link")
}

// --stdin gives a program a host file as its standard input, recorded by
// hash: busybox sort reads it and prints what the host's sort prints.
func TestStdinFile(t *testing.T) {
	bb := busybox(t)
	in := filepath.Join(t.TempDir(), "in.txt")
	require.NoError(t, os.WriteFile(in, []byte("pear\napple\nfig\n"), 0o644))
	tp := filepath.Join(t.TempDir(), "sort.tape")
	r := runCLI(t, nil, "record", "-o", tp, "--stdin", in, "--", bb, "sort")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "apple\nfig\npear\n", r.stdout)
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, r.stdout, rep.stdout)
}

// A recording of a Linux program stopped by --timeout ends cleanly at a
// point its replay finds again (here, exact: an instrumented program).
func TestLinuxRecordingTimeout(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc")
	dir := t.TempDir()
	bin := repriseCC(t, dir, "hog.c", "-static", "-O1", "-pthread")
	tp := filepath.Join(dir, "hog.tape")
	rec := runCLI(t, nil, "record", "-o", tp, "--timeout", "500ms", "--", bin)
	require.Equal(t, 124, rec.code, rec.stderr)
	require.Contains(t, rec.stderr, "recording stopped")
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Contains(t, rep.stderr, "stopped where the recording was stopped")
}

// --keep-writes copies what the program created or changed, and only that.
func TestKeepWrites(t *testing.T) {
	bb := busybox(t)
	for _, cmd := range []string{"run", "record"} {
		keep := t.TempDir()
		args := []string{cmd, "--keep-writes", keep}
		if cmd == "record" {
			args = append(args, "-o", filepath.Join(t.TempDir(), "k.tape"))
		}
		r := runCLI(t, nil, append(args, "--", bb, "sh", "-c", "echo hi > /tmp/out.txt; mkdir /tmp/d; seq 3 > /tmp/d/n; ln -s ../out.txt /tmp/d/l; cat /etc/passwd > /dev/null")...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stderr, "kept 3 written files in "+keep)
		target, err := os.Readlink(filepath.Join(keep, "tmp", "d", "l"))
		require.NoError(t, err, "the link the program made is kept")
		require.Equal(t, "../out.txt", target)
		b, err := os.ReadFile(filepath.Join(keep, "tmp", "out.txt"))
		require.NoError(t, err)
		require.Equal(t, "hi\n", string(b))
		b, err = os.ReadFile(filepath.Join(keep, "tmp", "d", "n"))
		require.NoError(t, err)
		require.Equal(t, "1\n2\n3\n", string(b))
		require.NoFileExists(t, filepath.Join(keep, "etc", "passwd"))
	}
}

// A packed tape — 'record --pack', or 'reprise pack' afterwards — replays
// after the program's files are gone; an unpacked one says which is
// missing.
func TestPackedTapeReplaysWithoutTheFiles(t *testing.T) {
	bb := busybox(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "in.txt")
	require.NoError(t, os.WriteFile(input, []byte("b\na\nc\n"), 0o644))
	packedAtRecord, plain, packedAfter := filepath.Join(dir, "p1.tape"), filepath.Join(dir, "plain.tape"), filepath.Join(dir, "p2.tape")
	for _, tp := range []string{packedAtRecord, plain} {
		args := []string{"record", "-o", tp, "--file", input + ":/data/in.txt"}
		if tp == packedAtRecord {
			args = append(args, "--pack")
		}
		r := runCLI(t, nil, append(args, "--", bb, "sort", "/data/in.txt")...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "a\nb\nc\n", r.stdout)
	}
	r := runCLI(t, nil, "pack", plain, "-o", packedAfter)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "packed 1 files into "+packedAfter)
	info := runCLI(t, nil, "info", packedAfter)
	require.Equal(t, 0, info.code, info.stderr)

	require.NoError(t, os.Remove(input))
	for _, tp := range []string{packedAtRecord, packedAfter} {
		rep := runCLI(t, nil, "replay", tp)
		require.Equal(t, 0, rep.code, rep.stderr)
		require.Equal(t, "a\nb\nc\n", rep.stdout)
	}
	rep := runCLI(t, nil, "replay", plain)
	require.Equal(t, exitFailure, rep.code)
	require.Contains(t, rep.stderr, input)
}

// --root shows a host directory as the program's root, read as the
// program looks, however large; --file replaces a file of it; a root
// that is not a directory is refused by name.
func TestRootDir(t *testing.T) {
	bb := busybox(t)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "motd"), []byte("from the root\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "issue"), []byte("root issue\n"), 0o644))
	other := filepath.Join(t.TempDir(), "issue")
	require.NoError(t, os.WriteFile(other, []byte("given with --file\n"), 0o644))
	r := runCLI(t, nil, "run", "--root", root, "--file", other+":/etc/issue", "--", bb, "cat", "/etc/motd", "/etc/issue")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "from the root\ngiven with --file\n", r.stdout)
	r = runCLI(t, nil, "run", "--root", root, "--", bb, "ls", "/", "/etc")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "dev\netc\nproc\nsys\nusr\n\n/etc:\nissue\nmotd\n", strings.TrimPrefix(r.stdout, "/:\n"), "usr holds the executable")
	r = runCLI(t, nil, "run", "--root", "/usr", "--", bb, "ls", "/share/doc")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "busybox")
	r = runCLI(t, nil, "run", "--root", other, "--", bb, "true")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "--root "+other+": not a directory")
}

// The program sees the host's files, read as it looks and recorded by
// content: a replay where a directory it listed gained a file still
// replays, one where a file it read changed is refused, naming the file.
func TestHostFilesRecordedByContent(t *testing.T) {
	bb := busybox(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("first\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b"), []byte("second\n"), 0o644))
	tp := filepath.Join(t.TempDir(), "ls.tape")
	r := runCLI(t, nil, "record", "-o", tp, "--", bb, "sh", "-c", "ls "+dir+"; cat "+dir+"/a")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "a\nb\nfirst\n", r.stdout)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c"), []byte("new\n"), 0o644))
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, r.stdout, rep.stdout)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("FIRST\n"), 0o644))
	rep = runCLI(t, nil, "replay", tp)
	require.Equal(t, exitFailure, rep.code)
	require.Contains(t, rep.stderr, filepath.Join(dir, "a")+" is not the file the program read when recorded")
}

// find walks all of /usr, more names than the program's tree may hold
// (65 536 nodes): it prints what it prints on the host (in name order, as
// the tree lists), recorded, replayed, and replayed from a late
// checkpoint, the tree forgetting the host directories it is done with
// at the same calls every time. It failed with ENOMEM past the bound.
func TestFindWalksMoreThanTheTreeHolds(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "find")
	find, err := exec.LookPath("find")
	require.NoError(t, err)
	native := strings.Split(strings.TrimSpace(hostOutput(t, find, "/usr")), "\n")
	require.Greater(t, len(native), 1<<16, "/usr must hold more names than the tree")
	slices.Sort(native)
	dir := t.TempDir()
	tp := filepath.Join(dir, "find.tape")
	rec := runCLI(t, nil, "record", "--checkpoint-every", "2s", "-o", tp, "--", find, "/usr")
	require.Equal(t, 0, rec.code, rec.stderr)
	got := strings.Split(strings.TrimSpace(rec.stdout), "\n")
	slices.Sort(got)
	require.Equal(t, native, got)
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, rec.stdout, rep.stdout)
	require.Contains(t, rep.stderr, "replay matched")
	from := runCLI(t, nil, "replay", "--from", "1h", tp)
	require.Equal(t, 0, from.code, from.stderr)
	require.Contains(t, from.stderr, "starting at checkpoint")
	require.Contains(t, from.stderr, "replay matched")
}

// mv renames within the program's files, and refuses to move a directory
// into itself, as Linux does.
func TestRename(t *testing.T) {
	bb := busybox(t)
	r := runCLI(t, nil, "run", "--", bb, "sh", "-c", "cd $(mktemp -d); echo x > f; mv f g; cat g; ls; mkdir -p a/b; mv a a/b/c 2>/dev/null || echo refused")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "x\ng\nrefused\n", r.stdout)
}

// A recorder of a Linux program killed outright leaves a tape that
// replays up to its last whole chunk, as a kit recording does.
func TestKilledLinuxRecorderLeavesReplayableTape(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc")
	dir := t.TempDir()
	bin := repriseCC(t, dir, "hog.c", "-static", "-O1", "-pthread") // counted: ticks land all along
	tp := filepath.Join(dir, "killed.tape")
	cmd := exec.Command(reprise, "record", "-o", tp, "--", bin)
	require.NoError(t, cmd.Start())
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	info := runCLI(t, nil, "info", tp)
	require.Equal(t, 0, info.code, info.stderr)
	require.Regexp(t, `cut short|truncated`, info.stdout)
	rep := runCLI(t, nil, "replay", "-q", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Contains(t, rep.stderr, "notice: tape ends after")
}

// A Linux tape names the personality that recorded it: one recorded by
// another version (which would choose other frames for the same calls) is
// refused by name, not replayed into a RAM-hash divergence — but for the
// versions this one replays as they ran (linux.Replays), unless its header
// says it used what that version had not. The version is what the replay
// runs: this version's recording, named the last one's, leaves its page
// entries otherwise and diverges at the end (replayer's
// TestOlderPersonalityReplays replays a recording that was the last one's).
func TestOtherPersonalityIsRefused(t *testing.T) {
	bb := busybox(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "echo.tape")
	r := runCLI(t, nil, "record", "-o", tp, "--", bb, "echo", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	raw, err := os.ReadFile(tp)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		forge func(l map[string]any)
		code  int
	}{
		{"older", func(l map[string]any) { l["personality"] = 9 }, exitFailure},
		{"unversioned", func(l map[string]any) { delete(l, "personality") }, exitFailure},
		{"before-fast-calls", func(l map[string]any) { l["personality"], l["fast_calls"] = 10, true }, exitFailure},
		{"previous", func(l map[string]any) { l["personality"] = linux.Version - 1 }, exitDivergence},
	} {
		forged := filepath.Join(dir, tc.name+".tape")
		require.NoError(t, os.WriteFile(forged, forgeHeader(t, raw, func(h map[string]any) {
			l := h["linux"].(map[string]any)
			require.EqualValues(t, linux.Version, l["personality"])
			tc.forge(l)
		}), 0o644))
		r = runCLI(t, nil, "replay", "-q", forged)
		require.Equal(t, tc.code, r.code, "%s: %s", tc.name, r.stderr)
		if tc.code == exitFailure {
			require.Contains(t, r.stderr, "of the Linux personality, this is version", tc.name)
		}
	}
	r = runCLI(t, nil, "replay", "-q", tp)
	require.Equal(t, 0, r.code, r.stderr)
}
