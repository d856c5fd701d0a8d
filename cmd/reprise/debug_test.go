package main

import (
	"bufio"
	"cmp"
	"context"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/rsp"
)

// overwriteLine is the line of internal/cprog/testdata/overwrite.c that
// holds text: scripts and checks name lines by what is on them.
func overwriteLine(t testing.TB, text string) int { return cprogLine(t, "overwrite.c", text) }

// cprogLine is the number of the first line of internal/cprog's source
// file that holds text.
func cprogLine(t testing.TB, file, text string) int {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "internal", "cprog", "testdata", file))
	require.NoError(t, err)
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", file, text)
	return 0
}

// debugScript runs reprise debug on tape with a gdb batch script and
// returns what gdb and the program printed.
func debugScript(t *testing.T, dir, tp, script string) string {
	t.Helper()
	kvmtest.RequireTools(t, "gdb")
	path := filepath.Join(t.TempDir(), "script.gdb")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
	r := runCLIIn(t, dir, "debug", tp, "--", "-nx", "-batch", "-x", path)
	require.Zero(t, r.code, "%s\n%s", r.stdout, r.stderr)
	require.NotContains(t, r.stderr, "panic")
	return r.stdout + r.stderr
}

// recordTape records argv, with record's flags, in a directory of its
// own: the directory, the tape and what record printed.
func recordTape(t testing.TB, argv []string, flags ...string) (dir, tp string, r cliResult) {
	t.Helper()
	dir = t.TempDir()
	tp = filepath.Join(dir, filepath.Base(argv[0])+".tape")
	args := append(append([]string{"record", "-o", tp}, flags...), "--")
	r = runCLIIn(t, dir, append(args, argv...)...)
	require.Zero(t, r.code, r.stderr)
	return dir, tp, r
}

// noAck turns acks off on a protocol client, as gdb does first, and
// returns how to ask it: a packet, and its answer.
func noAck(t *testing.T, gdb *rsp.Conn) (ask func(packet string) string) {
	ask = func(p string) string {
		require.NoError(t, gdb.Write([]byte(p)), p)
		b, err := gdb.Read()
		require.NoError(t, err, p)
		return string(b)
	}
	require.Equal(t, "OK", ask("QStartNoAckMode"))
	gdb.SetNoAck()
	return ask
}

// TestDebugThreadsWithGDB debugs the replay of a dynamic glibc program
// with threads (internal/cprog/testdata/overwrite.c) in gdb: a breakpoint
// on a function hit in its thread, bt, info threads, print,
// finish, next (one range step: gdb's vCont;r, the replay stepping on
// while the thread stays in the line; from where it stopped, back one
// instruction and forwards again), a breakpoint at a line in another
// thread, x/i, stepi, the SSE, AVX and thread pointer registers, and
// continue to the end, which prints what the recording printed. Two
// sessions print the same, registers included.
func TestDebugThreadsWithGDB(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "overwrite", "-g", "-O0", "-pthread")})
	recorded := r.stdout

	script := `break add
continue
bt
info threads
print by
finish
set debug remote 1
next
set debug remote 0
info registers rip
reverse-stepi
stepi
info registers rip
print total
delete
break overwrite.c:BUG
continue
print total >= 500
x/1i $pc
stepi
info registers rip rsp
print $fs_base != 0
print sizeof($xmm0)
print $ymm0.v8_int32[7]
delete
continue
`
	script = strings.ReplaceAll(script, "BUG", strconv.Itoa(overwriteLine(t, "total = -1;")))
	out := debugScript(t, dir, tp, script)
	t.Log(out)
	for _, want := range []string{
		"hit Breakpoint 1, add (v=0, by=1) at ", fmt.Sprintf("overwrite.c:%d", overwriteLine(t, "static long add")),
		"#1  0x", "in adder (arg=0x0) at ",
		"$1 = 1", "Value returned is $2 = 1", "$3 = 1",
		"hit Breakpoint 2, clobber (arg=0x0) at ", fmt.Sprintf("overwrite.c:%d", overwriteLine(t, "total = -1;")), "$4 = 1", "<clobber+",
		"$5 = 1", "$6 = 16", "$7 = 0",
		recorded, "[Inferior 1 (process 1) exited normally]", "reprise: replay matched: ",
	} {
		require.Contains(t, out, want)
	}
	require.Regexp(t, `Sending packet: \$vCont;r[0-9a-f]+,[0-9a-f]+:p1\.[0-9a-f]+[;#]`, out, "next is a range step")
	require.NotContains(t, out, "Sending packet: $vCont;s", "and no single step")
	rips := regexp.MustCompile(`(?m)^rip +0x[0-9a-f]+ .*$`).FindAllString(out, -1)
	require.GreaterOrEqual(t, len(rips), 2, out)
	require.Equal(t, rips[0], rips[1], "back one instruction from where next stopped, and forwards again")
	threads := regexp.MustCompile(`(?m)^\*? +\d+ +Thread 1\.\d+ \(overwrite-gcc\)`).FindAllString(out, -1)
	require.Len(t, threads, 3, "info threads: main, adder, clobber")
	require.Equal(t, withoutGDBWaits(out), withoutGDBWaits(debugScript(t, dir, tp, script)), "a second session")
}

// gdbWaits are the lines set debug remote 1 prints as gdb's wait loop
// turns, which a loaded host's timing changes (a wait that times out
// and is entered again); the packets are the session's.
var gdbWaits = regexp.MustCompile(`(?m)^ *\[remote\] wait: (enter|exit)\n`)

func withoutGDBWaits(out string) string { return gdbWaits.ReplaceAllString(out, "") }

// TestDebugWatchpointFindsTheWrite is the bug hunt overwrite.c stages: a
// watchpoint on total, conditioned on the value the bug writes, stops in
// the other thread right after its unlocked write — the replay stepping
// every thread and comparing the memory after each instruction — and the
// replay still ends as recorded. Then a stepi over a system call stops
// right after the SYSCALL, its result in rax, no trap flag left in the
// program's flags.
func TestDebugWatchpointFindsTheWrite(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "overwrite", "-g", "-O0", "-pthread")})
	recorded := r.stdout
	out := debugScript(t, dir, tp, `set breakpoint pending on
break adder
continue
delete
watch total if total < 0
continue
print total
delete
break write
continue
set $n = 0
while $n < 100 && *(unsigned short *)$pc != 0x050f
  stepi
  set $n = $n + 1
end
set $at = $pc
stepi
print $pc - $at
print $rax
print $eflags & 0x100
continue
`)
	t.Log(out)
	for _, want := range []string{"Hardware watchpoint 2: total", "New value = -1", "clobber (arg=0x0) at ", fmt.Sprintf("overwrite.c:%d", overwriteLine(t, "total = -1;")+1), "$1 = -1",
		"$2 = 2", fmt.Sprintf("$3 = %d", len(recorded)), "$4 = 0",
		recorded, "exited normally", "reprise: replay matched: "} {
		require.Contains(t, out, want)
	}
}

// TestDebugReverse runs a replay backwards in gdb: reverse-continue to
// the previous hits of a breakpoint and past the first to the start of
// the history; forwards again to the same hits; reverse-stepi and stepi
// arrive at the same registers; reverse-next, reverse-step and
// reverse-finish walk back through a call.
func TestDebugReverse(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, _ := recordTape(t, []string{cprog.Build(t, "gcc", "overwrite", "-g", "-O0", "-pthread")})
	out := debugScript(t, dir, tp, `break add
continue
continue
continue
print by
reverse-continue
print by
reverse-continue
print by
reverse-continue
continue
print by
finish
next
print/x $pc
print $rax
info registers
reverse-stepi
print/x $pc
stepi
print/x $pc
print $rax
info registers
reverse-next
reverse-step
print by
reverse-finish
print by
delete
continue
`)
	t.Log(out)
	for _, want := range []string{"$1 = 3", "$2 = 2", "$3 = 1", "No more reverse-execution history.", "$4 = 1",
		"Value returned is $5 = 1", "$7 = 1", "$10 = 1", "$11 = 1", "$12 = 1", "reprise: replay matched: "} {
		require.Contains(t, out, want)
	}
	pcs := regexp.MustCompile(`\$(6|8|9) = (0x[0-9a-f]+)`).FindAllStringSubmatch(out, -1)
	require.Len(t, pcs, 3)
	require.Equal(t, pcs[0][2], pcs[2][2], "stepi after reverse-stepi comes back to the same pc")
	require.NotEqual(t, pcs[0][2], pcs[1][2])
	dumps := regexp.MustCompile(`(?s)rax +0x.*?gs_base +0x[0-9a-f]+ +[0-9]+\n`).FindAllString(out, -1)
	require.Len(t, dumps, 2)
	require.Equal(t, dumps[0], dumps[1], "every register the same, back and forth again")
}

// TestDebugReverseWatchFindsTheBug is the hunt rr is used for: at the end
// of overwrite.c, where total is wrong, a watchpoint on total and
// reverse-continue stop at the write that broke it — in the clobbering
// thread, at its line, before the write (gdb shows the value after it as
// the old one, as with a hardware watchpoint run backwards) — and once
// more at the write before, adder's last. Continued, the replay ends as
// recorded.
func TestDebugReverseWatchFindsTheBug(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.Build(t, "gcc", "overwrite", "-g", "-O0", "-pthread")
	for _, checkpoints := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoints=%v", checkpoints), func(t *testing.T) {
			reverseWatch(t, bin, checkpoints)
		})
	}
}

// TestDebugReadAndAccessWatches sets gdb's rwatch and awatch on
// overwrite.c's total, served by the replay stepping the program and
// decoding each instruction's operands: from adder's loop, awatch stops
// at the first instruction touching total — adder's read for its add, or
// clobber's polling read, whichever thread the recording ran first —
// with the value unchanged; at main's printf, rwatch stops right after
// the load of total for the call. Going back with them set is refused,
// saying why; continued, the replay ends as recorded.
func TestDebugReadAndAccessWatches(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "overwrite", "-g", "-O0", "-pthread")})
	require.Equal(t, "total -1 (want 5050)\n", r.stdout)
	loop, poll, printf := overwriteLine(t, "total = add(total, i);"), overwriteLine(t, "while (*(volatile long *)&total"), overwriteLine(t, "printf(")
	out := debugScript(t, dir, tp, fmt.Sprintf("break overwrite.c:%d\ncontinue\ndelete\nawatch total\ncontinue\n", loop)+
		"echo @@\\n\ndelete\n"+fmt.Sprintf("break overwrite.c:%d\ncontinue\nrwatch total\ncontinue\nprint $pc\nreverse-continue\ndelete\ncontinue\n", printf))
	parts := strings.Split(out, "@@\n")
	require.Len(t, parts, 2, out)
	access, read := parts[0], parts[1]
	require.Contains(t, access, "Hardware access (read/write) watchpoint 2: total", out)
	require.Contains(t, access, "Value = ", out)
	require.Regexp(t, fmt.Sprintf(`(adder \(arg=0x0\) at \S*overwrite.c:%d|clobber \(arg=0x0\) at \S*overwrite.c:%d)`, loop, poll), access)
	require.Contains(t, read, "Hardware read watchpoint 4: total", out)
	require.Contains(t, read, "Value = -1", out)
	require.Regexp(t, fmt.Sprintf(`main \(\) at \S*overwrite.c:%d`, printf), read)
	require.Contains(t, read, "going back stops at writes to watched memory only", out)
	require.Contains(t, out, "total -1 (want 5050)")
	require.Contains(t, out, "reprise: replay matched: ")
}

// TestDebugInfoProc runs gdb's info proc on a replay: internal/cprog/
// testdata/maps.c prints its own /proc/self/maps and then calls marker(),
// where info proc mappings (read through vFile from the replay's kernel)
// lists the same mappings the program printed, and info proc names the
// process, its command line, executable and directory.
func TestDebugInfoProc(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.Build(t, "gcc", "maps", "-g", "-O1")
	dir, tp, r := recordTape(t, []string{bin})
	out := debugScript(t, dir, tp, "break marker\ncontinue\ninfo proc\ninfo proc mappings\ncontinue\n")
	require.Contains(t, out, "process 1\n", out)
	require.Contains(t, out, fmt.Sprintf("cmdline = '%s'", bin), out)
	require.Contains(t, out, fmt.Sprintf("exe = '%s'", bin), out)
	require.Regexp(t, `cwd = '/[^']*'`, out)
	ranges := func(re string, text string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(text, -1) {
			out = append(out, strings.TrimLeft(m[1], "0")+"-"+strings.TrimLeft(m[2], "0"))
		}
		return out
	}
	printed := ranges(`(?m)^([0-9a-f]+)-([0-9a-f]+) `, r.stdout)
	require.NotEmpty(t, printed, r.stdout)
	require.Equal(t, printed, ranges(`(?m)^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x`, out), out)
	require.Contains(t, out, "reprise: replay matched: ")
}

// TestDebugCatchSyscall catches syscall.c's write and read (a pipe's) as
// gdb does natively on the same binary: the same four stops — each call's
// entry and return — in the same functions, with the same rax and
// orig_rax (-ENOSYS and the call at an entry, the result and the call at
// a return). Backwards, reverse-continue stops at each again with the
// same registers; reverse-stepi from write's entry goes to its SYSCALL;
// a continue from there stops at the entry again. The end matches.
func TestDebugCatchSyscall(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "gdb")
	bin := cprog.Build(t, "gcc", "syscalls", "-g", "-O1")
	dir, tp, r := recordTape(t, []string{bin})
	require.Equal(t, "wrote 4 read 4\n", r.stdout)
	const regs = syscallRegs
	forward := "catch syscall write read\n" + strings.Repeat("continue\n"+regs, 4)
	want := nativeGDB(t, bin, forward, "break main")
	out := debugScript(t, dir, tp, "break main\ncontinue\n"+forward+strings.Repeat("reverse-continue\n"+regs, 3)+
		"reverse-stepi\nx/i $pc\ncontinue\n"+regs+"delete\ncontinue\n")
	t.Log(out)
	stops := regexp.MustCompile(`Catchpoint \d+ \((call to|returned from) syscall (\w+)\), 0x[0-9a-f]+ in (\S+) \(`)
	events := func(text string) []string {
		var out []string
		for _, m := range stops.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1]+" "+m[2]+" in "+m[3])
		}
		return out
	}
	values := regexp.MustCompile(`(?m)^(rax|orig_rax) +0x[0-9a-f]+ +(-?\d+)$`)
	results := func(text string) []string {
		var out []string
		for _, m := range values.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1]+"="+m[2])
		}
		return out
	}
	nativeEvents := events(want)
	require.Len(t, nativeEvents, 4, "%s", want)
	require.Equal(t, []string{"rax=-38", "orig_rax=1", "rax=4", "orig_rax=1", "rax=-38", "orig_rax=0", "rax=4", "orig_rax=0"}, results(want), "%s", want)
	blocks := strings.Split(out, "@@\n")
	require.Len(t, blocks, 9, out)
	require.Equal(t, nativeEvents, events(strings.Join(blocks[:4], "")), "forwards as natively")
	require.Equal(t, results(want), results(strings.Join(blocks[:4], "")), "forwards as natively")
	dump := stopRegs
	a, b, c := dump(blocks[0]), dump(blocks[1]), dump(blocks[2])
	require.Len(t, a, 3, blocks[0])
	require.Equal(t, nativeEvents[2:3], events(blocks[4]), "reverse-continue from read's return: its entry")
	require.Equal(t, c, dump(blocks[4]))
	require.Equal(t, b, dump(blocks[5]), "then write's return")
	require.Equal(t, a, dump(blocks[6]), "then write's entry")
	require.Regexp(t, `=> 0x[0-9a-f]+ <[^>]+>:\s+syscall`, blocks[7], "reverse-stepi from the entry: the SYSCALL")
	require.Equal(t, a, dump(blocks[7][strings.Index(blocks[7], "Catchpoint"):]), "continue from the SYSCALL: the entry again")
	require.Contains(t, out, "wrote 4 read 4")
	require.Contains(t, out, "reprise: replay matched: ")
}

// TestDebugCatchSigreturnAndExec catches the calls whose thread resumes
// elsewhere than after its SYSCALL, as gdb does natively on the same
// static binary (sigexec.c): from the signal's handler, with every call
// caught, rt_sigreturn's entry and its return where the signal came, as
// "syscall -1" (Linux's restore sets orig_rax to -1); then execve's entry,
// the exec, and its return at the new image's _start — the same lines,
// rip, rax and orig_rax. reverse-continue from the -1 return stops at
// rt_sigreturn's entry again, and from execve's return, back across the
// exec (of the same file), at execve's entry, with the same registers.
// The end matches.
func TestDebugCatchSigreturnAndExec(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "gdb")
	bin := cprog.Build(t, "gcc", "sigexec", "-g", "-O1", "-static")
	dir, tp, r := recordTape(t, []string{bin})
	require.Equal(t, "handled 10\nagain x\n", r.stdout)
	const regs = syscallRegs
	forward := "catch syscall\n" + strings.Repeat("continue\n"+regs, 2) + "delete\ncatch syscall execve\n" + strings.Repeat("continue\n"+regs, 2)
	const quiet = "handle SIGUSR1 nostop noprint" // the handler's breakpoint first
	want := nativeGDB(t, bin, forward, quiet, "break handler")
	back := "reverse-continue\n" + regs
	out := debugScript(t, dir, tp, quiet+"\nbreak handler\ncontinue\ncatch syscall\n"+strings.Repeat("continue\n"+regs, 2)+back+
		"delete\ncatch syscall execve\n"+strings.Repeat("continue\n"+regs, 2)+back+"delete\ncontinue\n")
	t.Log(out)
	events := func(text string) []string { return catchStops(text, true) }
	dump := stopRegs
	nativeBlocks := strings.Split(want, "@@\n")
	require.Len(t, nativeBlocks, 5, "%s", want)
	nativeEvents := events(want)
	require.Equal(t, []string{"call to syscall rt_sigreturn", "returned from syscall -1", "call to syscall execve", "returned from syscall execve"},
		eventNames(nativeEvents), "%s", want)
	blocks := strings.Split(out, "@@\n")
	require.Len(t, blocks, 7, out)
	got := []string{blocks[0], blocks[1], blocks[3], blocks[4]}
	for i := range got {
		require.Equal(t, nativeEvents[i:i+1], events(got[i]), "stop %d as natively", i)
		require.Equal(t, dump(nativeBlocks[i]), dump(got[i]), "stop %d as natively", i)
	}
	require.Equal(t, nativeEvents[:1], events(blocks[2]), "reverse-continue from the -1 return: rt_sigreturn's entry")
	require.Equal(t, dump(blocks[0]), dump(blocks[2]))
	require.Contains(t, blocks[4], "is executing new program: ")
	require.Equal(t, nativeEvents[2:3], events(blocks[5]), "reverse-continue from execve's return: back across the exec of the same file, to its entry")
	require.Equal(t, dump(blocks[3]), dump(blocks[5]))
	require.Contains(t, out, "again x")
	require.Contains(t, out, "reprise: replay matched: ")
}

// A page fault taken while gdb steps leaves the debugger's trap flag in
// the trap frame the CPU pushes; the stub's IRETQ pops it, but RAM keeps
// it. stepfault.c's fault is the run's last trap, so the frame is still
// there at the end: the replay must end with the recording's RAM (it
// ended with that bit set, a divergence, in 3 debugging sessions of 20,
// where a fault came while stepping).
func TestDebugStepOverAFaultKeepsRAM(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "stepfault", "-g", "-O1", "-static")})
	require.Equal(t, "done\n", r.stdout)
	for _, n := range []int{5, 20} {
		out := debugScript(t, dir, tp, fmt.Sprintf("break deep\ncontinue\nstepi %d\ncontinue\n", n))
		require.Contains(t, out, "reprise: replay matched: ", "stepi %d: %s", n, out)
	}
}

// A call a signal's handler interrupts returns to gdb first, as under
// Linux, with the code Linux's syscall-exit stop shows before the
// handler's set-up makes it EINTR: sigcalls.c's read of an empty pipe
// (-ERESTARTSYS), pause (-ERESTARTNOHAND) and nanosleep
// (clock_nanosleep, -ERESTART_RESTARTBLOCK), each interrupted by
// SIGALRM. The six stops' lines, rip, rax and orig_rax are native gdb's on
// the same binary; going back from the last return reaches its entry, then
// pause's interrupted return, with the same registers.
func TestDebugCatchInterruptedCalls(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "gdb")
	bin := cprog.Build(t, "gcc", "sigcalls", "-g", "-O1", "-static")
	dir, tp, r := recordTape(t, []string{bin})
	require.Equal(t, "read -1 1\npause 1\nsleep -1 1\n", r.stdout)
	const regs = syscallRegs
	forward := "catch syscall read pause clock_nanosleep\n" + strings.Repeat("continue\n"+regs, 6)
	const quiet = "handle SIGALRM nostop noprint"
	want := nativeGDB(t, bin, forward, quiet, "break main")
	back := "reverse-continue\n" + regs
	out := debugScript(t, dir, tp, quiet+"\nbreak main\ncontinue\n"+forward+back+back+"delete\ncontinue\n")
	t.Log(out)
	events := func(text string) []string { return catchStops(text, false) }
	dump := stopRegs
	nativeBlocks := strings.Split(want, "@@\n")
	require.Len(t, nativeBlocks, 7, "%s", want)
	require.Equal(t, []string{"call to syscall read", "returned from syscall read", "call to syscall pause", "returned from syscall pause",
		"call to syscall clock_nanosleep", "returned from syscall clock_nanosleep"}, events(want), "%s", want)
	blocks := strings.Split(out, "@@\n")
	require.Len(t, blocks, 9, out)
	for i := range 6 {
		require.Equal(t, events(nativeBlocks[i]), events(blocks[i]), "stop %d as natively", i)
		require.Equal(t, dump(nativeBlocks[i]), dump(blocks[i]), "stop %d as natively", i)
	}
	for _, rax := range []string{"-512", "-514", "-516"} {
		require.Contains(t, want, rax)
	}
	require.Equal(t, events(blocks[4]), events(blocks[6]), "back from clock_nanosleep's return: its entry")
	require.Equal(t, dump(blocks[4]), dump(blocks[6]))
	require.Equal(t, events(blocks[3]), events(blocks[7]), "back again: pause's interrupted return")
	require.Equal(t, dump(blocks[3]), dump(blocks[7]))
	require.Contains(t, out, "sleep -1 1")
	require.Contains(t, out, "reprise: replay matched: ")
}

// Going back across an exec of another executable is refused, and the
// program stays where it was: gdb holds the new image's symbols (the
// remote protocol cannot tell it of an exec undone) and would read the
// old image's code with them. execother.c writes, then runs busybox's
// true (both static: no library events, where gdb itself would stop going
// back); from true's exit_group, a reverse-continue to the write says why
// it does not go, the registers are as before, and the end matches.
func TestDebugReverseAcrossAnExec(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "busybox")
	bb, err := exec.LookPath("busybox")
	require.NoError(t, err)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "execother", "-g", "-O1", "-static"), bb, "true"})
	require.Equal(t, "before the exec\n", r.stdout)
	const regs = "info registers rip rsp\necho @@\\n\n"
	out := debugScript(t, dir, tp, "catch syscall write\ncontinue\ncontinue\ndelete\ncatch syscall exit_group\ncontinue\n"+regs+
		"delete\ncatch syscall write\nreverse-continue\n"+regs+"delete\ncontinue\n")
	t.Log(out)
	blocks := strings.Split(out, "@@\n")
	require.Len(t, blocks, 3, out)
	require.Contains(t, blocks[0], "is executing new program: ")
	require.Regexp(t, `Catchpoint \d+ \(call to syscall exit_group\)`, blocks[0])
	// gdb's warning is on its standard error, after the rest.
	require.Contains(t, out, "going back across an exec is served into the same executable only")
	require.Regexp(t, `in process \d+ before it ran \S*busybox, when it ran \S*execother`, out)
	require.Len(t, registerLines(blocks[0], "rip", "rsp"), 2)
	require.Equal(t, registerLines(blocks[0], "rip", "rsp"), registerLines(blocks[1], "rip", "rsp"), "where it was")
	require.Contains(t, out, "reprise: replay matched: ")
}

// syscallRegs, after a syscall stop in a gdb script, prints what the
// tests compare it by and ends its block of the output (split at "@@").
const syscallRegs = "info registers rip rax orig_rax\necho @@\\n\n"

// nativeGDB runs bin under gdb on the host — the commands pre, then
// `run`, then script and a last `continue` — and returns its output: the
// reference a test compares reprise's stops with.
func nativeGDB(t *testing.T, bin, script string, pre ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "native.gdb")
	require.NoError(t, os.WriteFile(path, []byte(script+"delete\ncontinue\n"), 0o644))
	args := []string{"-nx", "-batch"}
	for _, c := range append(pre, "run") {
		args = append(args, "-ex", c)
	}
	out, err := exec.Command("gdb", append(args, "-x", path, bin)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// catchStop is a catch syscall stop's line: which stop, and (after the
// comma) where.
var catchStop = regexp.MustCompile(`Catchpoint \d+ \(((?:call to|returned from) syscall [\w-]+)\)(?:, (.*))?`)

// catchStops are the syscall stops in gdb's output text, each with where
// it stopped if where is set.
func catchStops(text string, where bool) []string {
	var out []string
	for _, m := range catchStop.FindAllStringSubmatch(text, -1) {
		if where {
			out = append(out, m[1]+", "+m[2])
		} else {
			out = append(out, m[1])
		}
	}
	return out
}

// stopRegs are a syscall stop's registers as syscallRegs printed them.
func stopRegs(block string) []string { return registerLines(block, "rip", "rax", "orig_rax") }

// eventNames is each of events (TestDebugCatchSigreturnAndExec's) up to
// its comma: which call, entry or return.
func eventNames(events []string) []string {
	var names []string
	for _, e := range events {
		names = append(names, strings.SplitN(e, ",", 2)[0])
	}
	return names
}

// reverseWatch is TestDebugReverseWatchFindsTheBug on a recording with a
// checkpoint every 10 ms or none: with them, replays again start at the
// last checkpoint before the place they go to, and a reverse continue
// that finds nothing after one looks again from the one before.
func reverseWatch(t *testing.T, bin string, checkpoints bool) {
	var flags []string
	if checkpoints {
		flags = []string{"--checkpoint-every", "10ms"}
	}
	dir, tp, r := recordTape(t, []string{bin}, flags...)
	require.Equal(t, "total -1 (want 5050)\n", r.stdout)
	if checkpoints {
		require.Regexp(t, `wrote ([2-9]|\d\d+) checkpoints`, r.stderr)
	}
	bug := overwriteLine(t, "total = -1;")
	out := debugScript(t, dir, tp, fmt.Sprintf("break overwrite.c:%d\n", overwriteLine(t, "printf("))+`continue
print total
watch total
reverse-continue
print total
info threads
reverse-continue
print total
print i
delete
continue
`)
	t.Log(out)
	for _, want := range []string{
		"$1 = -1", "Hardware watchpoint 2: total",
		"Old value = -1\nNew value = 5050\nclobber (arg=0x0) at ", fmt.Sprintf("overwrite.c:%d\n%d\t\ttotal = -1;", bug, bug), "$2 = 5050",
		"Old value = 5050\nNew value = 4950\nadder (arg=0x0) at ", "$3 = 4950", "$4 = 100",
		"total -1 (want 5050)", "exited normally", "reprise: replay matched: ",
	} {
		require.Contains(t, out, want)
	}
	require.Regexp(t, `(?m)^\* +\d+ +Thread 1\.3 \(overwrite-gcc\) clobber \(arg=0x0\)`, out, "the clobbering thread is the one stopped")
}

// TestDebugReverseWatchAfterACheckpoint goes back with a watchpoint to a
// write made right after the exit a checkpoint was taken at
// (internal/cprog/testdata/ckptwrite.c, recorded without timer ticks so
// that no interrupt follows that exit): the replay from the checkpoint
// has the write ahead of it before any exit, and finds it there, not the
// earlier write before the checkpoint.
func TestDebugReverseWatchAfterACheckpoint(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.Build(t, "gcc", "ckptwrite", "-g", "-O0")
	dir, tp, r := recordTape(t, []string{bin}, "--timer-hz", "0", "--checkpoint-every", "10ms")
	require.Equal(t, "total 42\n", r.stdout)
	require.Regexp(t, `wrote \d+ checkpoints?`, r.stderr)
	write := cprogLine(t, "ckptwrite.c", "total = 42;")
	out := debugScript(t, dir, tp, fmt.Sprintf("break ckptwrite.c:%d\ncontinue\nwatch total\nreverse-continue\nprint total\ndelete\ncontinue\n", cprogLine(t, "ckptwrite.c", "printf(")))
	require.Regexp(t, fmt.Sprintf(`Old value = 42\nNew value = 1\nmain \(\) at \S*ckptwrite.c:%d\n%d\t\ttotal = 42;`, write, write), out)
	require.Contains(t, out, "$1 = 1", out)
	require.Contains(t, out, "reprise: replay matched: ", out)
}

// TestGDBInterrupt stops a running replay from the protocol, as gdb's
// Ctrl-C does: an interrupt (0x03) while the program runs stops it at its
// next exit with SIGINT, where its registers read as any stop's; it then
// runs on to its end.
func TestGDBInterrupt(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, _ := recordTape(t, []string{cprog.Build(t, "gcc", "overwrite", "-g", "-O0", "-pthread")})
	_, gdb, wait := gdbListen(t, dir, tp)
	ask := noAck(t, gdb)
	require.NoError(t, gdb.Write([]byte("vCont;c")))
	require.NoError(t, gdb.Interrupt())
	stop, err := gdb.Read()
	require.NoError(t, err)
	require.Regexp(t, `^T02thread:p1\.[0-9a-f]+;`, string(stop), "stopped by the interrupt")
	require.Regexp(t, "^[0-9a-f]+$", ask("g"))
	require.Equal(t, "W00;process:1", ask("c"), "and on to the end")
	require.NoError(t, gdb.Write([]byte("k")))
	out := wait()
	require.Contains(t, out, "replay matched")
}

// gdbListen starts reprise replay --gdb-listen on tape and connects a
// protocol client to it (raw: its connection, to send what no client
// would); wait waits for the replay to end and returns what it printed.
func gdbListen(t *testing.T, dir, tp string) (raw net.Conn, client *rsp.Conn, wait func() string) {
	cmd := exec.Command(reprise, "replay", "-q", "--gdb-listen", "127.0.0.1:0", tp)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && lines.Scan() {
		if m := regexp.MustCompile(`waiting for gdb on (\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	require.NotEmpty(t, addr)
	var rest strings.Builder
	done := make(chan struct{})
	go func() {
		for lines.Scan() {
			rest.WriteString(lines.Text() + "\n")
		}
		close(done)
	}()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, rsp.NewConn(c), func() string {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("the replay did not end: %s", &rest)
		}
		require.NoError(t, cmd.Wait(), "%s", &rest)
		return rest.String()
	}
}

// symbolValue is the value of the symbol name in the ELF file bin.
func symbolValue(t *testing.T, bin, name string) uint64 {
	t.Helper()
	f, err := elf.Open(bin)
	require.NoError(t, err)
	syms, err := f.Symbols()
	require.NoError(t, f.Close())
	require.NoError(t, err)
	i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == name })
	require.GreaterOrEqual(t, i, 0, name)
	return syms[i].Value
}

// TestGDBInterruptsAReverseSearch gives up a reverse continue with gdb's
// interrupt: going back from the report after longwrite.c's loop with a
// watchpoint on what the loop writes steps the loop, which would take
// hours. The interrupt ends the search; the program is back where the
// command found it (the same registers), stopped by SIGINT, and runs on
// to its end.
func TestGDBInterruptsAReverseSearch(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.Build(t, "gcc", "longwrite", "-O0", "-no-pie")
	dir, tp, r := recordTape(t, []string{bin})
	require.Equal(t, "total 100000000\n", r.stdout)
	report, total := symbolValue(t, bin, "report"), symbolValue(t, bin, "total")

	raw, gdb, wait := gdbListen(t, dir, tp)
	ask := noAck(t, gdb)
	require.Equal(t, "OK", ask(fmt.Sprintf("Z0,%x,1", report)))
	require.Regexp(t, `^T05`, ask("vCont;c"), "at report")
	regs := ask("g")
	require.Equal(t, "OK", ask(fmt.Sprintf("Z2,%x,8", total)))
	require.NoError(t, gdb.Write([]byte("bc")))
	time.Sleep(2 * time.Second) // into the loop's steps by now
	require.NoError(t, gdb.Interrupt())
	require.NoError(t, raw.SetReadDeadline(time.Now().Add(2*time.Minute))) // not hours
	stop, err := gdb.Read()
	require.NoError(t, err, "the search ends at the interrupt")
	require.NoError(t, raw.SetReadDeadline(time.Time{}))
	require.Regexp(t, `^T02thread:p1\.[0-9a-f]+;`, string(stop), "stopped by the interrupt")
	require.Equal(t, regs, ask("g"), "back where the reverse continue began")
	require.Equal(t, "OK", ask(fmt.Sprintf("z2,%x,8", total)))
	require.Equal(t, "OK", ask(fmt.Sprintf("z0,%x,1", report)))
	require.Equal(t, "W00;process:1", ask("vCont;c"), "and on to the end")
	require.NoError(t, gdb.Write([]byte("k")))
	require.Contains(t, wait(), "replay matched")
}

// A step asked of a thread that does not run before the program stops
// elsewhere ends unseen when the program is continued, as a ptraced
// thread's does: in overwrite.c main waits in pthread_join while adder
// calls add; a client stopped at add steps main, stops at add again
// (adder), removes the breakpoint and continues — and the program runs to
// its end, with no stop in main.
func TestGDBStepNotTakenEndsOnContinue(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.Build(t, "gcc", "overwrite", "-g", "-O0", "-pthread")
	dir, tp, r := recordTape(t, []string{bin})
	add := fmt.Sprintf("%x", 0x555555554000+symbolValue(t, bin, "add")) // the personality's PIE base

	_, gdb, wait := gdbListen(t, dir, tp)
	ask := noAck(t, gdb)
	ask("qSupported:multiprocess+")
	require.Equal(t, "OK", ask("Z0,"+add+",1"))
	require.Contains(t, ask("vCont;c"), "thread:p1.2;", "adder at add")
	require.Contains(t, ask("vCont;s:p1.1"), "thread:p1.2;", "adder at add again, main not run")
	require.Equal(t, "OK", ask("z0,"+add+",1"))
	end := ask("vCont;c")
	require.True(t, strings.HasPrefix(end, "W00"), "the end, no stop in main: %q", end)
	require.Equal(t, "OK", ask("D"))
	require.Contains(t, r.stdout, "total")
	require.NotContains(t, wait(), "panic")
}

// A Go program under gdb (internal/cprog/testdata/goroutines: goroutines
// on several threads, preempted by the runtime's signals): a breakpoint
// on a function, bt to main.main, the runtime's threads in info threads,
// and the program's own output at the end, the replay matching.
func TestDebugGoProgram(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.BuildGo(t, "goroutines")})
	require.Contains(t, r.stdout, "rounds 200 checksum ")
	out := debugScript(t, dir, tp, `break sync.(*WaitGroup).Wait
continue
bt 3
info threads
delete
continue
`)
	t.Log(out)
	require.Regexp(t, `Breakpoint 1, sync\.\(\*WaitGroup\)\.Wait`, out)
	require.Regexp(t, `#1 +0x[0-9a-f]+ in main\.main \(\)`, out)
	threads := regexp.MustCompile(`(?m)^\*? +\d+ +Thread 1\.\d+ \(goroutines\)`).FindAllString(out, -1)
	require.GreaterOrEqual(t, len(threads), 3, "the runtime's threads: %s", out)
	require.Contains(t, out, r.stdout)
	require.Contains(t, out, "[Inferior 1 (process 1) exited normally]")
	require.Contains(t, out, "reprise: replay matched: ")
}

// TestDebugStaticMusl debugs a static musl program: a breakpoint on its
// function, bt to main, finish with its value, and the end.
func TestDebugStaticMusl(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, _ := recordTape(t, []string{cprog.Build(t, "musl-gcc", "spin", "-static", "-g", "-O0", "-DFN=spin_musl"), "1000"})
	out := debugScript(t, dir, tp, `break spin_musl
continue
bt
print n
finish
continue
`)
	t.Log(out)
	for _, want := range []string{"Breakpoint 1, spin_musl (n=1000)", "in main (", "$1 = 1000",
		"Value returned is $2 = 499500", "499500\n", "exited normally", "reprise: replay matched: "} {
		require.Contains(t, out, want)
	}
}

// TestGDBListenHostileClient feeds reprise replay --gdb-listen what a
// hostile client sends — malformed packets, reads far out of range,
// breakpoints nowhere, unknown threads, writes, a packet with a bad
// checksum — and checks each answer; then a packet larger than any
// allowed, on which the server drops the connection: the replay ends with
// a notice, nothing crashes.
func TestGDBListenHostileClient(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, _ := recordTape(t, []string{cprog.Build(t, "gcc", "spin", "-O1"), "1000"})

	raw, gdb, wait := gdbListen(t, dir, tp)
	ask := noAck(t, gdb)
	for _, q := range []struct{ packet, want string }{
		{"m0,10", "E0e"}, {"mffffffffffffffff,ffff", "E16"}, {"m12,zz", "E16"}, {"m,", "E16"},
		{"Z0,0,1", "E0e"}, {"z0,dead,1", "OK"}, {"Z2,1000,8", "E0e"}, {"Z3,1000,8", "E0e"}, {"Z2,7ffff000,100000", "E0e"},
		{"Hgp99.99", "E03"}, {"g", "E03"}, {"m1000,10", "E0e"}, {"Z0,1000,1", "E0e"}, {"z0,1000,1", "OK"}, {"Hgp0.0", "OK"}, {"Tp5.5", "E03"}, {"vCont;s:p99.99", "E03"}, {"qRcmd,zz", "E16"},
		{"G00", "E.reprise: a replay cannot change its past"}, {"M1000,2:abcd", "E.reprise: a replay cannot change its past"},
		{"qXfer:features:read:target.xml:ffffffffffffff,ffff", "l"}, {"qXfer:exec-file:read:zz:0,10", "E16"},
		{"qXfer:nonsense:read::0,10", ""}, {"vMustReplyEmpty", ""},
		// Host I/O: no such process, a file the program does not map, a
		// write, a descriptor never opened, a link that is none, bad hex;
		// then /proc/1/maps, open, read past its end, closed twice.
		{"vFile:open:" + hex.EncodeToString([]byte("/proc/99/maps")) + ",0,0", "F-1,2"},
		{"vFile:open:" + hex.EncodeToString([]byte("/etc/passwd")) + ",0,0", "F-1,2"},
		{"vFile:open:" + hex.EncodeToString([]byte("/proc/1/maps")) + ",1,0", "F-1,d"},
		{"vFile:pread:7,10,0", "F-1,9"}, {"vFile:readlink:" + hex.EncodeToString([]byte("/proc/1/maps")), "F-1,16"},
		{"vFile:open:zz,0,0", "E16"},
		{"vFile:open:" + hex.EncodeToString([]byte("/proc/1/maps")) + ",0,0", "F0"}, {"vFile:pread:0,10,100000", "F0;"},
		{"vFile:close:0", "F0"}, {"vFile:close:0", "F-1,9"},
	} {
		require.Equal(t, q.want, ask(q.packet), q.packet)
	}
	require.True(t, strings.HasSuffix(ask("bc"), ";replaylog:begin;"), "reverse at the start: the history's beginning")
	auxv := ask("qXfer:auxv:read::0,1000")
	require.True(t, strings.HasPrefix(auxv, "l") && len(auxv)%16 == 1 && strings.HasSuffix(auxv, strings.Repeat("\x00", 16)), "the auxiliary vector, to AT_NULL: %q", auxv)
	require.Regexp(t, "^[0-9a-f]+$", ask("g"))
	when, err := hex.DecodeString(ask("qRcmd," + hex.EncodeToString([]byte("when"))))
	require.NoError(t, err)
	require.Regexp(t, "^position [0-9]+:[0-9]+ ", string(when))
	_, err = raw.Write([]byte("$m0,4#00")) // a bad checksum, not checked once acks are off: read as m0,4
	require.NoError(t, err)
	b, err := gdb.Read()
	require.NoError(t, err)
	require.Equal(t, "E0e", string(b))
	_, err = raw.Write([]byte("$" + strings.Repeat("A", 200<<10) + "#00")) // past the largest packet
	require.NoError(t, err)
	rest := wait()
	require.Contains(t, rest, "reprise: notice: gdb client: ")
	require.NotContains(t, rest, "panic")
}

// BenchmarkDebug measures, side by side on one recording of overwrite.c,
// gdb's single-step rate through the server (stepi 2000, each a round
// trip: vCont;s, the stop, gdb's register reads), the watchpoint's
// stepping rate inside the replay (every thread stepped and compared
// after each instruction, from adder's start to the clobbering write),
// each against the same session without the steps, and what a
// reverse-continue from the end to the last write of a watched value
// adds to a session that stops at the end.
//
//	go test -run '^$' -bench 'Debug$' -benchtime 3x ./cmd/reprise
func BenchmarkDebug(b *testing.B) {
	kvmtest.Require(b)
	kvmtest.RequireTools(b, "gdb")
	dir, tp, _ := recordTape(b, []string{cprog.Build(b, "gcc", "overwrite", "-g", "-O0", "-pthread")})
	session := func(script string) (time.Duration, int) {
		path := filepath.Join(dir, "bench.gdb")
		require.NoError(b, os.WriteFile(path, []byte(script), 0o644))
		start := time.Now()
		r := runCLIIn(b, dir, "debug", tp, "--", "-nx", "-batch", "-x", path)
		took := time.Since(start)
		require.Zero(b, r.code, r.stderr)
		m := regexp.MustCompile(`replay matched: \d+ events, (\d+) exits`).FindStringSubmatch(r.stderr)
		require.NotNil(b, m, r.stderr)
		exits, _ := strconv.Atoi(m[1])
		return took, exits
	}
	const steps = 2000
	end := fmt.Sprintf("break overwrite.c:%d\ncontinue\n", overwriteLine(b, "printf("))
	var stepRate, watchRate float64
	var reverse time.Duration
	for range b.N {
		base, baseExits := session("break adder\ncontinue\ndelete\ncontinue\n")
		stepped, _ := session(fmt.Sprintf("break adder\ncontinue\ndelete\nstepi %d\ncontinue\n", steps))
		watched, watchExits := session("break adder\ncontinue\ndelete\nwatch total if total < 0\ncontinue\ndelete\ncontinue\n")
		atEnd, _ := session(end + "continue\n")
		back, _ := session(end + "watch total\nreverse-continue\ndelete\ncontinue\n")
		stepRate = steps / (stepped - base).Seconds()
		watchRate = float64(watchExits-baseExits) / (watched - base).Seconds()
		reverse = back - atEnd
		b.Logf("session %v; stepi %d: +%v (%.0f steps/s); watch: %d steps, +%v (%.0f steps/s); reverse-continue to the last write: +%v",
			base.Round(time.Millisecond), steps, (stepped - base).Round(time.Millisecond), stepRate, watchExits-baseExits, (watched - base).Round(time.Millisecond), watchRate, reverse.Round(time.Millisecond))
	}
	b.ReportMetric(stepRate, "gdb-steps/s")
	b.ReportMetric(watchRate, "watch-steps/s")
	b.ReportMetric(reverse.Seconds(), "reverse-watch-s")
}

// TestDebugSeek jumps about a replay with monitor seek (reprise debug's
// seek command): to an exit count, to a record time, to the history's
// start, past the recording's end (refused: the program stays where it
// was), and back to a place monitor checkpoint saved, where gdb sees the
// same registers and memory as when it was saved. On a recording without
// checkpoints and on one with one every 10 ms, where a jump starts from
// the last checkpoint before its goal; two sessions print the same.
func TestDebugSeek(t *testing.T) {
	kvmtest.Require(t)
	bin := cprog.Build(t, "gcc", "overwrite", "-g", "-O0", "-pthread")
	for _, checkpoints := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoints=%v", checkpoints), func(t *testing.T) {
			var flags []string
			if checkpoints {
				flags = []string{"--checkpoint-every", "10ms"}
			}
			dir, tp, _ := recordTape(t, []string{bin}, flags...)
			when := regexp.MustCompile(`position (\d+):0 \(exit (\d+)\), record time ([^,]+), thread (\d+) of process (\d+)`)
			// Where the program stands at its printf, and the start.
			atEnd := fmt.Sprintf("break overwrite.c:%d\ncontinue\n", overwriteLine(t, "printf("))
			out := debugScript(t, dir, tp, "monitor when\n"+atEnd+"monitor when\n")
			places := when.FindAllStringSubmatch(out, -1)
			require.Len(t, places, 2, out)
			start, end := places[0], places[1]
			endExit, err := strconv.Atoi(end[1])
			require.NoError(t, err)
			endTime, err := time.ParseDuration(end[3])
			require.NoError(t, err)
			require.Greater(t, endExit, 10, out)
			mid, half := endExit/2, endTime/2/time.Microsecond*time.Microsecond
			script := atEnd + fmt.Sprintf(`monitor checkpoint
info registers rip rsp
print total
seek %d
info registers rip
seek %dus
seek 0
seek %d
monitor when
seek #1
info registers rip rsp
print total
frame
monitor checkpoints
seek #2
seek %d
delete
continue
`, mid, half.Microseconds(), endExit+1000000, mid)
			out = debugScript(t, dir, tp, script)
			t.Log(out)
			places = when.FindAllStringSubmatch(out, -1)
			require.Len(t, places, 9, out)
			require.Equal(t, end[0], places[0][0], "the checkpoint: where the program stands")
			require.Equal(t, strconv.Itoa(mid), places[1][1], "seek to an exit count")
			byTime, err := time.ParseDuration(places[2][3])
			require.NoError(t, err)
			require.GreaterOrEqual(t, byTime, half, "seek to a record time: the first exit at or after it")
			require.Less(t, byTime, endTime)
			require.Equal(t, start[0], places[3][0], "seek 0: the history's start")
			require.Contains(t, out, "monitor seek: the recording ends first, at exit ")
			require.Equal(t, start[0], places[4][0], "a seek past the end leaves the program where it was")
			require.Equal(t, start[0], places[5][0])
			require.Equal(t, end[0], places[6][0], "seek #1: back where the checkpoint was saved")
			require.Equal(t, end[0], places[7][0], "monitor checkpoints")
			require.Equal(t, places[1][0], places[8][0], "the same exit twice: the same place")
			regs := regexp.MustCompile(`(?m)^(rip|rsp) +0x[0-9a-f]+ .*$`).FindAllString(out, -1)
			require.Len(t, regs, 5, out)
			require.Equal(t, regs[:2], regs[3:5], "the checkpoint's registers")
			require.Equal(t, 2, strings.Count(out, " = -1\n"), "total at the checkpoint, twice")
			require.Contains(t, out, fmt.Sprintf("overwrite.c:%d", overwriteLine(t, "printf(")))
			require.Contains(t, out, "monitor seek: no checkpoint #2 (1 saved)")
			require.NotContains(t, out, "Ignoring packet error", "gdb waited for a seek's answer without news")
			require.Contains(t, out, "total -1 (want 5050)")
			require.Contains(t, out, "reprise: replay matched: ")
			// Which checkpoints a session takes, and so where its replays
			// start and how many exits the last one makes, the host's
			// timing decides (KeepCheckpoint); the rest is the same.
			timed := regexp.MustCompile(`(?m)^machine checkpoints: .*$|, \d+ exits`)
			require.Equal(t, timed.ReplaceAllString(out, ""), timed.ReplaceAllString(debugScript(t, dir, tp, script), ""), "a second session")
		})
	}
}

// BenchmarkDebugReverseLong measures the reverse figure: on a
// minute-long recording (internal/cprog/testdata/longrun.c: a second's
// sleep and a little work, sixty times; marker() half a minute before
// the end), what a reverse-continue from finish() back to marker() adds
// to a session that stops at finish(), recorded without checkpoints and
// with one every 5 s. REPRISE_LONGRUN_ROUNDS shortens the minute.
//
//	go test -run '^$' -bench DebugReverseLong -benchtime 3x ./cmd/reprise
func BenchmarkDebugReverseLong(b *testing.B) {
	kvmtest.Require(b)
	kvmtest.RequireTools(b, "gdb")
	rounds := cmp.Or(os.Getenv("REPRISE_LONGRUN_ROUNDS"), "60")
	bin := cprog.Build(b, "gcc", "longrun", "-g", "-O1")
	type recording struct{ name, dir, tape string }
	var recs []recording
	for _, flags := range [][]string{nil, {"--checkpoint-every", "5s"}} {
		dir, tp, r := recordTape(b, []string{bin, rounds}, flags...)
		require.Contains(b, r.stdout, "rounds "+rounds+" ")
		name := "without checkpoints"
		if flags != nil {
			name = "with " + strings.Join(flags, " ")
		}
		recs = append(recs, recording{name, dir, tp})
	}
	session := func(rec recording, script string) (time.Duration, string) {
		path := filepath.Join(rec.dir, "bench.gdb")
		require.NoError(b, os.WriteFile(path, []byte(script), 0o644))
		start := time.Now()
		r := runCLIIn(b, rec.dir, "debug", rec.tape, "--", "-nx", "-batch", "-x", path)
		took := time.Since(start)
		require.Zero(b, r.code, r.stderr)
		require.Contains(b, r.stderr, "replay matched")
		return took, r.stdout + r.stderr // gdb writes a monitor command's output to stderr
	}
	const atEnd = "break finish\ncontinue\n"
	for range b.N {
		for _, rec := range recs {
			base, _ := session(rec, atEnd+"delete\ncontinue\n")
			const back = "break marker\nreverse-continue\nmonitor when\n"
			once, out := session(rec, atEnd+back+"delete\ncontinue\n")
			require.Contains(b, out, "marker (round=", out)
			when := regexp.MustCompile(`record time ([^,]+),`).FindStringSubmatch(out)
			require.NotNil(b, when, out)
			// Again from finish(): the checkpoints the session took the
			// first time serve the second.
			twice, out := session(rec, atEnd+back+"delete\n"+atEnd+back+"monitor checkpoints\ndelete\ncontinue\n")
			require.Equal(b, 2, strings.Count(out, "marker (round="), out)
			taken := regexp.MustCompile(`(\d+) taken by this session`).FindStringSubmatch(out)
			require.NotNil(b, taken, out)
			b.Logf("recording %s: session to finish() %v; reverse-continue to marker() (record time %s) adds %v; back to finish() and a second reverse-continue %v (%s checkpoints taken by the session)",
				rec.name, base.Round(time.Millisecond), when[1], (once - base).Round(time.Millisecond), (twice - once).Round(time.Millisecond), taken[1])
		}
	}
}

// TestDebugTakesCheckpointsAsItGoes debugs longrun.c
// (internal/cprog/testdata) over six rounds of work and a second's sleep,
// recorded without a checkpoint file: the replays take checkpoints of the
// session's own as they go, and a reverse-continue from finish() to
// marker() (in round 3) starts from one of them and stops where a
// continue from the start to marker() stopped, with the same registers.
// The replay continued to the end matches the recording.
func TestDebugTakesCheckpointsAsItGoes(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "longrun", "-g", "-O1"), "6"}, "--mem", "64M")
	require.Contains(t, r.stdout, "rounds 6 ")
	const regs = "info registers rip rsp rdi eflags\necho @@\\n\n"
	out := debugScript(t, dir, tp, "break marker\ncontinue\n"+regs+
		"delete\nbreak finish\ncontinue\nmonitor checkpoints\nbreak marker\nreverse-continue\n"+regs+
		"monitor checkpoints\ndelete\ncontinue\n")
	require.Equal(t, 2, strings.Count(out, "marker (round=round@entry=3)"), out)
	blocks := strings.Split(out, "@@\n")
	require.Len(t, blocks, 3, out)
	forward, back := registerLines(blocks[0], "rip", "rsp", "rdi", "eflags"), registerLines(blocks[1], "rip", "rsp", "rdi", "eflags")
	require.Len(t, forward, 4, blocks[0])
	require.Equal(t, forward, back, "marker() reached backwards as forwards")
	taken := regexp.MustCompile(`machine checkpoints: 0 from the tape's checkpoint file, (\d+) taken by this session; replays started from boot (\d+) times, from the tape's checkpoints 0, from the session's (\d+)`).FindAllStringSubmatch(out, -1)
	require.Len(t, taken, 2, out)
	require.NotEqual(t, "0", taken[0][1], "checkpoints taken going to finish()")
	require.NotEqual(t, "0", taken[1][3], "the reverse-continue started from one")
	require.Contains(t, out, "rounds 6 ")
	require.Contains(t, out, "reprise: replay matched: ")
}

// registerLines are the lines of gdb's info registers in out for the
// registers named.
func registerLines(out string, names ...string) []string {
	var regs []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && strings.HasPrefix(f[1], "0x") && slices.Contains(names, f[0]) {
			regs = append(regs, strings.Join(f, " "))
		}
	}
	return regs
}

// TestDebugReverseStepAcrossAFault steps back across an exit that is not
// a system call's: in internal/cprog/testdata/cow.c the parent's store
// after fork faults (copy on write), and runs again once the kernel has
// copied the page, so the stretch after the fault begins at the store.
// reverse-stepi from after the store goes to the store run again;
// another goes across the fault, past the attempt that faulted, to the
// jne before it; stepping forwards again arrives at the same places with
// the same registers.
func TestDebugReverseStepAcrossAFault(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "cow", "-g", "-O0")})
	require.Equal(t, "value 42\n", r.stdout)
	src, err := os.ReadFile(filepath.Join("..", "..", "internal", "cprog", "testdata", "cow.c"))
	require.NoError(t, err)
	line := slices.IndexFunc(strings.Split(string(src), "\n"), func(l string) bool { return strings.Contains(l, "value = 42;") }) + 1
	const regs = "info registers rip rsp rbp rax rcx rdx rsi rdi r11 eflags\n"
	out := debugScript(t, dir, tp, fmt.Sprintf("break cow.c:%d\ncontinue\n", line)+regs+`print value
delete
stepi
print value
info registers rip
reverse-stepi
info registers rip
print value
reverse-stepi
`+regs+`stepi
`+regs+`stepi
info registers rip
print value
continue
`)
	t.Log(out)
	rip := regexp.MustCompile(`(?m)^rip +0x[0-9a-f]+ +0x[0-9a-f]+ <(main\+\d+)>$`)
	var at []string
	for _, m := range rip.FindAllStringSubmatch(out, -1) {
		at = append(at, m[1])
	}
	require.Equal(t, []string{"main+32", "main+43", "main+32", "main+20", "main+32", "main+43"}, at,
		"the store, after it, the store again (retried), the jne before it, forwards to the store and past it")
	blocks := regexp.MustCompile(`(?m)^rip [^\n]*\n(?:[a-z0-9]+ +[^\n]*\n){9}`).FindAllString(out, -1)
	require.Len(t, blocks, 3, out)
	require.Equal(t, blocks[0], blocks[2], "at the store before it faults, forwards and after stepping back")
	require.Equal(t, []string{"$1 = 1", "$2 = 42", "$3 = 1", "$4 = 42"}, regexp.MustCompile(`\$\d+ = \d+`).FindAllString(out, -1))
	require.NotContains(t, out, "cannot step back")
	require.Contains(t, out, "[Detaching after fork from child process 2]", "gdb told of the fork, whichever process ran first after it")
	require.Contains(t, out, "value 42")
	require.Contains(t, out, "reprise: replay matched: ")
}

// An RDTSC is emulated (internal/cprog/testdata/tsc.c): stepi over it
// stops right after it, as natively, not one instruction later; and
// reverse-stepi from there goes back across the emulation's exit to it,
// from where stepi arrives with the same registers.
func TestDebugStepsAcrossAnRDTSC(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "tsc", "-g", "-O0")})
	require.Equal(t, "forwards 1\n", r.stdout)
	const regs = "info registers rip rax rdx\n"
	out := debugScript(t, dir, tp, "break *second_rdtsc\ncontinue\n"+regs+"stepi\n"+regs+"reverse-stepi\n"+regs+"stepi\n"+regs+"continue\n")
	t.Log(out)
	rip := regexp.MustCompile(`(?m)^rip +0x([0-9a-f]+) `)
	var at []uint64
	for _, m := range rip.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseUint(m[1], 16, 64)
		require.NoError(t, err)
		at = append(at, v)
	}
	require.Len(t, at, 4, out)
	require.Equal(t, []uint64{at[0], at[0] + 2, at[0], at[0] + 2}, at, "the RDTSC, after it, back at it, after it again")
	blocks := regexp.MustCompile(`(?m)^rip [^\n]*\n(?:[a-z0-9]+ +[^\n]*\n){2}`).FindAllString(out, -1)
	require.Len(t, blocks, 4, out)
	require.Equal(t, blocks[1], blocks[3], "the counter's value, the same both times")
	require.Equal(t, blocks[0], blocks[2], "before it, the same both times")
	rax := regexp.MustCompile(`(?m)^rax +(0x[0-9a-f]+)`).FindAllStringSubmatch(out, -1)
	require.NotEqual(t, rax[0][1], rax[1][1], "the counter's value, in rax after it")
	require.NotContains(t, out, "cannot step back")
	require.Contains(t, out, "forwards 1")
	require.Contains(t, out, "reprise: replay matched: ")
}

// A breakpoint on a SYSCALL that ends a process stays for the others that
// share the code (internal/cprog/testdata/sharedexit.c): the child, which
// gdb does not follow, meets the parent's int3 first and is stepped over
// it into its exit; the parent stops there after.
func TestDebugBreakpointOnAnExitingSyscall(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "sharedexit", "-g", "-O0")})
	require.Equal(t, "child ended 3\n", r.stdout)
	out := debugScript(t, dir, tp, `break *exit_syscall
continue
info registers rip rax rdi
continue
`)
	t.Log(out)
	require.Contains(t, out, "[Detaching after fork from child process 2]")
	require.Regexp(t, `Breakpoint 1, 0x[0-9a-f]+ in exit_syscall \(\)`, out, "the parent's stop, after the child went through")
	require.Regexp(t, `(?m)^rdi +0x0 +0$`, out, "the parent's exit status, not the child's 3")
	require.Contains(t, out, "child ended 3")
	require.Contains(t, out, "[Inferior 1 (process 1) exited normally]")
	require.Contains(t, out, "reprise: replay matched: ")
}

// With follow-fork-mode child gdb follows a fork's child and detaches
// from the parent (internal/cprog/testdata/cow.c): it stops in the child
// only, at its _exit, and then at the child's end, which gdb is told of
// as gdbserver tells it — never of the parent it left.
func TestDebugFollowsTheChild(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "cow", "-g", "-O0")})
	require.Equal(t, "value 42\n", r.stdout)
	out := debugScript(t, dir, tp, `set follow-fork-mode child
break _exit
continue
info inferiors
bt 2
continue
`)
	t.Log(out)
	require.Contains(t, out, "[Detaching after fork from parent process 1]")
	require.Regexp(t, `Thread 2\.1 hit Breakpoint 1\.\d, (__GI__exit|_exit) \(status=0\)`, out)
	require.Regexp(t, `(?m)^\*\s+2\s+process 2\s`, out, "the child, followed")
	require.Regexp(t, `#1 +0x[0-9a-f]+ in main \(\) at .*cow\.c:`, out)
	require.Contains(t, out, "[Inferior 2 (process 2) exited normally]")
	require.NotContains(t, out, "internal-error")
}

// Going back before the fork of a child gdb keeps tells gdb the child is
// gone (gdb would keep its last thread, whose registers do not exist
// there), and going forwards again tells it of the fork anew: the child's
// breakpoint is met again, in the image its exec gives it.
func TestDebugReverseBeforeAFork(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "forkexec", "-g", "-O0")})
	require.Equal(t, "child 42\nparent saw 0\n", r.stdout)
	out := debugScript(t, dir, tp, `set detach-on-fork off
break child_work
continue
reverse-continue
inferior 1
info threads
continue
bt 2
continue
inferior 1
continue
`)
	t.Log(out)
	require.Contains(t, out, "[Inferior 2 (process 2) exited normally]", "going back before its fork: the child gone")
	hits := regexp.MustCompile(`Thread \d+\.1 hit Breakpoint 1\.\d+, child_work \(n=6\)`).FindAllString(out, -1)
	require.Len(t, hits, 2, "the child's breakpoint, before going back and after: %s", out)
	back := out[strings.Index(out, "[Inferior 2 (process 2) exited normally]"):]
	end := strings.Index(back, "[New inferior ")
	require.GreaterOrEqual(t, end, 0, "the fork told again: %s", back)
	back = back[:end]
	require.Len(t, regexp.MustCompile(`(?m)^\*? +\d+\.\d+ +Thread `).FindAllString(back, -1), 1, "back before the fork, one thread: %s", back)
	require.NotContains(t, out, "Could not read registers")
	require.Regexp(t, `#1 +0x[0-9a-f]+ in main \(argc=2,`, out)
	require.Contains(t, out, "parent saw 0")
	require.Contains(t, out, "[Inferior 1 (process 1) exited normally]")
	require.Contains(t, out, "reprise: replay matched: ")
}

// gdb follows a fork and an exec as under Linux: with detach-on-fork off
// it keeps the child (internal/cprog/testdata/forkexec.c), whose exec
// stops at gdb's catchpoint and gives it a new image in which gdb sets
// its breakpoint again; the breakpoint the fork copied goes with the
// image exec replaced, so the replay still matches.
func TestDebugFollowsForkAndExec(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "forkexec", "-g", "-O0")})
	require.Equal(t, "child 42\nparent saw 0\n", r.stdout)
	out := debugScript(t, dir, tp, `set detach-on-fork off
break child_work
catch exec
continue
continue
info inferiors
bt
info threads
continue
inferior 1
continue
`)
	t.Log(out)
	require.Contains(t, out, "process 2 is executing new program: ")
	require.Regexp(t, `Thread 2\.1 (?:"[^"]*" )?hit Catchpoint 2 \(exec'd .*/forkexec-gcc\)`, out)
	require.Regexp(t, `Thread 2\.1 hit Breakpoint 1\.2, child_work \(n=6\)`, out, "the child's breakpoint, in its new image")
	require.Regexp(t, `(?m)^\s+1\s+process 1\s.*forkexec`, out)
	require.Regexp(t, `(?m)^\*\s+2\s+process 2\s.*forkexec`, out, "both processes, the child's current")
	require.Regexp(t, `#1 +0x[0-9a-f]+ in main \(argc=2,`, out)
	require.Regexp(t, `(?m)^\s+1\.1\s+Thread 1\.1 .*wait4`, out, "info threads: the parent, waiting")
	require.Regexp(t, `(?m)^\*\s+2\.1\s+Thread 2\.2 .*child_work`, out, "and the child")
	require.Contains(t, out, "child 42")
	require.Contains(t, out, "[Inferior 2 (process 2) exited normally]", "the child's end, a stop")
	require.Contains(t, out, "parent saw 0")
	require.Contains(t, out, "[Inferior 1 (process 1) exited normally]")
	require.Contains(t, out, "reprise: replay matched: ")
}

// reverse-stepi at a signal handler's first instruction goes back to the
// place the signal interrupted: raise's SYSCALL, whose return delivered
// SIGUSR1, and the store that faulted (SIGSEGV); stepi from there enters
// the handler again, with the registers it had.
func TestDebugReverseStepOutOfASignal(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{cprog.Build(t, "gcc", "signals_entry", "-g", "-O0")})
	require.Equal(t, "usr1 1 segv 1\n", r.stdout)
	const regs = "info registers rip rsp rdi rsi rdx rax\n"
	out := debugScript(t, dir, tp, "break *usr1\nbreak *segv\ncontinue\n"+regs+`reverse-stepi
x/i $pc
stepi
`+regs+`continue
`+regs+`reverse-stepi
x/i $pc
info symbol $pc
stepi
`+regs+`delete
continue
`)
	t.Log(out)
	rip := regexp.MustCompile(`(?m)^rip +0x[0-9a-f]+ +0x[0-9a-f]+ <(\w+)\+?\d*>$`)
	var at []string
	for _, m := range rip.FindAllStringSubmatch(out, -1) {
		at = append(at, m[1])
	}
	require.Equal(t, []string{"usr1", "usr1", "segv", "segv"}, at, "each handler's entry, before and after stepping back and forth")
	insns := regexp.MustCompile(`(?m)^=> 0x[0-9a-f]+ <([^>]+)>:\s+(\S+)`).FindAllStringSubmatch(out, -1)
	require.Len(t, insns, 2, out)
	require.Equal(t, "syscall", insns[0][2], "SIGUSR1 came on raise's system call's return: %s", insns[0][1])
	require.True(t, strings.HasPrefix(insns[1][1], "main+"), "SIGSEGV came at main's store: %s", insns[1][1])
	require.Equal(t, "movl", insns[1][2], out)
	blocks := regexp.MustCompile(`(?m)^rip [^\n]*\n(?:[a-z0-9]+ +[^\n]*\n){5}`).FindAllString(out, -1)
	require.Len(t, blocks, 4, out)
	require.Equal(t, blocks[0], blocks[1], "SIGUSR1's handler entered again as it was")
	require.Equal(t, blocks[2], blocks[3], "SIGSEGV's handler entered again as it was")
	require.NotContains(t, out, "cannot step back")
	require.Contains(t, out, "usr1 1 segv 1")
	require.Contains(t, out, "reprise: replay matched: ")
}

// TestDebugKitWatch watches a kit guest's memory in gdb: stopped in one
// of syn_cont's workers holding its level-2 lock, `watch -l` on that
// lock's counter and continue stop right after the worker's increment
// (guest/workloads/syn_cont.c: "*c2 = v + 1;"), in the same worker — the
// lock keeps the others out — with the old and new values; going back
// with it set is refused, saying why; continued, the replay matches.
func TestDebugKitWatch(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{"syn_cont", "iters=1", "work=200"})
	src, err := os.ReadFile(filepath.Join("..", "..", "guest", "workloads", "syn_cont.c"))
	require.NoError(t, err)
	lines := strings.Split(string(src), "\n")
	read := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "v = *c2;") }) + 1
	write := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "*c2 = v + 1;") }) + 1
	out := debugScript(t, dir, tp, fmt.Sprintf("break syn_cont.c:%d\ncontinue\n", read)+`thread
print *c2
delete
watch -l *c2
continue
thread
print *c2
reverse-continue
delete
continue
`)
	require.Contains(t, out, fmt.Sprintf("syn_cont.c:%d", read), out)
	threads := regexp.MustCompile(`Current thread is (\S+)`).FindAllStringSubmatch(out, -1)
	require.Len(t, threads, 2, out)
	require.Equal(t, threads[0][1], threads[1][1], "stopped in the worker that holds the lock")
	require.Contains(t, out, "$1 = 0", out)
	require.Contains(t, out, "Hardware watchpoint 2: -location *c2", out)
	require.Contains(t, out, "Old value = 0", out)
	require.Contains(t, out, "New value = 1", out)
	require.Contains(t, out, "$2 = 1", out)
	require.Regexp(t, fmt.Sprintf(`worker \(arg=[^)]*\) at \S*syn_cont.c:(%d|%d)`, write, write+1), out)
	require.Contains(t, out, "a kit guest's watchpoints are served forwards only", out)
	require.Contains(t, out, r.stdout)
	require.Contains(t, out, "reprise: replay matched: ")
}

// TestDebugKitGuest debugs a kit guest's replay (syn_cont: sixteen worker
// threads the kit's kernel switches between with no exit) in gdb, with
// the kit's DWARF: a breakpoint on a function, bt into the library's
// thread entry, info threads, print; stepi and reverse-stepi (software
// steps: the kit's kernel has no #DB for the VMM) arriving at the same
// places both ways — back across the thread's first arrival too, to its
// birth; a continue to the next hit in another thread and a
// reverse-continue back to the first; next, a temporary breakpoint and
// finish; a step of another thread, from where it stood, and back; then
// the run to the end, matching the recording.
func TestDebugKitGuest(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, r := recordTape(t, []string{"syn_cont", "iters=1", "work=2000"})
	recorded := r.stdout
	script := `break worker
continue
bt
info threads
print arg
delete
stepi
stepi
info registers rip
reverse-stepi
reverse-stepi
info registers rip
stepi
stepi
info registers rip
reverse-stepi
reverse-stepi
reverse-stepi
x/1i $pc
stepi
info registers rip
break worker
continue
print arg
reverse-continue
print arg
info registers rip
next
next
tbreak comp
continue
finish
delete
thread 1
info registers rip
stepi
info registers rip
reverse-stepi
info registers rip
stepi
info registers rip
continue
`
	out := debugScript(t, dir, tp, script)
	t.Log(out)
	// Which worker the recorded schedule ran first is the recording's.
	first := regexp.MustCompile(`hit Breakpoint 1, worker \(arg=(0x[0-9a-f]+)`).FindStringSubmatch(out)
	require.NotNil(t, first, out)
	arg := first[1]
	for _, want := range []string{
		"at workloads/syn_cont.c:", "struct mutex *m1 = &level1[id / 2]", "in reprise_thread_entry (",
		"$1 = (void *) " + arg, "<reprise_thread_entry+", "$3 = (void *) " + arg,
		"Temporary breakpoint 3, comp (", "in worker (arg=", "Value returned is $4 = ",
		recorded, "[Inferior 1 (process 1) exited normally]", "reprise: replay matched: ",
	} {
		require.Contains(t, out, want)
	}
	require.Regexp(t, `\$2 = \(void \*\) 0x[0-9a-f]+`, out)
	require.NotContains(t, out, "$2 = (void *) "+arg+"\n", "the next hit is another worker's")
	require.NotContains(t, out, "E.reprise")
	require.NotContains(t, out, "in ?? ()", "bt ends at the thread's entry")
	require.Regexp(t, `(?m)^\* +\d+ +Thread 1\.\d+ +worker \(arg=`+arg, out, "info threads: the stopped one")
	require.Regexp(t, `(?m)^ +1 +Thread 1\.1 `, out, "info threads: the main thread")
	rips := regexp.MustCompile(`(?m)^rip +0x[0-9a-f]+ .*$`).FindAllString(out, -1)
	require.Len(t, rips, 9, out)
	require.NotEqual(t, rips[0], rips[1], "two steps from the breakpoint")
	require.Equal(t, rips[0], rips[2], "back two instructions and forwards again")
	require.Equal(t, rips[1], rips[3], "back past the breakpoint to the thread's entry, and forwards to it")
	require.Equal(t, rips[1], rips[4], "back at the first hit")
	require.NotEqual(t, rips[5], rips[6], "the main thread stepped from where it stood")
	require.Equal(t, rips[5], rips[7], "and back")
	require.Equal(t, rips[6], rips[8], "and forwards again")
}

// TestGDBInterruptsAKitGuest interrupts a running kit guest (syn_cont's
// workers computing): it stops at the next exit the kit's kernel makes,
// in the first thread to resume there, a place the session can come back
// to — a monitor checkpoint of it, a seek to the start and back gives the
// same registers — and from which reverse-continue finds the last hit of
// a breakpoint before it; seeks to an exit and a record time stop the
// same way at the first such exit; then the replay runs to its matching
// end.
func TestGDBInterruptsAKitGuest(t *testing.T) {
	kvmtest.Require(t)
	dir, tp, _ := recordTape(t, []string{"syn_cont", "iters=2", "work=2000000"})
	kit, err := guest.Build(context.Background())
	require.NoError(t, err)
	img, err := elffile.OpenImage(kit.Image())
	require.NoError(t, err)
	worker, ok := img.Lookup("worker")
	require.True(t, ok)
	_, gdb, wait := gdbListen(t, dir, tp)
	ask := noAck(t, gdb)
	monitor := func(cmd string) string {
		require.NoError(t, gdb.Write([]byte("qRcmd,"+hex.EncodeToString([]byte(cmd)))))
		var out []byte
		for {
			b, err := gdb.Read()
			require.NoError(t, err, cmd)
			if string(b) == "OK" {
				return string(out)
			}
			output := b[0] == 'O' // output while it runs (empty: the server's keepalive)
			text, err := hex.DecodeString(strings.TrimPrefix(string(b), "O"))
			require.NoError(t, err, "%s: %s", cmd, b)
			if out = append(out, text...); !output {
				return string(out)
			}
		}
	}
	// At once: the replay must not reach its end first (it did once
	// after a 300 ms wait under emulation).
	require.NoError(t, gdb.Write([]byte("vCont;c")))
	require.NoError(t, gdb.Interrupt())
	stop, err := gdb.Read()
	require.NoError(t, err)
	require.Regexp(t, `^T02thread:p1\.[0-9a-f]+;`, string(stop), "stopped by the interrupt")
	thread := regexp.MustCompile(`thread:(p1\.[0-9a-f]+);`).FindStringSubmatch(string(stop))[1]
	regs := ask("g")
	require.Regexp(t, "^[0-9a-f]+$", regs)
	require.Contains(t, monitor("checkpoint"), "#1")
	monitor("seek 0")
	monitor("seek #1")
	require.Equal(t, "OK", ask("Hg"+thread))
	require.Equal(t, regs, ask("g"), "the interrupt's place, found again")
	require.Contains(t, monitor("checkpoint"), "#2")
	monitor("seek 0")
	monitor("seek #2")
	require.Equal(t, regs, ask("g"), "the place saved where a seek found the interrupt's")

	at := monitor("seek 40")
	require.Regexp(t, `\(exit (4\d|[5-9]\d|\d{3,})\)`, at, "at or past exit 40")
	regs40 := ask("g")
	monitor("seek 0")
	require.Equal(t, at, monitor("seek 40"))
	require.Equal(t, regs40, ask("g"), "the same place again")
	require.Regexp(t, `record time (0\.[5-9]|[1-9])[0-9.]*m?s`, monitor("seek 0.5s"))

	require.Equal(t, "OK", ask(fmt.Sprintf("Z0,%x,1", worker.Addr)))
	back := ask("bc")
	require.Regexp(t, `^T05thread:p1\.[0-9a-f]+;.*swbreak`, back, "back to the last call of worker before the interrupt")
	require.Equal(t, "OK", ask(fmt.Sprintf("z0,%x,1", worker.Addr)))
	require.Equal(t, "W00;process:1", ask("c"), "and on to the end")
	require.NoError(t, gdb.Write([]byte("k")))
	require.Contains(t, wait(), "replay matched")
}

// A client that goes back from the last call and then kills the program ends
// the replay quietly (it reached no end of its own: reprise once crashed
// describing one), on a tape whose calls were exception-less too, where
// the debugged replay makes every call exit: its syscall stops are those
// of the ordinary path.
func TestGDBKillAfterGoingBack(t *testing.T) {
	kvmtest.Require(t)
	bb := busybox(t)
	for _, flags := range [][]string{nil, {"--fast-calls"}} {
		t.Run(strings.Join(append([]string{"tape"}, flags...), " "), func(t *testing.T) {
			dir, tp, r := recordTape(t, []string{bb, "echo", "hi"}, flags...)
			require.Equal(t, "hi\n", r.stdout)
			_, gdb, wait := gdbListen(t, dir, tp)
			ask := noAck(t, gdb)
			ask("qSupported:multiprocess+")
			require.Equal(t, "OK", ask("QCatchSyscalls:1;1;e7")) // write, exit_group
			require.Contains(t, ask("vCont;c"), "syscall_entry:1;", "write's entry")
			require.Contains(t, ask("vCont;c"), "syscall_return:1;", "and its return")
			require.Contains(t, ask("vCont;c"), "syscall_entry:e7;", "exit_group's entry")
			require.Contains(t, ask("bc"), "syscall_return:1;", "back to write's return")
			require.NoError(t, gdb.Write([]byte("k")))
			require.NotContains(t, wait(), "panic")
		})
	}
}
