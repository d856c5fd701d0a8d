package linux

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reprise-vm/reprise/vmm"
)

// Stats counts the system calls a run made.
type Stats struct {
	Calls       map[string]uint64 // by name
	Unsupported map[string]uint64 // answered ENOSYS, by name
	// Served is the VMM's time serving each call, by name, since the
	// kernel booted or was restored: host time, which a checkpoint does
	// not keep.
	Served map[string]Served
	// Warnings say what the run could not do as the program expected,
	// once each: a thread that kept the CPU from runnable ones.
	Warnings []string
	// StaleTranslations counts the faults retried after dropping KVM's
	// stale translations (stale.go).
	StaleTranslations uint64
	// FastAnswered counts the system calls served beside the vCPU
	// without an exit (fastcall.go), FastFinished those served beside
	// whose end took an exit, FastRefused those left to an exit
	// unserved, FastLate those whose spin ran out before they were
	// claimed, FastAtCPL0 those made where SYSCALL enters CPL0 (VMX and
	// SVM hosts), which exit at once.
	FastAnswered, FastFinished, FastRefused, FastLate, FastAtCPL0 uint64
}

// Served is the VMM's time serving one system call: from the exit that
// brought it, as the vCPU loop measured it, to the call's return.
type Served struct {
	Calls uint64
	Time  time.Duration
}

// Each is the time a call took on average.
func (s Served) Each() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Time / time.Duration(s.Calls)
}

// callCounts counts the calls made since the kernel's Stats were set (at
// boot or a restore) by number, in arrays the size of the table: a loop of
// system calls makes hundreds of thousands, each of which a map update
// by name would cost more than some handlers do. Numbers past the table,
// which no program makes but a hostile one, go to the Stats' maps, each
// by its own name up to maxPastTable of them, the rest under one.
type callCounts struct {
	calls, unsupported [tableSize]uint64
	served             [tableSize]Served
	pastNamed          int // numbers past the table given names of their own
}

// maxPastTable bounds the names the counts of numbers past the table
// take: a program could make calls with 2^64 numbers.
const maxPastTable = 64

// pastTable names the calls past the table beyond maxPastTable numbers.
var pastTable = fmt.Sprintf("syscall (other numbers from %d)", tableSize)

// countsSince are the counts of a kernel whose Stats hold calls already
// (restored): the names of numbers past the table among them count
// towards maxPastTable.
func countsSince(calls map[string]uint64) callCounts {
	var c callCounts
	for name := range calls {
		// Linux names no number past the table: those are "syscall N".
		if n, ok := strings.CutPrefix(name, "syscall "); ok {
			if nr, err := strconv.ParseUint(n, 10, 64); err == nil && nr >= tableSize {
				c.pastNamed++
			}
		}
	}
	return c
}

// call counts one call to nr, and whether it was answered ENOSYS.
func (c *callCounts) call(s *Stats, nr uint64, supported bool) {
	if nr >= uint64(len(c.calls)) {
		name := unknownName(nr)
		if _, ok := s.Calls[name]; !ok {
			if c.pastNamed >= maxPastTable {
				name = pastTable
			} else {
				c.pastNamed++
			}
		}
		s.Calls[name]++
		if !supported {
			s.Unsupported[name]++
		}
		return
	}
	c.calls[nr]++
	if !supported {
		c.unsupported[nr]++
	}
}

// serve adds d to the time serving nr.
func (c *callCounts) serve(nr uint64, d time.Duration) {
	if nr < uint64(len(c.served)) {
		c.served[nr].Calls++
		c.served[nr].Time += d
	}
}

// add returns s with the counts added, in maps of its own.
func (c *callCounts) add(s Stats) Stats {
	out := s
	out.Calls, out.Unsupported, out.Served = cloneMap(s.Calls), cloneMap(s.Unsupported), cloneMap(s.Served)
	out.Warnings = slices.Clone(s.Warnings)
	for nr := range c.calls {
		if c.calls[nr] == 0 {
			continue
		}
		name := callName(uint64(nr))
		out.Calls[name] += c.calls[nr]
		if n := c.unsupported[nr]; n > 0 {
			out.Unsupported[name] += n
		}
		if sv := c.served[nr]; sv.Calls > 0 {
			t := out.Served[name]
			out.Served[name] = Served{t.Calls + sv.Calls, t.Time + sv.Time}
		}
	}
	return out
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return maps.Clone(m)
}

// Unimplemented lists the calls answered ENOSYS with their counts, or "".
func (s Stats) Unimplemented() string {
	names := slices.Sorted(maps.Keys(s.Unsupported))
	for i, n := range names {
		names[i] = fmt.Sprintf("%s ×%d", n, s.Unsupported[n])
	}
	return strings.Join(names, ", ")
}

// servedShown is how many calls Print times, those the VMM spent most on.
const servedShown = 10

// Print writes the counts, most frequent first, the VMM's time on the
// calls it spent most on, and the calls answered ENOSYS.
func (s Stats) Print(w io.Writer) {
	vmm.PrintCounts(w, "system calls", s.Calls)
	if len(s.Served) > 0 {
		names := slices.SortedFunc(maps.Keys(s.Served), func(a, b string) int {
			return cmp.Or(cmp.Compare(s.Served[b].Time, s.Served[a].Time), cmp.Compare(a, b))
		})
		var total Served
		for _, sv := range s.Served {
			total = Served{total.Calls + sv.Calls, total.Time + sv.Time}
		}
		each := make([]string, 0, servedShown)
		for _, n := range names[:min(len(names), servedShown)] {
			each = append(each, fmt.Sprintf("%s=%v", n, vmm.Round3(s.Served[n].Each())))
		}
		fmt.Fprintf(w, "VMM time per system call, exit to return: %v on average  %s\n", vmm.Round3(total.Each()), strings.Join(each, "  "))
	}
	if s.FastAnswered+s.FastFinished+s.FastRefused+s.FastLate+s.FastAtCPL0 > 0 {
		fmt.Fprintf(w, "exception-less system calls: %d answered without an exit, %d finished by one; %d refused, %d not claimed in time, %d made at CPL0 (exiting at once)\n",
			s.FastAnswered, s.FastFinished, s.FastRefused, s.FastLate, s.FastAtCPL0)
	}
	if s.StaleTranslations > 0 {
		fmt.Fprintf(w, "faults of stale host translations retried: %d\n", s.StaleTranslations)
	}
	for _, warning := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	if u := s.Unimplemented(); u != "" {
		fmt.Fprintf(w, "answered ENOSYS (not implemented): %s\n", u)
	}
}
