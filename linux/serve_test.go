package linux

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkServe is the personality's own work per system call: what the
// VMM does between a SYSCALL's exit and its return for the calls a shell
// loop makes (open, read, write, close, dup2, fcntl, poll; issue 29 wants
// each under 2 µs), issued to a booted kernel as the exit would leave
// them. No KVM_RUN is in it: the exit's own cost, and the vCPU loop's
// bookkeeping around it, are the Stats' "time" line's. An op is one call,
// or the pair its name says.
func BenchmarkServe(b *testing.B) {
	ck := newCallKernel(b, false)
	s := ck.prepare(b)
	ck.k.Trace(nil)
	// call serves one call; a failure ends the benchmark.
	call := func(b *testing.B, nr uint64, a args) uint64 {
		ret, err := ck.serve(nr, a)
		if err != nil || int64(ret) < 0 && int64(ret) > -4096 {
			b.Fatalf("call %d = %d, %v", nr, int64(ret), err)
		}
		return ret
	}
	const fd = 10 // a descriptor nothing else uses
	for _, bc := range []struct {
		name string
		op   func(b *testing.B)
	}{
		{"getpid", func(b *testing.B) { call(b, unix.SYS_GETPID, args{}) }},
		{"openat+close", func(b *testing.B) {
			call(b, unix.SYS_CLOSE, args{call(b, unix.SYS_OPENAT, args{atFDCWD, s + offPathA, unix.O_RDONLY})})
		}},
		{"lseek+read-64", func(b *testing.B) {
			call(b, unix.SYS_LSEEK, args{fdExe, 0, unix.SEEK_SET})
			call(b, unix.SYS_READ, args{fdExe, s + offBuf, 64})
		}},
		{"lseek+write-16", func(b *testing.B) {
			call(b, unix.SYS_LSEEK, args{fdFile, 0, unix.SEEK_SET})
			call(b, unix.SYS_WRITE, args{fdFile, s + offBuf, 16})
		}},
		{"pread64-4k", func(b *testing.B) { call(b, unix.SYS_PREAD64, args{fdExe, s + offBuf, 4096, 0}) }},
		{"dup2+close", func(b *testing.B) {
			call(b, unix.SYS_DUP2, args{fdExe, fd})
			call(b, unix.SYS_CLOSE, args{fd})
		}},
		{"fcntl", func(b *testing.B) { call(b, unix.SYS_FCNTL, args{fdExe, unix.F_GETFD}) }},
		{"poll", func(b *testing.B) { call(b, unix.SYS_POLL, args{s + offPollFD, 1, 0}) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.op(b)
			}
		})
	}
}
