package linux

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
)

// The files of /proc a program reads about a process and its machine — a
// process's maps, fd, cmdline, environ, stat, statm, status, comm,
// mounts, exe and cwd; cpuinfo, meminfo, uptime and loadavg. As Linux
// makes their contents when they are read, the kernel makes them when
// they are opened, from its own state, into a file of their own
// (vfs.Snapshot): the tree holds only empty placeholders, under
// /proc/self, so that stat and access find them (Linux says size 0 too).
// /proc/PID (any live process's or thread's, listed in /proc from fork
// to reaping) and /proc/thread-self are served as /proc/self for the
// process they name (procPath); /proc/cpuinfo and /proc/meminfo describe
// the one CPU and the guest's RAM.

// procFiles are the placeholders, with the generator of each.
var procFiles = map[string]func(t *thread) []byte{
	"/proc/self/maps":    (*thread).procMaps,
	"/proc/self/cmdline": (*thread).procCmdline,
	"/proc/self/status":  (*thread).procStatus,
	"/proc/self/stat":    (*thread).procStat,
	"/proc/self/statm":   (*thread).procStatm,
	"/proc/self/environ": (*thread).procEnviron,
	"/proc/self/mounts":  func(*thread) []byte { return []byte("rootfs / tmpfs rw 0 0\n") },
	"/proc/self/comm":    func(t *thread) []byte { return []byte(t.comm + "\n") },
	"/proc/uptime":       (*thread).procUptime,
	"/proc/loadavg":      (*thread).procLoadavg,
	"/proc/cpuinfo":      (*thread).procCPUInfo,
	"/proc/meminfo":      (*thread).procMeminfo,
}

// procFD is /proc/self/fd, a directory of a link per open descriptor.
const procFD = "/proc/self/fd"

// addProc makes /proc/self/fd, the links of systemLinks, and /dev/shm,
// where shm_open and sem_open make their files (world-writable and
// sticky, as a tmpfs Linux distributions mount there).
func addProc(fs *vfs.FileSystem) error {
	if _, err := fs.MkdirAll(procFD); err != nil {
		return err
	}
	shm, err := fs.MkdirAll("/dev/shm")
	if err != nil {
		return err
	}
	shm.Mode = 0o1777
	for _, name := range slices.Sorted(maps.Keys(systemLinks)) {
		n, err := fs.Add(name, nil, 0o777) // the kernel's: not a write of the program's
		if err != nil {
			return err
		}
		n.Link = systemLinks[name]
	}
	return nil
}

// procFDEntry finds /proc/self/fd's entry name (vfs.Magic), for the
// running thread's process: the node of descriptor name's file, which
// a walk goes on from as Linux's magic links jump; ENOENT for a closed
// descriptor; a pipe, which has no node, as a fdPipe error, which open
// answers by opening the pipe again (bash's <(…) opens /dev/fd/63).
func (k *Kernel) procFDEntry(d *node, name string) (*node, bool, error) {
	// The name first: the lookup of /proc/self/fd asks this of "fd" (a
	// missing entry), which no descriptor's name is.
	fd, err := strconv.Atoi(name)
	if err != nil || fd < 0 || strconv.Itoa(fd) != name {
		return nil, false, nil
	}
	if fdDir, err := k.fs.Lookup(procFD); err != nil || fdDir != d {
		return nil, false, nil
	}
	f, err := k.current().proc.fds.Get(uint64(fd))
	switch {
	case err != nil:
		return nil, true, unix.ENOENT
	case f.Node() == nil:
		return nil, true, fdPipe{f}
	}
	return f.Node(), true, nil
}

// fdPipe is a walk that reached /proc/self/fd/N for a descriptor without
// a node: ENXIO to every call but open.
type fdPipe struct{ f *openFile }

func (fdPipe) Error() string { return "linux: a descriptor without a file node" }
func (fdPipe) Unwrap() error { return unix.ENXIO }

// pinned reports whether n is a thread's process's working directory: a
// node the file system must not forget (vfs.Forget).
func (k *Kernel) pinned(n *node) bool {
	for _, t := range k.threads {
		if t.proc.cwd == n {
			return true
		}
	}
	return false
}

// procPath is p with /proc/thread-self and /proc/PID written /proc/self,
// and the thread whose files those are: the caller's for self, for PID
// the live thread of that id, or its process's leader (a live thread of
// it) if PID is a process's. A path not under /proc is the caller's.
func (t *thread) procPath(p string) (string, *thread) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return p, t
	}
	first, tail, _ := strings.Cut(rest, "/")
	target := t
	if first != "self" && first != "thread-self" {
		id, err := strconv.Atoi(first)
		if err != nil || strconv.Itoa(id) != first {
			return p, t
		}
		if target = t.k.procThread(id); target == nil {
			return p, t // no such process: /proc/PID is not found
		}
	}
	return path.Clean("/proc/self/" + tail), target
}

// procListed lists process pid in /proc, as an empty directory of the
// kernel's (ps reads the pids there), from its fork until it is reaped;
// paths below it are served as /proc/self's are, for it (procPath).
func (k *Kernel) procListed(pid int, listed bool) {
	p := "/proc/" + strconv.Itoa(pid)
	if listed {
		k.fs.AddDir(p, 0o555)
	} else {
		k.fs.Drop(p)
	}
}

// procThread is the live thread /proc/id describes: the thread of that
// id, or a live thread of the process of that id; nil if none.
func (k *Kernel) procThread(id int) *thread {
	var ofProcess *thread
	for _, t := range k.threads {
		switch {
		case t.state == exited:
		case t.tid == id:
			return t
		case t.proc.pid == id && ofProcess == nil:
			ofProcess = t
		}
	}
	return ofProcess
}

// fdEntry is the open file whose /proc/PID/fd entry p names, however
// reached (/dev/fd/N), if p names one: ok with f nil for a descriptor
// not open.
func (t *thread) fdEntry(p string) (f *openFile, ok bool) {
	p, t = t.procPath(p)
	e, err := t.k.fs.Parent(p)
	if err != nil || !e.Named() {
		return nil, false
	}
	if fdDir, err := t.k.fs.Lookup(procFD); err != nil || fdDir != e.Dir {
		return nil, false
	}
	fd, err := strconv.Atoi(e.Name)
	if err != nil || fd < 0 {
		return nil, true
	}
	f, err = t.proc.fds.Get(uint64(fd))
	if err != nil {
		return nil, true
	}
	return f, true
}

// openProc is the file to open with flags instead of n, found at p, if n
// is a /proc placeholder, made now from the state of the thread p names
// (procPath); nil if n is none. They are read-only (EACCES).
func (t *thread) openProc(n *node, p string, flags uint64) (*node, error) {
	_, t = t.procPath(p)
	var generate func() (*node, error)
	if n.Dir {
		if d, err := t.k.fs.Lookup(procFD); err == nil && d == n {
			generate = func() (*node, error) { return t.k.fs.SnapshotDir(t.fdLinks()) }
		}
	} else if n.Size() == 0 && n.Mode == 0o444 {
		for _, name := range slices.Sorted(maps.Keys(procFiles)) {
			if f, err := t.k.fs.Lookup(name); err == nil && f == n {
				generate = func() (*node, error) { return t.k.fs.Snapshot(procFiles[name](t)) }
			}
		}
	}
	switch {
	case generate == nil:
		return nil, nil
	case flags&unix.O_ACCMODE != unix.O_RDONLY:
		return nil, unix.EACCES
	}
	return generate()
}

// fdLinks are /proc/self/fd's entries: each descriptor's file, in
// descriptor order as Linux lists them.
func (t *thread) fdLinks() []vfs.Link {
	var links []vfs.Link
	for _, fd := range t.proc.fds.Sorted() {
		if e := t.proc.fds[fd]; e.File != nil {
			links = append(links, vfs.Link{Name: strconv.Itoa(fd), Target: t.fdTarget(e.File)})
		}
	}
	return links
}

// fdTarget is what /proc/self/fd/N's link reads for f: its path, or an
// anonymous file's name as Linux writes it; a pipe and the standard
// streams are the pipe stat describes.
func (t *thread) fdTarget(f *openFile) string {
	switch {
	case f.Node() != nil:
		return f.Path
	case f.AnonName() != "":
		return "anon_inode:[" + f.AnonName() + "]"
	case socketOf(f) != nil:
		return "socket:[" + strconv.FormatUint(socketOf(f).Ino(), 10) + "]"
	}
	return "pipe:[" + strconv.FormatUint(f.StreamIno(), 10) + "]"
}

// fdLink is /proc/self/fd's entry for f as lstat sees it: a link to its
// file, lrwx------ as f was opened (lr-x, l-wx), the process's user's. It is
// in no tree and charged to nothing: stat describes it, and a change
// made through it (lchown) changes nothing, as on Linux.
func (t *thread) fdLink(f *openFile) *node {
	mode := uint32(0o100)
	if f.Readable() {
		mode |= 0o400
	}
	if f.Writable() {
		mode |= 0o200
	}
	c := t.proc.cred
	return &node{Mode: mode, Link: t.fdTarget(f), UID: c.euid, GID: c.egid}
}

// procMaps is /proc/self/maps: each range of the address space with its
// protection, and the file it maps, the heap or the stack.
func (t *thread) procMaps() []byte {
	var b strings.Builder
	as, p := t.proc.as, t.proc
	for _, v := range as.VMAs() {
		for start := v.Start; start < v.End; {
			end, offset, name := v.End, uint64(0), ""
			if m := as.FileAt(start); m != nil {
				end, offset, name = min(end, m.End), m.FileOffset(start), m.Path
			} else if next := nextFile(as, start, end); next != 0 {
				end = next
			}
			switch {
			case name != "":
			case v.Obj != nil:
				name = "/dev/zero (deleted)" // Linux's name of shared anonymous memory
			case start >= p.brk[0] && end <= max(p.brk[1], p.brk[0]) && p.brk[0] != 0:
				name = "[heap]"
			case end == userTop && start >= userTop-stackSize:
				name = "[stack]"
			}
			dev, ino := "00:00", uint64(0)
			if name != "" && name[0] == '/' {
				dev = "08:01"
				if n, err := t.k.fs.Lookup(name); err == nil {
					ino = n.Ino
				}
			}
			line := fmt.Sprintf("%012x-%012x %s %08x %s %d", start, end, perms(v), offset, dev, ino)
			if name != "" {
				line = fmt.Sprintf("%-72s %s", line, name)
			}
			b.WriteString(line + "\n")
			start = end
		}
	}
	return []byte(b.String())
}

// taskCommLen is TASK_COMM_LEN: a thread's name is at most one less.
const taskCommLen = 16

// commOf is the thread name s makes: its last path element up to its
// first NUL, cut to 15 bytes, as Linux names a thread after the path it
// executes (__set_task_comm) and cuts PR_SET_NAME's.
func commOf(s string) string {
	s, _, _ = strings.Cut(s, "\x00")
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return s[:min(len(s), taskCommLen-1)]
}

// procUptime is /proc/uptime: the machine's clock (a recorded input, as
// every reading is), and as idle time the same, as a one-CPU machine
// that did nothing else would say.
func (t *thread) procUptime() []byte {
	up, err := t.k.now(unix.CLOCK_BOOTTIME)
	if err != nil {
		return nil
	}
	cs := up.Milliseconds() / 10
	return fmt.Appendf(nil, "%d.%02d %d.%02d\n", cs/100, cs%100, cs/100, cs%100)
}

// procLoadavg is /proc/loadavg: no load is kept, so none; the runnable
// and live threads, and the last pid given out.
func (t *thread) procLoadavg() []byte {
	ready, live := 0, 0
	for _, o := range t.k.threads {
		if o.state == runnable {
			ready++
		}
		if o.state != exited {
			live++
		}
	}
	return fmt.Appendf(nil, "0.00 0.00 0.00 %d/%d %d\n", ready, live, t.k.nextTID)
}

// maxCmdline bounds what /proc/self/cmdline reads of the program's
// memory: its arguments may be no longer (abi.LinuxMaxArgBytes is less).
const maxCmdline = 1 << 20

// procCmdline is /proc/PID/cmdline: argv's strings where exec put them,
// as the program may have changed them since, as on Linux.
func (t *thread) procCmdline() []byte { return t.stackStrings(t.proc.args[0], t.proc.args[1]) }

// procEnviron is /proc/PID/environ: the environment's strings where exec
// put them.
func (t *thread) procEnviron() []byte { return t.stackStrings(t.proc.args[1], t.proc.args[2]) }

// stackStrings are the bytes of [start, end) of the process's memory,
// which exec filled with strings.
func (t *thread) stackStrings(start, end uint64) []byte {
	if end <= start {
		return nil
	}
	b := make([]byte, min(end-start, maxCmdline))
	if t.proc.as.Read(start, b) != nil {
		return nil
	}
	return b
}

// procStat is /proc/PID/stat, Linux's 52 fields: who the process is, its
// state, threads, memory and where its strings are. No CPU time is kept
// (the times are 0, as times(2) says here), and it started at boot.
func (t *thread) procStat() []byte {
	p := t.proc
	ppid := 0
	if p.parent != nil {
		ppid = p.parent.pid
	}
	state := "R"
	if t.state == blocked {
		state = "S"
	}
	pages, _ := p.as.Resident()
	var size uint64
	for _, v := range p.as.VMAs() {
		size += v.End - v.Start
	}
	ign, cgt := p.dispositions()
	return fmt.Appendf(nil, "%d (%s) %s %d %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 %d 0 0 %d %d %d 0 0 %d 0 0 %d %d %d %d 0 0 0 17 0 0 0 0 0 0 0 0 %d %d %d %d %d 0\n",
		p.pid, t.comm, state, ppid, p.pgid, p.sid, p.live, size, pages, ^uint64(0), p.args[0],
		t.pending, t.sigmask, ign, cgt, p.brk[0], p.args[0], p.args[1], p.args[1], p.args[2])
}

// dispositions are the signals p ignores and those it catches, as masks
// (/proc/PID/status's SigIgn and SigCgt, stat's sigignore and sigcatch).
func (p *process) dispositions() (ign, cgt uint64) {
	for sig, act := range p.sigactions {
		switch {
		case sig == 0:
		case act.handler == sigIGN:
			ign |= sigbit(uint64(sig))
		case act.handler > sigIGN:
			cgt |= sigbit(uint64(sig))
		}
	}
	return ign, cgt
}

// procStatm is /proc/PID/statm, in pages: the mapped size, what is
// resident, the shared pages among them, the executable ranges, no
// libraries (Linux says 0 too), the writable private ranges, no dirty.
func (t *thread) procStatm() []byte {
	as := t.proc.as
	resident, shared := as.Resident()
	var size, text, data uint64
	for _, v := range as.VMAs() {
		n := (v.End - v.Start) / pageSize
		size += n
		switch {
		case v.Prot&mm.ProtExec != 0:
			text += n
		case v.Prot&mm.ProtWrite != 0 && v.Obj == nil:
			data += n
		}
	}
	return fmt.Appendf(nil, "%d %d %d %d 0 %d 0\n", size, resident, shared, text, data)
}

// procStatus is /proc/self/status: who the process is, its threads and
// the signal state of the calling thread, in Linux's layout (the fields
// programs read; no memory figures).
func (t *thread) procStatus() []byte {
	p, c, name := t.proc, t.proc.cred, t.comm
	ppid, threads := 0, p.live
	if p.parent != nil {
		ppid = p.parent.pid
	}
	ign, cgt := p.dispositions()
	var b strings.Builder
	fmt.Fprintf(&b, "Name:\t%s\nUmask:\t%04o\nState:\tR (running)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\n",
		name, p.umask, p.pid, p.pid, ppid)
	fmt.Fprintf(&b, "Uid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\nFDSize:\t64\nGroups:\t", c.uid, c.euid, c.suid, c.euid, c.gid, c.egid, c.sgid, c.egid)
	for _, g := range c.groups {
		fmt.Fprintf(&b, "%d ", g)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Threads:\t%d\nSigPnd:\t%016x\nShdPnd:\t%016x\nSigBlk:\t%016x\nSigIgn:\t%016x\nSigCgt:\t%016x\n",
		threads, t.pending, uint64(0), t.sigmask, ign, cgt)
	b.WriteString("CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n" +
		"CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n")
	return []byte(b.String())
}

// nextFile is the start of the first file mapping in (start, end), or 0.
func nextFile(as *mm.Space, start, end uint64) uint64 {
	for _, m := range as.Files() {
		if m.Start > start && m.Start < end {
			return m.Start
		}
	}
	return 0
}

// perms are a range's protection and sharing as maps prints them.
func perms(v mm.VMA) string {
	b := []byte("---p")
	if v.Obj != nil {
		b[3] = 's'
	}
	p := v.Prot
	if p&mm.ProtRead != 0 {
		b[0] = 'r'
	}
	if p&mm.ProtWrite != 0 {
		b[1] = 'w'
	}
	if p&mm.ProtExec != 0 {
		b[2] = 'x'
	}
	return string(b)
}

// procMeminfo is /proc/meminfo: the guest's RAM, what its frames hold in
// use, no swap.
func (t *thread) procMeminfo() []byte {
	total := t.k.m.RAM().Size() >> 10
	free := total - t.k.fr.InUse()>>10
	var b strings.Builder
	for _, f := range []struct {
		name string
		kb   uint64
	}{{"MemTotal", total}, {"MemFree", free}, {"MemAvailable", free}, {"Buffers", 0}, {"Cached", 0},
		{"SwapCached", 0}, {"SwapTotal", 0}, {"SwapFree", 0}, {"Shmem", 0}} {
		fmt.Fprintf(&b, "%-16s%8d kB\n", f.name+":", f.kb)
	}
	return []byte(b.String())
}

// procCPUInfo is /proc/cpuinfo for the one CPU: what its CPUID says, the
// program's own view of it (its CPUIDs never reach the VMM).
func (t *thread) procCPUInfo() []byte {
	leaves := t.k.m.CPUID()
	leaf := func(fn uint32) kvm.CPUIDEntry {
		for _, e := range leaves {
			if e.Function == fn && e.Index == 0 {
				return e
			}
		}
		return kvm.CPUIDEntry{}
	}
	regs := func(es ...kvm.CPUIDEntry) string {
		var s []byte
		for _, e := range es {
			for _, r := range []uint32{e.EAX, e.EBX, e.ECX, e.EDX} {
				s = append(s, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
			}
		}
		return strings.TrimSpace(strings.TrimRight(string(s), "\x00"))
	}
	v := leaf(0)
	vendor := regs(kvm.CPUIDEntry{EAX: v.EBX, EBX: v.EDX, ECX: v.ECX})
	sig := leaf(1).EAX
	family, model := sig>>8&0xf, sig>>4&0xf
	if family == 0xf {
		family += sig >> 20 & 0xff
	}
	if family >= 6 {
		model |= sig >> 12 & 0xf0
	}
	var b strings.Builder
	field := func(name, format string, a ...any) {
		fmt.Fprintf(&b, "%-16s: "+format+"\n", append([]any{name}, a...)...)
	}
	field("processor", "0")
	field("vendor_id", "%s", vendor)
	field("cpu family", "%d", family)
	field("model", "%d", model)
	field("model name", "%s", regs(leaf(0x80000002), leaf(0x80000003), leaf(0x80000004)))
	field("stepping", "%d", sig&0xf)
	field("physical id", "0")
	field("siblings", "1")
	field("core id", "0")
	field("cpu cores", "1")
	field("apicid", "0")
	field("fpu", "yes")
	field("fpu_exception", "yes")
	field("cpuid level", "%d", v.EAX)
	field("wp", "yes")
	field("flags", "%s", strings.Join(cpuFlags(leaf), " "))
	field("clflush size", "64")
	field("cache_alignment", "64")
	field("address sizes", "%d bits physical, %d bits virtual", leaf(0x80000008).EAX&0xff, leaf(0x80000008).EAX>>8&0xff)
	b.WriteString("\n")
	return []byte(b.String())
}

// cpuFlag is a feature /proc/cpuinfo names, by where CPUID reports it.
type cpuFlag struct {
	leaf uint32
	reg  byte // 'b', 'c' or 'd'
	bit  uint
	name string
}

// cpuFlagTable holds the features programs look for, in Linux's order.
var cpuFlagTable = []cpuFlag{
	{1, 'd', 0, "fpu"}, {1, 'd', 1, "vme"}, {1, 'd', 2, "de"}, {1, 'd', 3, "pse"}, {1, 'd', 4, "tsc"}, {1, 'd', 5, "msr"},
	{1, 'd', 6, "pae"}, {1, 'd', 7, "mce"}, {1, 'd', 8, "cx8"}, {1, 'd', 9, "apic"}, {1, 'd', 11, "sep"}, {1, 'd', 12, "mtrr"},
	{1, 'd', 13, "pge"}, {1, 'd', 14, "mca"}, {1, 'd', 15, "cmov"}, {1, 'd', 16, "pat"}, {1, 'd', 17, "pse36"},
	{1, 'd', 19, "clflush"}, {1, 'd', 23, "mmx"}, {1, 'd', 24, "fxsr"}, {1, 'd', 25, "sse"}, {1, 'd', 26, "sse2"},
	{1, 'd', 27, "ss"}, {1, 'd', 28, "ht"}, {0x80000001, 'd', 11, "syscall"}, {0x80000001, 'd', 20, "nx"},
	{0x80000001, 'd', 26, "pdpe1gb"}, {0x80000001, 'd', 27, "rdtscp"}, {0x80000001, 'd', 29, "lm"},
	{1, 'c', 0, "pni"}, {1, 'c', 1, "pclmulqdq"}, {1, 'c', 9, "ssse3"}, {1, 'c', 12, "fma"}, {1, 'c', 13, "cx16"},
	{1, 'c', 19, "sse4_1"}, {1, 'c', 20, "sse4_2"}, {1, 'c', 21, "x2apic"}, {1, 'c', 22, "movbe"}, {1, 'c', 23, "popcnt"},
	{1, 'c', 25, "aes"}, {1, 'c', 26, "xsave"}, {1, 'c', 28, "avx"}, {1, 'c', 29, "f16c"}, {1, 'c', 30, "rdrand"},
	{1, 'c', 31, "hypervisor"}, {0x80000001, 'c', 0, "lahf_lm"}, {0x80000001, 'c', 5, "abm"},
	{0x80000001, 'c', 8, "3dnowprefetch"}, {7, 'b', 0, "fsgsbase"}, {7, 'b', 3, "bmi1"}, {7, 'b', 4, "hle"},
	{7, 'b', 5, "avx2"}, {7, 'b', 7, "smep"}, {7, 'b', 8, "bmi2"}, {7, 'b', 9, "erms"}, {7, 'b', 10, "invpcid"},
	{7, 'b', 11, "rtm"}, {7, 'b', 16, "avx512f"}, {7, 'b', 17, "avx512dq"}, {7, 'b', 18, "rdseed"}, {7, 'b', 19, "adx"},
	{7, 'b', 20, "smap"}, {7, 'b', 21, "avx512ifma"}, {7, 'b', 23, "clflushopt"}, {7, 'b', 24, "clwb"},
	{7, 'b', 28, "avx512cd"}, {7, 'b', 29, "sha_ni"}, {7, 'b', 30, "avx512bw"}, {7, 'b', 31, "avx512vl"},
	{7, 'c', 1, "avx512vbmi"}, {7, 'c', 3, "pku"}, {7, 'c', 4, "ospke"}, {7, 'c', 6, "avx512_vbmi2"}, {7, 'c', 8, "gfni"},
	{7, 'c', 9, "vaes"}, {7, 'c', 10, "vpclmulqdq"}, {7, 'c', 11, "avx512_vnni"}, {7, 'c', 12, "avx512_bitalg"},
	{7, 'c', 14, "avx512_vpopcntdq"}, {7, 'c', 22, "rdpid"}, {7, 'd', 4, "fsrm"}, {7, 'd', 10, "md_clear"},
}

// cpuFlags are the names of the features leaf says the CPU has.
func cpuFlags(leaf func(uint32) kvm.CPUIDEntry) []string {
	var out []string
	for _, f := range cpuFlagTable {
		e := leaf(f.leaf)
		r := map[byte]uint32{'b': e.EBX, 'c': e.ECX, 'd': e.EDX}[f.reg]
		if r>>f.bit&1 != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// procReadlink is what readlink of p answers when p is a link /proc
// makes: /proc/self/exe, /proc/self/cwd or /proc/self/fd/N.
func (t *thread) procReadlink(p string) (string, bool, error) {
	if f, ok := t.fdEntry(p); ok {
		if f == nil {
			return "", true, unix.ENOENT
		}
		return t.fdTarget(f), true, nil
	}
	switch p, t = t.procPath(p); {
	case p == "/proc/self/exe":
		return t.proc.exe, true, nil
	case p == "/proc/self/cwd":
		dir := "/"
		if n := t.proc.cwd; n != nil {
			if d, ok := t.k.fs.DirPath(n); ok && d != "" {
				dir = d
			}
		}
		return dir, true, nil
	}
	return "", false, nil
}
