package mm

import (
	"slices"
	"sort"
)

// Range is what a Ranges list holds: a span of addresses [start, end)
// that can be cut, such as a VMA or a file mapping.
type Range[T any] interface {
	Bounds() (start, end uint64)
	// Respan is the same range over [start, end): a part of it, or (when
	// Joins allowed) it and its neighbour as one.
	Respan(start, end uint64) T
	// Joins reports whether next, which begins where it ends, is one
	// range with it.
	Joins(next T) bool
}

// Ranges is a sorted list of disjoint ranges, the one list the address
// space keeps its VMAs and its file mappings in.
type Ranges[T Range[T]] struct {
	list []T
}

// noLimit is a limit on ranges that is never reached.
const noLimit = int(^uint(0) >> 1)

// All are the ranges, in order; the caller may not change them.
func (r *Ranges[T]) All() []T { return r.list }

// clone is a copy of the list.
func (r *Ranges[T]) clone() Ranges[T] { return Ranges[T]{list: slices.Clone(r.list)} }

// index is the range holding va, or -1.
func (r *Ranges[T]) index(va uint64) int {
	i := sort.Search(len(r.list), func(i int) bool { _, end := r.list[i].Bounds(); return end > va })
	if i == len(r.list) {
		return -1
	}
	if start, _ := r.list[i].Bounds(); start > va {
		return -1
	}
	return i
}

// set puts v in the list, cutting what it covers from the ranges there
// and joining it with its neighbours where they allow; it fails rather
// than leave more than limit ranges where there were fewer. undo puts
// the ranges back.
func (r *Ranges[T]) set(v T, limit int) (undo func(), err error) {
	start, end := v.Bounds()
	return r.replace(start, end, func(add func(T)) { add(v) }, limit)
}

// remove cuts [start, end) from the ranges, within limit as set does.
func (r *Ranges[T]) remove(start, end uint64, limit int) (undo func(), err error) {
	return r.replace(start, end, func(func(T)) {}, limit)
}

// update replaces each range's part in [start, end) with f of it, within
// limit as set does: a change of protection that keeps what else each
// range is.
func (r *Ranges[T]) update(start, end uint64, f func(T) T, limit int) (undo func(), err error) {
	var parts []T
	for _, w := range r.list[r.first(start):] {
		s, e := w.Bounds()
		if s >= end {
			break
		}
		if e > start {
			parts = append(parts, f(w.Respan(max(s, start), min(e, end))))
		}
	}
	return r.replace(start, end, func(add func(T)) {
		for _, p := range parts {
			add(p)
		}
	}, limit)
}

// first is the index of the first range ending at or after va.
func (r *Ranges[T]) first(va uint64) int {
	return sort.Search(len(r.list), func(i int) bool { _, e := r.list[i].Bounds(); return e >= va })
}

// replace puts what fill adds, in order, where [start, end) was.
func (r *Ranges[T]) replace(start, end uint64, fill func(add func(T)), limit int) (undo func(), err error) {
	i := r.first(start)
	j := i
	for ; j < len(r.list); j++ {
		if s, _ := r.list[j].Bounds(); s > end {
			break
		}
	}
	was := slices.Clone(r.list[i:j])
	out := make([]T, 0, len(was)+2)
	add := func(x T) {
		if n := len(out); n > 0 && out[n-1].Joins(x) {
			s, _ := out[n-1].Bounds()
			_, e := x.Bounds()
			out[n-1] = out[n-1].Respan(s, e)
			return
		}
		out = append(out, x)
	}
	for _, w := range was {
		if s, e := w.Bounds(); s < start {
			add(w.Respan(s, min(e, start)))
		}
	}
	fill(add)
	for _, w := range was {
		if s, e := w.Bounds(); e > end {
			add(w.Respan(max(s, end), e))
		}
	}
	if n := len(r.list) - len(was) + len(out); n > limit && n > len(r.list) {
		return nil, ErrMapCount
	}
	r.list = slices.Replace(r.list, i, j, out...)
	return func() { r.list = slices.Replace(r.list, i, i+len(out), was...) }, nil
}
