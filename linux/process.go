package linux

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
)

// process is one program image running in its own address space, with its
// descriptors; its threads are the kernel's threads whose proc it is.
type process struct {
	pid      int
	pgid     int // its process group (kill(0), kill(-pgid))
	sid      int // its session
	parent   *process
	as       *mm.Space
	fds      fdTable
	brk      [2]uint64 // the heap: [start, current end)
	exe      string    // /proc/self/exe
	args     [3]uint64 // where argv's strings start, the environment's start and end: /proc/PID/cmdline, environ
	auxv     uint64    // where the auxiliary vector is, on the initial stack (0: unknown)
	cwd      *node     // the working directory (chdir); nil: the root
	umask    uint32    // cleared from a new file's or directory's mode
	children []*process
	live     int    // threads not exited
	zombie   bool   // exited, not yet waited for
	status   uint64 // its wait status once a zombie
	execs    uint64 // counts its execs (AT_RANDOM differs for each)
	// subreaper adopts the orphans among its descendants, as the first
	// process does for the rest (PR_SET_CHILD_SUBREAPER).
	subreaper bool
	// sigactions are its signals' dispositions (index: the signal).
	sigactions [maxSignal + 1]sigaction
	timer      realTimer // alarm, setitimer (alarm.go)
	// timers are its POSIX timers by id (sys_timer.go).
	timers map[int]*posixTimer
	cred   creds // who it is (cred.go)
}

// proc is the running thread's process.
func (k *Kernel) proc() *process { return k.current().proc }

// execImage replaces p's address space with a new one running the ELF
// file (at path) with argv and envp: the executable, its loader if it has
// one, its stack. execfn is the name it was run by, as the program gave
// it (AT_EXECFN). It returns the entry point and stack pointer.
func (k *Kernel) execImage(p *process, path, execfn string, file *vfs.Node, argv, envp []string) (entry, sp uint64, err error) {
	as, err := k.newSpace()
	if err != nil {
		return 0, 0, fmt.Errorf("linux: address space: %w", err)
	}
	defer func() {
		if err != nil {
			as.Release()
		}
	}()
	file.Mapped = true // the image's mappings hold its contents
	x, err := load(as, path, file.Contents(), pieBase)
	if err != nil {
		return 0, 0, fmt.Errorf("linux: %s: %w", path, err)
	}
	if err := k.patchTSC(as, x, file); err != nil {
		return 0, 0, fmt.Errorf("linux: %s: %w", path, err)
	}
	entry = x.entry
	if x.interp != "" {
		if entry, err = k.loadInterp(as, path, x); err != nil {
			return 0, 0, err
		}
	}
	if err := as.MapLazy(userTop-stackSize, userTop, mm.ProtRead|mm.ProtWrite); err != nil {
		return 0, 0, fmt.Errorf("linux: stack: %w", err)
	}
	stack := &initialStack{execfn: execfn, argv: argv, envp: envp, random: k.random(p),
		hwcap: hwcap(k.m), minSigStack: sigStackSize(k.xsave.frameBytes()), cred: p.cred}
	sp, err = stackImage(as, userTop, x, stack)
	if err != nil {
		return 0, 0, fmt.Errorf("linux: initial stack: %w", err)
	}
	if err := k.placeAll(p.pid, p.execs+1, as, false); err != nil {
		return 0, 0, err
	}
	if p.as != nil {
		if err := k.imageGone(image{p.pid, p.execs}); err != nil {
			return 0, 0, err
		}
		p.as.Release()
	}
	p.as, p.brk, p.exe, p.args = as, [2]uint64{x.brk, x.brk}, path, argStrings(userTop, stack)
	p.auxv = sp + 8*uint64(3+len(argv)+len(envp)) // past argc, argv and envp with their NULLs
	k.current().comm = commOf(execfn)
	p.execs++
	for i, act := range p.sigactions { // handlers are gone with the image; ignored stays ignored
		if act.handler != sigIGN {
			p.sigactions[i] = sigaction{}
		}
	}
	return entry, sp, nil
}

// random is AT_RANDOM for p's next image: the recorded bytes for the first
// program, bytes derived from them for every later exec.
func (k *Kernel) random(p *process) [randomBytes]byte {
	if p.pid == pid && p.execs == 0 {
		return k.prog.Random
	}
	var b [24]byte
	binary.LittleEndian.PutUint64(b[:], uint64(p.pid))
	binary.LittleEndian.PutUint64(b[8:], p.execs)
	sum := sha256.Sum256(append(k.prog.Random[:], b[:]...))
	var out [randomBytes]byte
	copy(out[:], sum[:])
	return out
}

// loadInterp loads the dynamic loader x asks for into as, below the mmap
// area's top as Linux does, and returns its entry point.
func (k *Kernel) loadInterp(as *mm.Space, path string, x *executable) (uint64, error) {
	n, err := k.fs.Lookup(x.interp)
	if err == nil && !n.IsRegular() {
		err = unix.EACCES
	}
	if err == nil {
		err = k.fs.Load(n)
	}
	if err != nil {
		return 0, fmt.Errorf("linux: %s needs its loader %s: %w", path, x.interp, err)
	}
	size, err := span(n.Contents())
	if err != nil {
		return 0, fmt.Errorf("linux: loader %s: %w", x.interp, err)
	}
	base, ok := as.FindFree(size)
	if !ok {
		return 0, fmt.Errorf("linux: no room for the loader %s", x.interp)
	}
	n.Mapped = true
	ld, err := load(as, x.interp, n.Contents(), base)
	if err != nil {
		return 0, fmt.Errorf("linux: loader %s: %w", x.interp, err)
	}
	if !ld.dynamic {
		return 0, fmt.Errorf("linux: loader %s is not position-independent", x.interp)
	}
	if err := k.patchTSC(as, ld, n); err != nil {
		return 0, fmt.Errorf("linux: loader %s: %w", x.interp, err)
	}
	x.interpBase = base
	return ld.entry, nil
}

// fork makes a child of the running thread's process: a copy of its
// address space and descriptors, one thread resuming where the parent
// does, with rax 0.
func (k *Kernel) fork() (*thread, error) {
	parent := k.proc()
	// Zombies count too: a parent that never waits cannot pile them up.
	if err := k.budget.Charge(processCount, 1); err != nil {
		return nil, err
	}
	charged := true
	defer func() {
		if charged {
			k.budget.Release(processCount, 1)
		}
	}()
	as, cow, err := parent.as.Clone()
	if err != nil {
		return nil, memErr(err)
	}
	child := &process{parent: parent, pgid: parent.pgid, sid: parent.sid, args: parent.args, auxv: parent.auxv, as: as, fds: parent.fds.Clone(), brk: parent.brk, exe: parent.exe, cwd: parent.cwd, umask: parent.umask, sigactions: parent.sigactions, cred: parent.cred.clone()}
	c := k.m.VCPU()
	regs := *c.SyncedRegs()
	regs.RAX = 0
	regs.RIP, regs.RFLAGS = regs.RCX, regs.R11
	xsave, err := c.XSave()
	if err != nil {
		return nil, err
	}
	t, err := k.spawn(child, regs, xsave, k.current().fsBase)
	if err != nil {
		as.Release()
		return nil, err
	}
	t.sigmask, t.altstack = k.current().sigmask, k.current().altstack
	child.pid = t.tid
	parent.children = append(parent.children, child)
	k.procListed(child.pid, true)
	if cow { // the parent's writable pages are copy-on-write now
		if err := k.m.DropTranslations(); err != nil {
			return nil, err
		}
		k.fr.Forgotten()
	}
	charged = false // the child holds it now, until it is reaped
	if err := k.placeAll(child.pid, child.execs, as, false); err != nil {
		return nil, err
	}
	k.tell(k.current(), procNews{forked: child.pid})
	return t, nil
}

// liveProcesses are the processes with a live thread, in thread order.
func (k *Kernel) liveProcesses() []*process {
	var out []*process
	seen := map[*process]bool{}
	for _, t := range k.threads {
		if t.state != exited && !seen[t.proc] {
			seen[t.proc] = true
			out = append(out, t.proc)
		}
	}
	return out
}

// exitProcess ends p with wait status: its threads stop, its descriptors
// close, its memory is freed, and its parent can reap it. The first
// process's end is the run's.
func (k *Kernel) exitProcess(p *process, status uint64) error {
	if p.pid == pid {
		if status&0x7f != 0 {
			return nil // signalled: reported by the caller
		}
		return exitGroup(status >> 8)
	}
	for _, t := range k.threads {
		if t.proc == p && t.state != exited {
			t.state = exited
			t.leaveQueues()
			if err := k.forgetThread(t.tid); err != nil {
				return err
			}
		}
	}
	p.live = 0
	for _, fd := range p.fds.Sorted() {
		p.closeFD(fd)
	}
	if err := k.imageGone(image{p.pid, p.execs}); err != nil {
		return err
	}
	p.as.Release() // a zombie keeps its status, nothing of its image
	p.zombie, p.status = true, status
	if bp := k.bp; bp != nil && bp.exits != nil {
		bp.ended = append(bp.ended, ProcessEnd{PID: p.pid, Status: status})
	}
	// Its children are orphans now: its nearest live ancestor that is a
	// subreaper adopts them, else the program's first process, as init
	// does; it is told of those that have exited.
	reaper := p.parent
	for reaper.parent != nil && !(reaper.subreaper && !reaper.zombie) {
		reaper = reaper.parent
	}
	orphans := p.children
	p.children = nil
	for _, c := range orphans {
		c.parent = reaper
		reaper.children = append(reaper.children, c)
	}
	for _, c := range orphans {
		if c.zombie {
			if err := k.childExited(c); err != nil {
				return err
			}
		}
	}
	if err := k.childExited(p); err != nil {
		return err
	}
	k.resched = true
	return nil
}

// childExited tells p's parent that p exited: its waiters wake and it
// gets SIGCHLD — or, when it ignores SIGCHLD (SIG_IGN or SA_NOCLDWAIT),
// p is reaped at once and leaves no zombie, as on Linux.
func (k *Kernel) childExited(p *process) error {
	parent := p.parent
	if act := parent.sigactions[unix.SIGCHLD]; act.handler == sigIGN || act.flags&saNoCldWait != 0 {
		k.reaped(parent, p)
		k.wakeAll(waitChild{parent}) // a wait with no children left fails with ECHILD
		return nil
	}
	k.wakeAll(waitChild{parent})
	for _, t := range k.threads {
		if t.proc == parent && t.state != exited {
			return k.signal(t, uint64(unix.SIGCHLD), k.childInfo(p))
		}
	}
	return nil
}

// childInfo is the SIGCHLD siginfo of child c, which exited: CLD_EXITED
// and its exit code, or CLD_KILLED and the signal (waitid's, and the
// signal's).
func (k *Kernel) childInfo(c *process) [128]byte {
	code, status := int32(cldExit), c.status>>8&0xff
	if c.status&0x7f != 0 {
		code, status = cldKill, c.status&0x7f
	}
	info := k.siginfo(uint64(unix.SIGCHLD), code, uint64(c.pid))
	binary.LittleEndian.PutUint32(info[20:], c.cred.uid)
	binary.LittleEndian.PutUint32(info[24:], uint32(status))
	return info
}

// saNoCldWait is SA_NOCLDWAIT: children that exit are reaped at once.
const saNoCldWait = 2

// remove drops c from p's children.
func (p *process) remove(c *process) {
	if i := slices.Index(p.children, c); i >= 0 {
		p.children = slices.Delete(p.children, i, i+1)
	}
}

// reap finds a zombie child of p matching want (-1: any) and removes it,
// giving back its place among the program's processes.
func (k *Kernel) reap(p *process, want int64) (*process, bool) {
	for _, c := range p.children {
		if c.zombie && (want == -1 || int64(c.pid) == want) {
			k.reaped(p, c)
			return c, true
		}
	}
	return nil, false
}

// reaped forgets c, a child of p that exited: its place among the
// program's processes, its /proc directory.
func (k *Kernel) reaped(p, c *process) {
	p.remove(c)
	k.budget.Release(processCount, 1)
	k.procListed(c.pid, false)
}

// hasChild reports whether p has a child matching want (-1: any).
func (p *process) hasChild(want int64) bool {
	for _, c := range p.children {
		if want == -1 || int64(c.pid) == want {
			return true
		}
	}
	return false
}

// waitChild is what a parent waiting for its children blocks on.
type waitChild struct{ parent *process }
