// Package states rebuilds, from a run's events, who held what and when:
// each vCPU's state (in the guest, in the VMM, idle, preempted by the
// host), which guest thread was current on it and each guest thread's
// state (running, runnable, blocked), and what ran on every host CPU.
// The preempt, overhead and timeline tools are views of it.
//
// vCPU states come from the VMM's own record of every stay in the guest
// and every idle wait (eventdb.KindVCPURun, KindVCPUIdle); the gaps
// between them are VMM time, charged to the exit that opened them. Host
// scheduling (KindHostSwitch, KindHostWakeup, KindHostMigrate), when it
// was recorded, overrides them: a vCPU thread that was switched out
// runnable, or woken but not yet running, was preempted, whatever the
// VMM thought it was doing — the VMM cannot see its own thread waiting.
//
// Guest thread states come from the guest kernel's context switches
// (eventdb.KindSwitch) and their reasons; their times are record times
// interpolated between the tape's events (docs/architecture.md, "The guest
// kit": the trace ring's record times).
//
// Everything is on the recording's time line (eventdb.Event.Time); Align
// moves another recording's run onto it through the two host views'
// common CLOCK_MONOTONIC.
package states
