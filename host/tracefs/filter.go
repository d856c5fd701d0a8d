package tracefs

import (
	"strconv"
	"strings"
)

// noTID is a PID no task has; it makes a filter that matches nothing, so
// a session with an empty TID set records nothing instead of everything.
const noTID = -1

// noFilter, written to a filter file, removes the event's filter: the
// event is recorded for every task (Options.AllSwitches).
const noFilter = "0"

// switchFilter selects sched_switch events where one of tids leaves or
// enters a CPU.
func switchFilter(tids []int) string {
	return orFilter(tids, "prev_pid", "next_pid")
}

// pidFilter selects sched_wakeup/sched_waking/sched_migrate_task events
// of one of tids.
func pidFilter(tids []int) string {
	return orFilter(tids, "pid")
}

func orFilter(tids []int, fields ...string) string {
	if len(tids) == 0 {
		tids = []int{noTID}
	}
	var b strings.Builder
	for _, tid := range tids {
		for _, f := range fields {
			if b.Len() > 0 {
				b.WriteString(" || ")
			}
			b.WriteString(f)
			b.WriteString(" == ")
			b.WriteString(strconv.Itoa(tid))
		}
	}
	return b.String()
}
