package linux

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/vfs"
)

// threadState is where a thread is in its life.
type threadState int

const (
	runnable threadState = iota
	blocked              // in futex wait or nanosleep
	exited
)

// thread is one thread of the program. All threads share the one vCPU:
// the running one's registers are the vCPU's, the others' are saved here.
// Switches happen only at the program's own exits and at the interrupts
// the engine delivers there, so a replay switches exactly where its
// recording did.
type thread struct {
	k        *Kernel // the kernel it runs on
	tid      int
	proc     *process
	state    threadState
	regs     kvm.Regs  // saved while not running
	xsave    kvm.XSave // x87, SSE, AVX ... (xstate.go), saved while not running
	fsBase   uint64    // the thread pointer (arch_prctl, CLONE_SETTLS)
	comm     string    // its name: the executable's, or PR_SET_NAME's (at most 15 bytes)
	clearTID uint64    // set_tid_address, CLONE_CHILD_CLEARTID: zeroed and woken at exit
	// A blocked thread waits for a futex wake on futex (matching
	// futexMask), or for its deadline (0: none); wakeErr is what the
	// wait returns if the deadline comes first (ETIMEDOUT), 0 for a
	// sleep, which returns 0.
	futex     futexKey
	futexMask uint32
	deadline  time.Duration
	wakeErr   errno
	waitSeq   uint64 // when it blocked: futex waiters wake in this order
	// waitKey, for a thread blocked in a call that restarts when woken
	// (a pipe read or write, a wait for a child), is what it waits on.
	waitKey waitKey
	// waitOn are the files on whose queues a thread waiting on files
	// (waitKey fileWait{}) is registered.
	waitOn []*openFile
	// lockQueue is the node lock queue a thread waiting for a lock
	// (lockWait) is registered on.
	lockQueue *vfs.Queue
	warned    bool // watchHog has warned of it
	// timedOut tells a reissued call that its wait's time is up (poll).
	timedOut bool
	// Signals: the blocked mask, those pending, and their siginfo;
	// sigsuspend's caller's own mask while it waits.
	sigmask, pending uint64
	infos            map[uint64][128]byte
	savedMask        uint64
	suspended        bool
	altstack         altStack // sigaltstack
	// retryAt is the RIP of a write that faulted on a copy-on-write page
	// and has not run again since (breakCOWFault), 0 if none.
	retryAt uint64
	// entered is the last signal handler entered, for a debugger stepping
	// back out of it (Break.SignalEntry).
	entered signalEntry
	// emulated is the last instruction the kernel emulated for it (an
	// RDTSC): the exit and its address, for a debugger stepping back
	// across it (Break.Emulated).
	emulated emulation
	// call is the system call the thread is in (inCall): from its entry
	// until the thread next runs, for a debugger's syscall stops
	// (syscall_stops.go); reissue says the SYSCALL a call that blocked
	// left the thread on issues that call again.
	call    syscallAt
	inCall  bool
	reissue bool
	// news is what its last system call did to its process, told to a
	// debugger when it resumes (exited). Not in checkpoints: a debugged
	// replay restored between the call and that resumption is not told.
	news procNews
}

// emulation is an instruction the kernel ran for a thread, at an exit.
type emulation struct{ exit, at uint64 }

// signalEntry is a signal's delivery: at which exit, the handler it
// entered and the place it interrupted (the RIP the frame keeps).
type signalEntry struct {
	exit, handler, from uint64
}

// maxThreads bounds the threads a program can create (RLIMIT_NPROC-like):
// each costs host memory for its saved state.
const maxThreads = 1024

// current is the running thread.
func (k *Kernel) current() *thread { return k.threads[k.cur] }

// Runnable reports whether any thread can run.
func (k *Kernel) Runnable() bool {
	for _, t := range k.threads {
		if t.state == runnable {
			return true
		}
	}
	return false
}

// block stops the current thread until a wake or its deadline (0: none).
func (k *Kernel) block(deadline time.Duration, onDeadline errno) {
	t := k.current()
	k.waitSeq++
	t.state, t.deadline, t.wakeErr, t.waitSeq = blocked, deadline, onDeadline, k.waitSeq
	k.resched = true
}

// wake makes t runnable, its blocking call returning ret.
func (k *Kernel) wake(t *thread, ret uint64) {
	t.state, t.deadline, t.futex = runnable, 0, futexKey{}
	k.setReturn(t, ret)
}

// regsOf is where t's registers are: the vCPU's for the running thread
// (marked to be loaded), its saved ones for another.
func (k *Kernel) regsOf(t *thread) *kvm.Regs {
	if t == k.current() {
		k.m.VCPU().MarkRegsDirty()
		return k.m.VCPU().SyncedRegs()
	}
	return &t.regs
}

// setReturn sets what t's system call returns: in the vCPU's registers for
// the running thread, in its saved ones for another.
func (k *Kernel) setReturn(t *thread, ret uint64) { k.regsOf(t).RAX = ret }

// tick wakes the threads whose deadline has come and asks for a switch if
// another thread can run.
func (k *Kernel) tick(clock time.Duration) {
	k.coarse = max(k.coarse, clock)
	k.watchHog(clock)
	for _, t := range k.threads {
		if t.state == blocked && t.deadline != 0 && clock >= t.deadline {
			if t.waitKey != nil {
				// A call reissued when woken (poll, select) runs once more,
				// told its time is up: it reports what is ready, likely
				// nothing.
				t.stopWaiting()
				t.state, t.deadline, t.timedOut = runnable, 0, true
				continue
			}
			k.wake(t, negErrno(t.wakeErr))
		}
	}
	k.resched = true
}

// hogLimit is how long a thread may keep the CPU without a system call,
// others waiting, before the run warns that it cannot be preempted.
const hogLimit = time.Second

// watchHog warns, once per thread, of a thread that kept the CPU for
// hogLimit while others could run. Ticks reach an unmodified program only
// at its exits, and one is pending within a tick period of the last, so a
// gap of hogLimit between two delivered ticks means no exit at all in
// between: the thread that ran up to the exit this tick is delivered at
// made no system call all that time, and nothing could preempt it. (A
// live run delivers ticks anywhere and never sees such a gap.) It runs at
// each tick, before the tick's own wake-ups and switch.
func (k *Kernel) watchHog(clock time.Duration) {
	last := k.hog
	k.hog.at = clock
	if last.waiting == 0 || clock-last.at < hogLimit || last.thread.warned {
		return
	}
	t := last.thread
	t.warned = true
	k.stats.Warnings = append(k.stats.Warnings, fmt.Sprintf(
		"thread %d of %s ran %v without a system call while %d other threads waited to run: an unmodified program is preempted only at its system calls; rebuild it with reprise's instrumentation for exact positions",
		t.tid, t.proc.exe, (clock-last.at).Round(time.Millisecond), last.waiting))
}

// noteRunning remembers, at each exit, which thread ran up to it and how
// many others could have (watchHog).
func (k *Kernel) noteRunning() {
	t := k.current()
	waiting := 0
	for _, o := range k.threads {
		if o != t && o.state == runnable {
			waiting++
		}
	}
	k.hog.thread, k.hog.waiting = t, waiting
}

// reschedule switches to the next runnable thread after the current one,
// in tid order, if a switch was asked for; with none runnable it leaves
// the vCPU alone (the machine idles).
func (k *Kernel) reschedule() error {
	if !k.resched {
		return nil
	}
	k.resched = false
	defer k.prune()
	n := len(k.threads)
	for i := 1; i <= n; i++ {
		next := (k.cur + i) % n
		if k.threads[next].state != runnable {
			continue
		}
		if next == k.cur {
			return nil
		}
		return k.switchTo(next)
	}
	return nil
}

// prune forgets the exited threads but the running one, so a program that
// makes and ends threads forever does not grow the VMM's memory.
func (k *Kernel) prune() {
	cur := k.current()
	k.threads = slices.DeleteFunc(k.threads, func(t *thread) bool { return t.state == exited && t != cur })
	k.cur = slices.Index(k.threads, cur)
}

// switchTo saves the running thread's state and loads thread i's.
func (k *Kernel) switchTo(i int) error {
	c := k.m.VCPU()
	old, next := k.current(), k.threads[i]
	old.regs = *c.SyncedRegs()
	xsave, err := c.XSave()
	if err != nil {
		return err
	}
	old.xsave = xsave
	*c.SyncedRegs() = next.regs
	c.MarkRegsDirty()
	if err := c.SetXSave(&next.xsave); err != nil {
		return err
	}
	k.cur = i
	k.switches++
	return nil
}

// spawn adds a thread of p that starts with regs, xsave and fsBase.
func (k *Kernel) spawn(p *process, regs kvm.Regs, xsave kvm.XSave, fsBase uint64) (*thread, error) {
	live := 0
	for _, t := range k.threads {
		if t.state != exited {
			live++
		}
	}
	if live >= maxThreads {
		return nil, unix.EAGAIN
	}
	k.nextTID++
	if k.bp != nil && len(k.threads) > 0 && k.bp.stepping[k.current().tid] {
		regs.RFLAGS &^= rflagsTF // the debugger's step is its creator's, not the new thread's
	}
	t := &thread{k: k, tid: k.nextTID, proc: p, regs: regs, xsave: xsave, fsBase: fsBase}
	if len(k.threads) > 0 {
		t.comm = k.current().comm // a new thread or a fork's child has its creator's name
	}
	k.threads = append(k.threads, t)
	p.live++
	return t, nil
}

// exitThread ends the current thread: its clear-TID word is zeroed and one
// waiter on it woken (how pthread_join and musl's thread list learn of
// it). The last thread's exit ends the program with status.
func (k *Kernel) exitThread(status uint64) error {
	t := k.current()
	if t.clearTID != 0 {
		if err := k.proc().as.Write(t.clearTID, make([]byte, 4)); err == nil {
			k.futexWake(keyOf(t.proc.as, t.clearTID, false), 1, ^uint32(0))
		}
	}
	t.state = exited
	if err := k.forgetThread(t.tid); err != nil {
		return err
	}
	t.proc.live--
	if t.proc.live == 0 {
		return k.exitProcess(t.proc, (status&0xff)<<8)
	}
	k.resched = true
	return nil
}

// errRestart, from a system call, blocks the calling thread on its waitKey
// and makes it issue the same call again when woken.
var errRestart = errors.New("restart when woken")

// A waitKey is what a thread blocked in a call that restarts waits on:
// fileWait, sigWait or waitChild. Each says how a checkpoint holds it
// (thread_persist.go), so a kind of wait a checkpoint cannot hold does
// not compile.
type waitKey interface {
	saved(sv *saver, t *thread) savedWait
}

// blockOn blocks the current thread until key is woken; its call then
// runs again (errRestart).
func (t *thread) blockOn(key waitKey) error {
	t.k.waitSeq++
	t.state, t.waitKey, t.waitSeq, t.deadline = blocked, key, t.k.waitSeq, 0
	t.k.resched = true
	return errRestart
}

// fileWait is what a thread blocked on files waits on: a change of any
// of t.waitOn, whose queues it is registered on.
type fileWait struct{}

// blockOnFiles blocks the current thread until a file of files changes
// (a pipe read or write, poll, select); its call then runs again.
func (t *thread) blockOnFiles(files ...*openFile) error {
	t.waitOnFiles(files)
	return t.blockOn(fileWait{})
}

// waitOnFiles registers t on the queues of files (those with one).
func (t *thread) waitOnFiles(files []*openFile) {
	for _, f := range files {
		if q := f.Queue(); q != nil {
			q.Register(t, vfs.AllEvents)
			t.waitOn = append(t.waitOn, f)
		}
	}
}

// Notify is a change of a file t waits on (vfs.Waiter): t runs again.
func (t *thread) Notify(vfs.Events) {
	if _, locking := t.waitKey.(lockWait); t.state == blocked && (t.waitKey == (fileWait{}) || locking) {
		t.stopWaiting()
		t.state = runnable
		t.k.resched = true
	}
}

// stopWaiting ends t's wait.
func (t *thread) stopWaiting() {
	t.leaveQueues()
	t.waitKey = nil
}

// leaveQueues unregisters t from the queues it waits on: its wait ended,
// or it exited (a queue holds no thread that is gone).
func (t *thread) leaveQueues() {
	for _, f := range t.waitOn {
		f.Queue().Unregister(t)
	}
	t.waitOn = nil
	if t.lockQueue != nil {
		t.lockQueue.Unregister(t)
		t.lockQueue = nil
	}
}

// wakeAll makes every thread blocked on key runnable, to retry its call.
func (k *Kernel) wakeAll(key waitKey) {
	for _, t := range k.threads {
		if t.state == blocked && t.waitKey != nil && t.waitKey == key {
			t.state, t.waitKey = runnable, nil
			k.resched = true
		}
	}
}
