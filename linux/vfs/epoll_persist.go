package vfs

import (
	"cmp"
	"fmt"
	"slices"
)

// SavedEpoll is an epoll instance: its items, in the order they were
// added, and its ready list.
type SavedEpoll struct {
	Items []SavedEpollItem
	Ready []int // indices into Items, in the ready list's order
}

// SavedEpollItem is one watched file.
type SavedEpollItem struct {
	File   int // index into the open files
	FD     int
	Events uint32
	Data   uint64
}

func (ep *Epoll) save(sv *Saver, s *SavedFile) {
	items := make([]*epollItem, 0, len(ep.items))
	for _, it := range ep.items {
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b *epollItem) int { return cmp.Compare(a.seq, b.seq) })
	saved := &SavedEpoll{}
	at := map[*epollItem]int{}
	for i, it := range items {
		at[it] = i
		saved.Items = append(saved.Items, SavedEpollItem{File: sv.File(it.key.file), FD: it.key.fd, Events: it.events, Data: it.data})
	}
	for _, it := range ep.ready {
		saved.Ready = append(saved.Ready, at[it])
	}
	s.Epoll = saved
}

// check refuses an instance whose items name files there are not or
// itself (self: its own index), or a file twice by one descriptor, more
// items than the budget allows, or a ready list naming an item twice.
func (s *SavedEpoll) check(self, files int) error {
	if len(s.Items) > MaxWatches || len(s.Ready) > len(s.Items) {
		return fmt.Errorf("%d items, %d ready", len(s.Items), len(s.Ready))
	}
	type key struct{ file, fd int }
	seen := map[key]bool{}
	for _, it := range s.Items {
		k := key{it.File, it.FD}
		if it.File < 0 || it.File >= files || it.File == self || it.FD < 0 || it.FD >= MaxFDs || seen[k] {
			return fmt.Errorf("item of file %d, descriptor %d", it.File, it.FD)
		}
		seen[k] = true
	}
	ready := map[int]bool{}
	for _, i := range s.Ready {
		if i < 0 || i >= len(s.Items) || ready[i] {
			return fmt.Errorf("ready item %d of %d", i, len(s.Items))
		}
		ready[i] = true
	}
	return nil
}

// checkEpollNesting refuses instances that watch one another in a cycle
// or nest deeper than Linux allows: Readiness and a change's notice
// recurse through them.
func checkEpollNesting(files []SavedFile) error {
	height := make([]int, len(files)) // -1: being looked at
	var walk func(i int) (int, error)
	walk = func(i int) (int, error) {
		switch h := height[i]; {
		case h < 0:
			return 0, fmt.Errorf("epoll instance %d watches itself", i)
		case h > 0:
			return h, nil
		}
		height[i] = -1
		h := 1
		for _, it := range files[i].Epoll.Items {
			if files[it.File].Epoll != nil {
				hi, err := walk(it.File)
				if err != nil {
					return 0, err
				}
				h = max(h, hi+1)
			}
		}
		if h > maxEpollNesting+1 {
			return 0, fmt.Errorf("epoll instance %d nests %d deep", i, h)
		}
		height[i] = h
		return h, nil
	}
	for i, f := range files {
		if f.Epoll != nil {
			if _, err := walk(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// restore links a restored instance's items to the restored files.
func (s *SavedEpoll) restore(ep *Epoll, files []*OpenFile) {
	items := make([]*epollItem, len(s.Items))
	for i, si := range s.Items {
		ep.added++
		items[i] = &epollItem{ep: ep, key: epollKey{files[si.File], si.FD}, events: si.Events, data: si.Data, seq: ep.added}
		ep.link(items[i])
	}
	for _, i := range s.Ready {
		items[i].onReady = true
		ep.ready = append(ep.ready, items[i])
	}
}
