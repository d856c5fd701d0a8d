package tracefs

import "time"

// Event is one parsed trace_pipe line: a Switch, a Wakeup, a Migrate or a
// Lost.
type Event interface{ isEvent() }

// Switch is a sched_switch event: on CPU, Prev stopped running and Next
// started running at Time.
//
// Some kernels trace nothing a CPU's idle task does, switches away from
// it included (a 6.18 Firecracker guest never traced its CPU 1 leaving
// idle): there a thread resumed on an idle CPU has no Switch into it, and
// only its next Switch out of it says it ran.
type Switch struct {
	Time      time.Duration // CLOCK_MONOTONIC (trace_clock "mono") since boot
	CPU       int
	PrevComm  string
	PrevPID   int
	PrevPrio  int
	PrevState string // "R" or "R+" = preempted; "S", "D", ... = blocked
	NextComm  string
	NextPID   int
	NextPrio  int
}

// Wakeup is a sched_wakeup (Waking false: the task was made runnable on
// TargetCPU) or a sched_waking (Waking true: the wakeup was requested; CPU
// is the waker's CPU) event.
type Wakeup struct {
	Time      time.Duration // CLOCK_MONOTONIC since boot
	CPU       int
	Comm      string
	PID       int
	Prio      int
	TargetCPU int
	Waking    bool
}

// Migrate is a sched_migrate_task event: the task was moved from OrigCPU's
// run queue to DestCPU's. CPU is where the migration was done, which may
// be neither (load balancing runs on any CPU).
type Migrate struct {
	Time    time.Duration // CLOCK_MONOTONIC since boot
	CPU     int
	Comm    string
	PID     int
	Prio    int
	OrigCPU int
	DestCPU int
}

// Lost reports that the kernel dropped events of CPU because the trace
// buffer overflowed before it was read: they happened after the previous
// event read from CPU and before Time.
type Lost struct {
	// Time is the time of the first event read from CPU after the loss.
	// A loss line has no timestamp, so ParseLine leaves it zero and a
	// Session fills it in; if the trace ends before CPU has another event,
	// it is the time of the last event read.
	Time  time.Duration
	CPU   int
	Count int // 0: the kernel said events were lost but not how many
}

func (Switch) isEvent()  {}
func (Wakeup) isEvent()  {}
func (Migrate) isEvent() {}
func (Lost) isEvent()    {}
