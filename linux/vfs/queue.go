package vfs

import (
	"slices"

	"golang.org/x/sys/unix"
)

// Events are poll(2)'s event bits: what a file is ready for, and what a
// change of it may have made it ready for.
type Events int16

const (
	EventIn  Events = unix.POLLIN
	EventPri Events = unix.POLLPRI
	EventOut Events = unix.POLLOUT
	EventErr Events = unix.POLLERR
	EventHup Events = unix.POLLHUP
	// AllEvents is what a waiter registers for that wants every change:
	// a blocked reader or writer, and poll, which looks again at each.
	AllEvents = EventIn | EventPri | EventOut | EventErr | EventHup
)

// Waiter is what a Queue wakes: a blocked thread, told what changed.
type Waiter interface {
	Notify(e Events)
}

// Queue is the threads waiting on a file: those blocked reading or
// writing it, and those polling it. A change of the file notifies it.
// Which waiters are woken is the set registered for the change's events;
// the order they are told in is their registration order, which the
// kernel does not depend on (a wake only marks a thread runnable).
type Queue struct {
	waiters []registration
}

type registration struct {
	w    Waiter
	mask Events
}

// Register adds w, woken by the events of mask; registering again widens
// its mask.
func (q *Queue) Register(w Waiter, mask Events) {
	for i := range q.waiters {
		if q.waiters[i].w == w {
			q.waiters[i].mask |= mask
			return
		}
	}
	q.waiters = append(q.waiters, registration{w, mask})
}

// Unregister removes w, if registered.
func (q *Queue) Unregister(w Waiter) {
	q.waiters = slices.DeleteFunc(q.waiters, func(r registration) bool { return r.w == w })
}

// Notify tells the waiters registered for any of e. A waiter may
// unregister itself (or others) while told.
func (q *Queue) Notify(e Events) {
	for _, r := range slices.Clone(q.waiters) {
		if r.mask&e != 0 {
			r.w.Notify(e)
		}
	}
}

// Waiting is how many waiters are registered.
func (q *Queue) Waiting() int { return len(q.waiters) }
