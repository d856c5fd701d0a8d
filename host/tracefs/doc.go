// Package tracefs records the host scheduler's view of a set of threads
// (the VMM's vCPU threads) through the kernel's tracefs.
//
// Why: a recorded guest only sees its own clock jump when the host
// preempts a vCPU thread. Preemption analysis needs the host's side of the
// story: when each vCPU thread was switched out and back in, in which state
// it left the CPU (runnable = preempted, S/D = it blocked), which host task
// ran instead, when it was woken, and when it was moved to another CPU.
// sched_switch, sched_wakeup, sched_waking and sched_migrate_task give
// exactly that, with kernel timestamps.
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
//   - Options.AllSwitches drops the filter of sched_switch only. Recovering
//     the execution flow of a preempted vCPU needs every thread that ran
//     on its CPU while it waited there, and those are, by definition, not
//     the traced threads. It multiplies the event rate (thousands per
//     second on a busy host), so it is an option, and wakeups and
//     migrations stay filtered: only the traced threads' matter.
//   - sched_migrate_task, filtered like wakeups, says when and between
//     which CPUs a traced thread was moved, so an analysis knows which
//     CPU's switches to follow. It is optional, like sched_waking: kernels
//     without it still record the rest (Session.Events says what is on).
//   - The text trace_pipe is parsed (see ParseLine) instead of the binary
//     per-CPU buffers: it keeps this package small, and the hand-written
//     parser (no regexps) costs well under a microsecond per line, cheap
//     enough for all switches on the host that runs the recorded VM.
//   - The reader polls trace_pipe (see readInterval) instead of waiting in
//     the kernel: with all switches traced, the reader's own wakeups are
//     events that would wake it again, endlessly.
//   - A loss reported by the kernel is counted (Stats) and delivered as a
//     Lost with the time of the CPU's next event, so a recorder knows which
//     stretch of which CPU's history is incomplete.
//
// tracefs is optional for recording: Open returns an *UnavailableError that
// says what is missing (mount, permission, tracepoint) so a recorder can
// print "host scheduling not recorded: <err>" and go on.
package tracefs
