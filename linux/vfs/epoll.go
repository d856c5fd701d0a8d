package vfs

import (
	"slices"

	"golang.org/x/sys/unix"
)

// Epoll's event bits beyond poll's, as epoll_ctl takes them.
const (
	EpollRDHUP     = unix.EPOLLRDHUP
	EpollExclusive = unix.EPOLLEXCLUSIVE
	EpollWakeup    = unix.EPOLLWAKEUP
	EpollOneShot   = unix.EPOLLONESHOT
	EpollET        = unix.EPOLLET
	// epollPrivate are the bits that say how an item is reported, not
	// what for: what a one-shot item keeps once it has fired.
	epollPrivate = EpollWakeup | EpollOneShot | EpollET | EpollExclusive
)

// maxEpollNesting is how deep epoll instances may watch one another
// (Linux's EP_MAX_NESTS).
const maxEpollNesting = 4

// Epoll is an epoll instance: the files it watches (its interest list,
// each item keyed by the open file and the descriptor it was added by, as
// Linux keys them) and the items that may be ready (its ready list, in
// the order they became so). A watched file's queue tells its item of a
// change; Wait looks at each item on the ready list again and reports
// those whose file is ready for what the item asks.
type Epoll struct {
	notTTY
	items  map[epollKey]*epollItem
	ready  []*epollItem
	queue  Queue
	budget *Budget
	self   *OpenFile // the instance's open file (it is opened once)
	added  uint64    // items added so far: each item's seq
}

type epollKey struct {
	file *OpenFile
	fd   int
}

// epollItem is one watched file: a Waiter on the file's queue.
type epollItem struct {
	ep      *Epoll
	key     epollKey
	events  uint32 // EPOLLIN ... with EPOLLET, EPOLLONESHOT
	data    uint64
	onReady bool   // on ep.ready
	seq     uint64 // the order it was added in: a checkpoint saves items in it
}

// EpollEvent is one reported item: what its file is ready for, and the
// data it was added with.
type EpollEvent struct {
	Events uint32
	Data   uint64
}

// NewEpoll opens an epoll instance; its items are charged to b.
func NewEpoll(b *Budget) *OpenFile {
	ep := &Epoll{items: map[epollKey]*epollItem{}, budget: b}
	ep.self = NewOpenFile(ep, "anon_inode:[eventpoll]", unix.O_RDWR)
	return ep.self
}

// EpollOf is f's epoll instance, or nil if f is not one.
func EpollOf(f *OpenFile) *Epoll {
	ep, _ := f.impl.(*Epoll)
	return ep
}

// Pollable reports whether f can be watched by epoll (Linux: its file
// has a poll method): pipes, the console, eventfds, timerfds, signalfds,
// epoll instances, sockets — not regular files, directories or
// /dev/null, which epoll_ctl refuses with EPERM.
func Pollable(f *OpenFile) bool {
	switch f.impl.(type) {
	case *PipeEnd, *Console, *EventFD, *Epoll, *TimerFD, *SignalFD, *Socket:
		return true
	}
	return false
}

// Add watches file, added by descriptor fd, for events (epoll_ctl's
// EPOLL_CTL_ADD): EEXIST if it is watched already, ELOOP if it is an
// epoll instance that watches ep or nests too deep, ENOSPC past the
// budget's watches.
func (ep *Epoll) Add(file *OpenFile, fd int, events uint32, data uint64) error {
	key := epollKey{file, fd}
	if _, ok := ep.items[key]; ok {
		return unix.EEXIST
	}
	if inner := EpollOf(file); inner != nil && (inner.watches(ep, maxEpollNesting) || ep.depth()+1+inner.height() > maxEpollNesting) {
		return unix.ELOOP
	}
	if err := ep.budget.Charge(Watches, 1); err != nil {
		return err
	}
	ep.added++
	it := &epollItem{ep: ep, key: key, events: events, data: data, seq: ep.added}
	ep.link(it)
	it.check()
	return nil
}

// link puts it on ep's interest list and its file's queue.
func (ep *Epoll) link(it *epollItem) {
	ep.items[it.key] = it
	it.key.file.watchers = append(it.key.file.watchers, it)
	if q := it.key.file.Queue(); q != nil {
		q.Register(it, AllEvents|Events(EpollRDHUP))
	}
}

// Modify changes what a watched file is watched for (EPOLL_CTL_MOD):
// ENOENT if it is not watched.
func (ep *Epoll) Modify(file *OpenFile, fd int, events uint32, data uint64) error {
	it, ok := ep.items[epollKey{file, fd}]
	if !ok {
		return unix.ENOENT
	}
	it.events, it.data = events, data
	it.check()
	return nil
}

// Delete stops watching a file (EPOLL_CTL_DEL): ENOENT if it is not
// watched.
func (ep *Epoll) Delete(file *OpenFile, fd int) error {
	it, ok := ep.items[epollKey{file, fd}]
	if !ok {
		return unix.ENOENT
	}
	it.remove()
	return nil
}

// Watched reports whether file, added by fd, is on the interest list.
func (ep *Epoll) Watched(file *OpenFile, fd int) bool {
	_, ok := ep.items[epollKey{file, fd}]
	return ok
}

// check puts it on the ready list if its file is ready for it now, as
// adding or modifying an item does.
func (it *epollItem) check() {
	if it.revents() != 0 {
		it.markReady()
	}
}

// revents is what it's file is ready for, of what it asks (error and
// hang-up always), 0 for a one-shot item that has fired.
func (it *epollItem) revents() uint32 {
	if it.events&^epollPrivate == 0 {
		return 0
	}
	return uint32(uint16(it.key.file.Readiness(Events(it.events & 0x7fff))))
}

// Notify is a change of the watched file: the item may be ready.
func (it *epollItem) Notify(e Events) {
	if uint32(uint16(e))&it.events&^epollPrivate == 0 && e&(EventHup|EventErr) == 0 {
		return
	}
	it.markReady()
}

func (it *epollItem) markReady() {
	if it.events&^epollPrivate == 0 {
		return // a one-shot item that fired: until it is modified
	}
	if !it.onReady {
		it.onReady = true
		it.ep.ready = append(it.ep.ready, it)
	}
	it.ep.queue.Notify(EventIn)
}

// remove takes it off its instance's lists and its file's queue.
func (it *epollItem) remove() {
	ep, f := it.ep, it.key.file
	delete(ep.items, it.key)
	if it.onReady {
		ep.ready = slices.DeleteFunc(ep.ready, func(o *epollItem) bool { return o == it })
		it.onReady = false
	}
	f.watchers = slices.DeleteFunc(f.watchers, func(o *epollItem) bool { return o == it })
	if q := f.Queue(); q != nil {
		q.Unregister(it)
	}
	ep.budget.Release(Watches, 1)
}

// Wait reports up to max ready items, as epoll_wait: each item on the
// ready list is looked at again; one whose file is ready is reported and,
// level-triggered, stays on the list (at its end); edge-triggered it
// leaves until its file changes again; one-shot it is disabled until
// modified. None ready: the caller waits on the instance's queue.
func (ep *Epoll) Wait(max int) []EpollEvent {
	var out []EpollEvent
	var again []*epollItem
	rest := ep.ready
	for len(rest) > 0 && len(out) < max {
		it := rest[0]
		rest = rest[1:]
		it.onReady = false
		r := it.revents()
		if r == 0 {
			continue
		}
		out = append(out, EpollEvent{r, it.data})
		switch {
		case it.events&EpollOneShot != 0:
			it.events &= epollPrivate
		case it.events&EpollET == 0:
			it.onReady = true
			again = append(again, it)
		}
	}
	ep.ready = append(slices.Clone(rest), again...)
	return out
}

// watches reports whether ep watches target, directly or through the
// instances it watches, looking depth levels down.
func (ep *Epoll) watches(target *Epoll, depth int) bool {
	if ep == target {
		return true
	}
	if depth == 0 {
		return false
	}
	for k := range ep.items {
		if inner := EpollOf(k.file); inner != nil && inner.watches(target, depth-1) {
			return true
		}
	}
	return false
}

// height is how many levels of instances ep watches below it.
func (ep *Epoll) height() int {
	h := 0
	for k := range ep.items {
		if inner := EpollOf(k.file); inner != nil {
			h = max(h, 1+inner.height())
		}
	}
	return h
}

// depth is how many levels of instances watch ep above it.
func (ep *Epoll) depth() int {
	d := 0
	for _, it := range ep.self.watchers {
		d = max(d, 1+it.ep.depth())
	}
	return d
}

func (*Epoll) Read(*OpenFile, []byte, int64) (int, error)    { return 0, unix.EINVAL }
func (*Epoll) Write(*OpenFile, []byte, int64) (int, error)   { return 0, unix.EINVAL }
func (*Epoll) Seek(*OpenFile, int64, uint64) (uint64, error) { return 0, unix.ESPIPE }
func (*Epoll) Node() *Node                                   { return nil }
func (ep *Epoll) Queue() *Queue                              { return &ep.queue }

// Readiness: readable while an item on the ready list is ready.
func (ep *Epoll) Readiness() Events {
	for _, it := range ep.ready {
		if it.revents() != 0 {
			return EventIn
		}
	}
	return 0
}

// Release stops watching every file: the instance's last descriptor
// closed.
func (ep *Epoll) Release() {
	for _, it := range ep.items {
		it.remove()
	}
}
