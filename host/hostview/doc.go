// Package hostview is what a recording saw of its host
// (docs/architecture.md, "The host view"): the VMM's own vCPU entries and
// exits with exit reasons, idle waits, hypervisor events (vCPU creation,
// interrupt lines asserted and delivered, the virtual timer programmed and
// firing), and the host scheduler's view of the vCPU threads and of every
// thread that ran on a host CPU (from package tracefs).
//
// None of it is an input of the guest: a replay does not need it and
// cannot reproduce it. The recorder stores it beside the events, in the
// tape's host frames, and the replayer copies it into the event DB where
// the preempt, overhead and timeline tools read it.
//
// Every time is CLOCK_MONOTONIC in nanoseconds, the clock tracefs stamps
// sched events with, so that the VMM's and the kernel's records, and the
// records of two VMs recorded at once on one host, share one time line.
//
// # Encoding (within a tape host frame, stable)
//
// A frame body is its records back to back. Each record is
//
//	kind u8 | fields u8 | Δtime svarint | the fields present, in bit order
//
// where Δtime is the difference from the previous record's time in the
// same body (from 0 for the first), and fields has a bit for each
// non-zero field: 0 Dur (uvarint), 1 Exit (uvarint, the difference from
// the previous record's Exit in the body that had one), 2 CPU, 3 TID,
// 4 Next, 5 Code (uvarints), 6 Arg (uvarint), 7 Text (uvarint length ≤
// 256, bytes). A reader rejects unknown kinds, fields a kind does not
// carry, and bytes left over.
package hostview
