package linux

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/vfs"
)

// A thread in a checkpoint (save_restore.go): its registers, signal
// state and what it waits on.
type savedThread struct {
	TID       int
	Proc      int // index into Procs
	State     int
	Regs      kvm.Regs
	XSave     kvm.XSave
	FSBase    uint64
	Comm      string
	ClearTID  uint64
	FutexAddr uint64
	FutexKind uint8 // futexKey's: 0 none, 1 FutexAddr in its address space, 2 a shared frame's
	FutexMask uint32
	Deadline  time.Duration
	WakeErr   uint64
	WaitSeq   uint64
	Wait      savedWait
	Warned    bool
	TimedOut  bool
	Sigmask   uint64
	Pending   uint64
	Infos     map[uint64][128]byte
	SavedMask uint64
	Suspended bool
	AltStack  savedAltStack
	RetryAt   uint64
	// Entered is thread.entered: exit, handler, interrupted place.
	Entered [3]uint64
	// Emulated is thread.emulated: exit, address.
	Emulated [2]uint64
	// Call is thread.call: number, return address; InCall, Reissue the
	// thread's flags.
	Call            [2]uint64
	InCall, Reissue bool
}

type savedAltStack struct {
	SP, Size uint64
	Flags    uint32
}

// savedWait is what a blocked thread waits on (thread.waitKey).
type savedWait struct {
	Kind  waitKind
	Ref   int   // the child's process index
	Files []int // the open files waited on (waitFiles), indices into Files
}

type waitKind uint8

const (
	waitNone  waitKind = iota
	waitFiles          // a read, write, poll or select: Files
	_                  // 2: poll's one key, before version 4
	waitSignal
	waitChildOf
	waitLock // never saved (lockWait.saved): refused
)

func (sv *saver) thread(t *thread) savedThread {
	var w savedWait
	if t.waitKey != nil {
		w = t.waitKey.saved(sv, t)
	}
	return savedThread{
		TID: t.tid, Proc: sv.procs[t.proc], State: int(t.state), Regs: t.regs, XSave: t.xsave, FSBase: t.fsBase, Comm: t.comm, ClearTID: t.clearTID,
		FutexAddr: t.futex.addr, FutexKind: t.futex.kind(), FutexMask: t.futexMask, Deadline: t.deadline, WakeErr: uint64(t.wakeErr), WaitSeq: t.waitSeq,
		Wait: w, Warned: t.warned, TimedOut: t.timedOut, Sigmask: t.sigmask, Pending: t.pending, Infos: maps.Clone(t.infos),
		SavedMask: t.savedMask, Suspended: t.suspended,
		AltStack: savedAltStack{t.altstack.sp, t.altstack.size, t.altstack.flags}, RetryAt: t.retryAt,
		Entered: [3]uint64{t.entered.exit, t.entered.handler, t.entered.from}, Emulated: [2]uint64{t.emulated.exit, t.emulated.at},
		Call: [2]uint64{t.call.nr, t.call.ret}, InCall: t.inCall, Reissue: t.reissue,
	}
}

func (fileWait) saved(sv *saver, t *thread) savedWait {
	w := savedWait{Kind: waitFiles, Files: []int{}}
	for _, f := range t.waitOn {
		w.Files = append(w.Files, sv.File(f))
	}
	return w
}

func (sigWait) saved(*saver, *thread) savedWait { return savedWait{Kind: waitSignal} }

func (k *Kernel) checkThread(s *savedKernel, t *savedThread) error {
	switch {
	case t.Proc < 0 || t.Proc >= len(s.Procs):
		return fmt.Errorf("process %d of %d", t.Proc, len(s.Procs))
	case t.State < int(runnable) || t.State > int(exited):
		return fmt.Errorf("state %d", t.State)
	case len(t.Infos) > maxSignal:
		return fmt.Errorf("%d pending signals' information", len(t.Infos))
	case !k.xsave.valid(&t.XSave):
		return fmt.Errorf("an XSAVE image KVM_SET_XSAVE would refuse")
	case !t.Wait.valid(len(s.Files), len(s.Procs)):
		return fmt.Errorf("waits on %d %d", t.Wait.Kind, t.Wait.Ref)
	case t.FutexKind > futexShared:
		return fmt.Errorf("futex kind %d", t.FutexKind)
	}
	return nil
}

// valid reports whether w names a wait kind and, for files or a child,
// ones there are.
func (w savedWait) valid(files, procs int) bool {
	switch w.Kind {
	case waitNone, waitSignal:
		return true
	case waitFiles:
		return len(w.Files) <= vfs.MaxFDs && !slices.ContainsFunc(w.Files, func(i int) bool { return i < 0 || i >= files })
	case waitChildOf:
		return w.Ref >= 0 && w.Ref < procs
	}
	return false
}

// thread builds a thread from its checked state, in a restored process.
func (r *restorer) thread(st *savedThread) *thread {
	t := &thread{k: r.k, tid: st.TID, proc: r.procs[st.Proc], state: threadState(st.State), regs: st.Regs, xsave: st.XSave,
		fsBase: st.FSBase, comm: commOf(st.Comm), clearTID: st.ClearTID, futexMask: st.FutexMask, deadline: st.Deadline,
		wakeErr: unix.Errno(st.WakeErr), waitSeq: st.WaitSeq, warned: st.Warned, timedOut: st.TimedOut,
		sigmask: st.Sigmask, pending: st.Pending, infos: st.Infos, savedMask: st.SavedMask, suspended: st.Suspended,
		altstack: altStack{st.AltStack.SP, st.AltStack.Size, st.AltStack.Flags}, retryAt: st.RetryAt,
		entered: signalEntry{st.Entered[0], st.Entered[1], st.Entered[2]}, emulated: emulation{st.Emulated[0], st.Emulated[1]},
		call: syscallAt{st.Call[0], st.Call[1]}, inCall: st.InCall, reissue: st.Reissue}
	t.futex = restoredKey(t.proc.as, st.FutexAddr, st.FutexKind)
	switch st.Wait.Kind {
	case waitFiles:
		files := make([]*openFile, len(st.Wait.Files))
		for j, f := range st.Wait.Files {
			files[j] = r.fs.Files[f]
		}
		t.waitKey = fileWait{}
		t.waitOnFiles(files)
	case waitSignal:
		t.waitKey = sigWait{}
	case waitChildOf:
		t.waitKey = waitChild{r.procs[st.Wait.Ref]}
	}
	return t
}
