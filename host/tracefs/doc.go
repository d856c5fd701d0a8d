// Package tracefs records the host scheduler's view of a set of threads
// (the VMM's vCPU threads) through the kernel's tracefs.
//
// Why: a recorded guest only sees its own clock jump when the host
// preempts a vCPU thread. Preemption analysis needs the host's side of the
// story: when each vCPU thread was switched out and back in, in which state
// it left the CPU (runnable = preempted, S/D = it blocked), which host task
// ran instead, and when it was woken. sched_switch, sched_wakeup and
// sched_waking give exactly that, with kernel timestamps.
//
// Design choices:
//   - A private trace instance (instances/reprise-<pid>-<n>) is used so that
//     the global buffer and other tracers on the host are not disturbed, and
//     several sessions can run at once. Close removes it.
//   - trace_clock is set to "mono", so event times are CLOCK_MONOTONIC and
//     can be compared with unix.ClockGettime(unix.CLOCK_MONOTONIC) in Go.
//   - Events are filtered in the kernel with each event's filter file on the
//     thread IDs, which can be changed while tracing (vCPU threads appear
//     after recording starts), so the buffer only holds relevant events.
//   - The text trace_pipe is parsed (see ParseLine) instead of the binary
//     per-CPU buffers: the event rate is low after filtering and the text
//     format keeps this package small.
//
// tracefs is optional for recording: Open returns an *UnavailableError that
// says what is missing (mount, permission, tracepoint) so a recorder can
// print "host scheduling not recorded: <err>" and go on.
package tracefs
