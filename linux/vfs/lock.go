package vfs

import (
	"math"
	"slices"

	"golang.org/x/sys/unix"
)

// Advisory file locks, kept on the node as Linux keeps them on the inode:
// byte-range locks (fcntl's F_SETLK, owned by a process, or by an open
// file description for OFD locks) and whole-file flock locks (owned by an
// open file description). A request that conflicts with another owner's
// lock returns ErrWouldBlock: the caller answers EAGAIN for a
// non-blocking one, or waits on the node's LockQueue and asks again.

// LockOwner owns locks: a process for POSIX locks, an *OpenFile for OFD
// and flock locks. It must be comparable.
type LockOwner any

// LockToEnd is a range's End that reaches past the end of the file.
const LockToEnd = math.MaxUint64

// RangeLock is a byte-range lock on [Start, End].
type RangeLock struct {
	Owner      LockOwner
	PID        int // F_GETLK's l_pid: the owning process, -1 for an OFD lock
	Write      bool
	Start, End uint64
}

// locks are a node's locks and the threads waiting for them to change.
type locks struct {
	budget *Budget // charged a Locks for each range
	ranges []RangeLock
	flocks []flockHold
	queue  Queue
}

type flockHold struct {
	f         *OpenFile
	exclusive bool
}

func (n *Node) lockState() *locks {
	if n.locks == nil {
		n.locks = &locks{}
	}
	return n.locks
}

// LockQueue is the queue a thread waiting for n's locks waits on.
func (n *Node) LockQueue() *Queue { return &n.lockState().queue }

// HasLocks reports whether any lock is held on n.
func (n *Node) HasLocks() bool {
	return n.locks != nil && (len(n.locks.ranges) > 0 || len(n.locks.flocks) > 0)
}

// Conflict is the first lock of another owner that a lock of owner on
// [start, end] (write: exclusive) would conflict with.
func (n *Node) Conflict(owner LockOwner, write bool, start, end uint64) (RangeLock, bool) {
	if n.locks == nil {
		return RangeLock{}, false
	}
	for _, l := range n.locks.ranges {
		if l.Owner != owner && l.Start <= end && start <= l.End && (write || l.Write) {
			return l, true
		}
	}
	return RangeLock{}, false
}

// SetLock locks [start, end] for owner (write: exclusive), or unlocks it
// (unlock), as F_SETLK does: the owner's locks in the range are replaced,
// split where the range cuts them. A conflict is ErrWouldBlock; ranges
// past b's bound ENOLCK.
func (n *Node) SetLock(b *Budget, owner LockOwner, pid int, unlock, write bool, start, end uint64) error {
	if !unlock {
		if _, ok := n.Conflict(owner, write, start, end); ok {
			return ErrWouldBlock
		}
	}
	ls := n.lockState()
	ls.budget = b
	var kept []RangeLock
	released := false
	for _, l := range ls.ranges {
		if l.Owner != owner || l.End < start || end < l.Start {
			kept = append(kept, l)
			continue
		}
		released = released || l.Write || unlock
		if l.Start < start {
			left := l
			left.End = start - 1
			kept = append(kept, left)
		}
		if l.End > end {
			right := l
			right.Start = end + 1
			kept = append(kept, right)
		}
	}
	if !unlock {
		kept = append(kept, RangeLock{Owner: owner, PID: pid, Write: write, Start: start, End: end})
	}
	if grown := int64(len(kept) - len(ls.ranges)); grown > 0 {
		if err := b.Charge(Locks, grown); err != nil {
			return err
		}
	} else {
		b.Release(Locks, -grown)
	}
	ls.ranges = kept
	if released {
		ls.queue.Notify(AllEvents)
	}
	return nil
}

// ReleaseLocks drops every range lock of owner on n (a process closed a
// descriptor of the file, or exited; an open file description went).
func (n *Node) ReleaseLocks(owner LockOwner) {
	if n.locks == nil {
		return
	}
	before := len(n.locks.ranges)
	n.locks.ranges = slices.DeleteFunc(n.locks.ranges, func(l RangeLock) bool { return l.Owner == owner })
	if gone := before - len(n.locks.ranges); gone > 0 {
		n.locks.budget.Release(Locks, int64(gone))
		n.locks.queue.Notify(AllEvents)
	}
}

// Flock is flock(2) on n for the open file f: LOCK_SH, LOCK_EX or
// LOCK_UN. Converting a lock drops the old one first, as Linux does. A
// conflict is ErrWouldBlock.
func (n *Node) Flock(f *OpenFile, op int) error {
	ls := n.lockState()
	i := slices.IndexFunc(ls.flocks, func(h flockHold) bool { return h.f == f })
	exclusive := op == unix.LOCK_EX
	if i >= 0 {
		if op != unix.LOCK_UN && ls.flocks[i].exclusive == exclusive {
			return nil
		}
		ls.flocks = slices.Delete(ls.flocks, i, i+1)
		ls.queue.Notify(AllEvents)
	}
	if op == unix.LOCK_UN {
		return nil
	}
	for _, h := range ls.flocks {
		if exclusive || h.exclusive {
			return ErrWouldBlock
		}
	}
	ls.flocks = append(ls.flocks, flockHold{f, exclusive})
	return nil
}

// releaseLocks drops the OFD and flock locks f holds on its node.
func (f *OpenFile) releaseLocks() {
	n := f.Node()
	if n == nil || n.locks == nil {
		return
	}
	n.ReleaseLocks(f)
	if i := slices.IndexFunc(n.locks.flocks, func(h flockHold) bool { return h.f == f }); i >= 0 {
		n.locks.flocks = slices.Delete(n.locks.flocks, i, i+1)
		n.locks.queue.Notify(AllEvents)
	}
}
