package vmm

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
)

// Stats counts what the vCPU loop did.
type Stats struct {
	Exits          [32]uint64 // by kvm.ExitReason
	Interrupted    uint64     // KVM_RUN returns with EINTR (kicks and runtime signals)
	KicksSent      uint64     // signals sent to the vCPU thread
	Injected       uint64
	Hypercalls     uint64
	MSRDenied      uint64
	UnassignedMMIO uint64
	SWBCExits      uint64 // branch-counter exits at the target
	SWBCStray      uint64 // hook exits with the count away from the target (a VMM bug)
	// SWBCKickedAtTarget counts kicks (EINTR) that found the guest at its
	// armed target, in the hook between the compare and the exit.
	SWBCKickedAtTarget uint64
	// SWBCMissed counts targets the count went past without the hook
	// exiting (a replay stops with a divergence at the first).
	SWBCMissed   uint64
	ProbeHits    uint64        // probe sites hit, int3 or exit (replays with probes)
	Samples      uint64        // deterministic samples taken (replays)
	MarksDropped uint64        // HC_MARKs of ids beyond MaxMarkIDs
	DiskRefused  uint64        // disk submissions beyond abi.DiskMaxQueued
	Halted       time.Duration // time spent idle in HLT
	KernelIdles  uint64        // waits of a Kernel with nothing to run
	// Entries counts KVM_RUNs; InGuest is the time inside them (the
	// guest's and KVM's, exits included), InVMM the time on the vCPU
	// thread between one's return and the next (Halted included): the
	// VMM's own work an exit costs.
	Entries        uint64
	InGuest, InVMM time.Duration
	// ExitsBeside counts the guest exits a companion served in the vCPU
	// loop's place (ServeBeside): counted in Position.Exit, not in Exits.
	ExitsBeside uint64
}

// timeRun counts a KVM_RUN from in to out, the last having returned at
// exited (0: this is the first), all on one clock.
func (s *Stats) timeRun(in, exited, out time.Duration) {
	s.Entries++
	s.InGuest += out - in
	if exited > 0 {
		s.InVMM += in - exited
	}
}

// Round3 rounds d to three significant digits: how a time per call or
// per exit reads best.
func Round3(d time.Duration) time.Duration {
	u := time.Duration(1)
	for d/u >= 1000 || -d/u >= 1000 {
		u *= 10
	}
	return d.Round(u)
}

// VMMPerExit is the VMM's own work per exit: the time between KVM_RUNs,
// idle waits left out.
func (s *Stats) VMMPerExit() time.Duration {
	if s.Entries < 2 {
		return 0
	}
	return max(0, s.InVMM-s.Halted) / time.Duration(s.Entries-1)
}

func (s *Stats) countExit(r kvm.ExitReason) {
	if int(r) < len(s.Exits) {
		s.Exits[r]++
	}
}

// TotalExits is the number of exits of every kind.
func (s *Stats) TotalExits() uint64 {
	var n uint64
	for _, e := range s.Exits {
		n += e
	}
	return n
}

// Print writes a human-readable summary.
func (s *Stats) Print(w io.Writer) {
	exits := map[string]uint64{}
	for r, n := range s.Exits {
		if n != 0 {
			exits[kvm.ExitReason(r).String()] = n
		}
	}
	PrintCounts(w, "exits", exits)
	if s.ExitsBeside != 0 {
		fmt.Fprintf(w, "exits served beside the vCPU, without leaving the guest: %d\n", s.ExitsBeside)
	}
	fmt.Fprintf(w, "interrupts injected: %d  kicks: %d  EINTR: %d  hypercalls: %d  idle: %v\n",
		s.Injected, s.KicksSent, s.Interrupted, s.Hypercalls, s.Halted.Round(time.Millisecond))
	if s.Entries > 0 {
		fmt.Fprintf(w, "time: %v in KVM_RUN over %d entries (%v each: the guest and KVM), %v in the VMM between them (%v an exit, idle waits left out)\n",
			s.InGuest.Round(time.Millisecond), s.Entries, Round3(s.InGuest/time.Duration(s.Entries)),
			max(0, s.InVMM-s.Halted).Round(time.Millisecond), Round3(s.VMMPerExit()))
	}
	if s.SWBCExits != 0 || s.SWBCStray != 0 || s.SWBCMissed != 0 {
		fmt.Fprintf(w, "branch-counter exits: %d  stray: %d  kicked at the target: %d  targets missed: %d\n",
			s.SWBCExits, s.SWBCStray, s.SWBCKickedAtTarget, s.SWBCMissed)
	}
	if s.MarksDropped != 0 || s.DiskRefused != 0 {
		fmt.Fprintf(w, "refused: HC_MARK ids beyond %d: %d  disk requests beyond %d in flight: %d\n",
			MaxMarkIDs, s.MarksDropped, abi.DiskMaxQueued, s.DiskRefused)
	}
	if s.MSRDenied != 0 || s.UnassignedMMIO != 0 {
		fmt.Fprintf(w, "denied MSR accesses: %d  unassigned MMIO: %d\n", s.MSRDenied, s.UnassignedMMIO)
	}
}

// PrintCounts writes one line of counts by name, "what: TOTAL  name=n …",
// most frequent first (ties by name, so the line is the same every run):
// the machine's exits, and a kernel's system calls.
func PrintCounts(w io.Writer, what string, counts map[string]uint64) {
	type kv struct {
		name string
		n    uint64
	}
	var all []kv
	var total uint64
	for name, n := range counts {
		all = append(all, kv{name, n})
		total += n
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].n > all[j].n || all[i].n == all[j].n && all[i].name < all[j].name
	})
	fmt.Fprintf(w, "%s: %d", what, total)
	for _, c := range all {
		fmt.Fprintf(w, "  %s=%d", c.name, c.n)
	}
	fmt.Fprintln(w)
}
