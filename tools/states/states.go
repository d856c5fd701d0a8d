package states

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/reprise-vm/reprise/host/hostview"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tools/report"
)

// Span is a half-open time interval [Start, End) on a run's time line.
type Span struct{ Start, End time.Duration }

// Len is the span's duration.
func (s Span) Len() time.Duration { return s.End - s.Start }

// Clip returns the part of s inside w, and whether there is one.
func (s Span) Clip(w Span) (Span, bool) {
	c := Span{max(s.Start, w.Start), min(s.End, w.End)}
	return c, c.Start < c.End
}

// VCPUState is what a vCPU was doing.
type VCPUState uint8

const (
	Running   VCPUState = iota // executing guest code
	VMM                        // out of the guest, in the VMM handling an exit
	Idle                       // halted, waiting for an interrupt
	Preempted                  // its host thread wanted a host CPU and did not have one
	numVCPUStates
)

var vcpuStateNames = [...]string{Running: "RUNNING", VMM: "VMM", Idle: "IDLE", Preempted: "PREEMPTED"}

func (s VCPUState) String() string { return vcpuStateNames[s] }

// VCPUStates lists the states in display order.
func VCPUStates() []VCPUState { return []VCPUState{Running, VMM, Idle, Preempted} }

// VCPUInterval is one stretch of a vCPU in one state.
type VCPUInterval struct {
	Span
	State VCPUState
	// ExitReason, for VMM, is the exit reason that brought the vCPU out of the
	// guest (hostview.ExitInterrupted: a signal).
	ExitReason uint64
	// CPU, for Preempted, is the host CPU whose run queue it waited in
	// (-1 if unknown).
	CPU int32
}

// ExitName names an exit reason as VMM intervals carry it.
func ExitName(reason uint64) string {
	if reason == hostview.ExitInterrupted {
		return "SIGNAL"
	}
	return kvm.ExitReason(reason).String()
}

// VCPU is one vCPU's states over the run.
type VCPU struct {
	Index     uint32
	TID       uint32 // the host thread that ran it (0: unknown)
	Entries   int    // stays in the guest (KVM_RUN calls)
	Intervals []VCPUInterval
}

// Between returns the intervals overlapping w, clipped to it.
func (v *VCPU) Between(w Span) []VCPUInterval {
	return between(v.Intervals, w, func(iv *VCPUInterval) *Span { return &iv.Span })
}

// Totals sums the time spent in each state, and in the VMM by exit reason.
func (v *VCPU) Totals() (byState [numVCPUStates]time.Duration, byExit map[uint64]time.Duration) {
	byExit = map[uint64]time.Duration{}
	for _, iv := range v.Intervals {
		byState[iv.State] += iv.Len()
		if iv.State == VMM {
			byExit[iv.ExitReason] += iv.Len()
		}
	}
	return byState, byExit
}

// StateTimes is the time spent in each state by state name, the form the
// reports print and serialize, and their sum.
func (v *VCPU) StateTimes() (byName map[string]time.Duration, total time.Duration) {
	byState, _ := v.Totals()
	byName = make(map[string]time.Duration, len(byState))
	for s, d := range byState {
		byName[VCPUState(s).String()] = d
		total += d
	}
	return byName, total
}

// ThreadState is what a guest thread was doing.
type ThreadState uint8

const (
	ThreadRunning  ThreadState = iota // current on its vCPU
	ThreadRunnable                    // preempted or yielded by the guest kernel: it wants the vCPU
	ThreadBlocked                     // asleep, waiting, joined
)

var threadStateNames = [...]string{ThreadRunning: "running", ThreadRunnable: "runnable", ThreadBlocked: "blocked"}

func (s ThreadState) String() string { return threadStateNames[s] }

// ThreadInterval is one stretch of a guest thread in one state.
type ThreadInterval struct {
	Span
	State ThreadState
}

// Thread is one guest thread's states, from its first switch in to its
// exit or the end of the run.
type Thread struct {
	TID       uint32
	Intervals []ThreadInterval
}

// Current is which guest thread the vCPU's kernel had current (0: its
// idle loop).
type Current struct {
	Span
	TID uint32
}

// HostSlice is one host thread's stay on a host CPU.
type HostSlice struct {
	Span
	TID uint32
}

// Run is a run's states.
type Run struct {
	ID    uint32         // the run's id in its event DB
	Note  report.RunNote // whether it is incomplete, or newer incomplete runs were skipped
	Name  string         // the recording's name (its tape's base name)
	Span  Span           // from the first stay in the guest to the end of the last interval
	VCPUs []*VCPU
	// Sched says whether host scheduling was recorded: without it no
	// interval is Preempted and CPUs is empty. Missing says why.
	Sched   bool
	Missing string
	Current []Current          // the guest kernel's current thread over time (one vCPU)
	Threads map[uint32]*Thread // by guest thread id
	CPUs    map[uint32][]HostSlice
	Conns   []*Conn // a Linux program's door connections, by first message
	comms   map[uint32]string
	// offset is added to this run's times to put them on another run's
	// time line (Align).
	offset time.Duration
	start  time.Duration // Host.Start
}

// Comm names host thread tid.
func (r *Run) Comm(tid uint32) string {
	if tid == 0 {
		return "idle"
	}
	if c, ok := r.comms[tid]; ok {
		return c
	}
	return fmt.Sprintf("tid %d", tid)
}

// CurrentBetween returns the current threads over w, clipped to it.
func (r *Run) CurrentBetween(w Span) []Current {
	return between(r.Current, w, func(c *Current) *Span { return &c.Span })
}

// SlicesBetween returns what ran on host CPU cpu over w, clipped to it.
func (r *Run) SlicesBetween(cpu uint32, w Span) []HostSlice {
	return between(r.CPUs[cpu], w, func(s *HostSlice) *Span { return &s.Span })
}

// between returns the items of xs (in time order, disjoint) that overlap
// w, each clipped to it; span gives an item's interval.
func between[T any](xs []T, w Span, span func(*T) *Span) []T {
	i := sort.Search(len(xs), func(i int) bool { return span(&xs[i]).End > w.Start })
	var out []T
	for ; i < len(xs) && span(&xs[i]).Start < w.End; i++ {
		x := xs[i]
		*span(&x), _ = span(&x).Clip(w)
		out = append(out, x)
	}
	return out
}

// VCPUByTID returns the vCPU run by host thread tid.
func (r *Run) VCPUByTID(tid uint32) *VCPU {
	for _, v := range r.VCPUs {
		if v.TID == tid && tid != 0 {
			return v
		}
	}
	return nil
}

// ThreadIDs lists the guest threads in id order.
func (r *Run) ThreadIDs() []uint32 { return sortedKeys(r.Threads) }

// HostCPUs lists the host CPUs seen, in order.
func (r *Run) HostCPUs() []uint32 { return sortedKeys(r.CPUs) }

func sortedKeys[V any](m map[uint32]V) []uint32 {
	ids := make([]uint32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
