package debugger

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/reprise-vm/reprise/vmm"
)

// The monitor commands (gdb's `monitor CMD`): where the replay is, and
// jumps — to an exit count, a record time, or a place saved with
// checkpoint. A jump replays again, as a reverse command does; gdb does
// not know the program moved, so its registers are read again after one
// (the `seek` command reprise debug defines does both).

const monitorHelp = `monitor when                    where the replay is: position EXIT:BRANCH, record time, thread
monitor seek EXIT[:BRANCH]      go to where the stretch after that exit begins
monitor seek TIME               go to the first exit at or after that record time (e.g. 2.5s, 300ms)
monitor seek #N                 go back to the place monitor checkpoint saved as N
monitor checkpoint              save this place, to go back to with seek #N
monitor checkpoints             list the saved places, and the machine checkpoints
                                going back replays from
After a jump, gdb must read the registers again: 'maintenance flush register-cache'
(reprise debug defines 'seek ARG', which does both).
`

// maxSaved bounds the places monitor checkpoint saves (each is a mark:
// an exit count and a path).
const maxSaved = 1024

// savedPlace is a place monitor checkpoint saved: its mark, and where and
// when the replay was there.
type savedPlace struct {
	mark Mark
	pos  vmm.Position
	time time.Duration
}

// exitGoal is where a seek by position or time stops: where the stretch
// of execution after the first exit at or past exit (or, exit 0, at or
// after record time time) begins. last and lastTime are the last exit the
// replay made and its time, which say where the recording ends if it
// ends first.
type exitGoal struct {
	exit     uint64
	time     time.Duration
	last     uint64
	lastTime time.Duration
}

// reached reports whether the exit just made is the goal's.
func (g *exitGoal) reached(b *Trap) bool { return g.reachedAt(b.Position().Exit, b.RecordTime()) }

// reachedAt reports whether exit, made at record time t, is the goal's.
func (g *exitGoal) reachedAt(exit uint64, t time.Duration) bool {
	g.last, g.lastTime = exit, t
	if g.exit != 0 {
		return g.last >= g.exit
	}
	return g.lastTime >= g.time
}

// monitor runs a monitor command and returns what it prints; an error
// ends the session (the replay failed).
func (s *server) monitor(cmd string) (string, error) {
	verb, arg, _ := strings.Cut(strings.TrimSpace(cmd), " ")
	arg = strings.TrimSpace(arg)
	switch verb {
	case "when":
		return s.where(), nil
	case "seek":
		return s.seek(arg)
	case "checkpoint":
		return s.checkpoint(), nil
	case "checkpoints":
		var b strings.Builder
		if len(s.saved) == 0 {
			b.WriteString("no checkpoints: monitor checkpoint saves one\n")
		}
		for i, p := range s.saved {
			fmt.Fprintf(&b, "#%d %s\n", i+1, describePlace(p.pos, p.time, p.mark.TID, p.mark.PID))
		}
		b.WriteString(s.machineCheckpoints())
		return b.String(), nil
	case "help", "":
		return monitorHelp, nil
	}
	return fmt.Sprintf("unknown monitor command %q: try monitor help\n", cmd), nil
}

// where says where the replay is stopped.
func (s *server) where() string {
	var pos vmm.Position
	var t time.Duration
	s.on(func(b *Trap) { pos, t = b.Position(), b.RecordTime() })
	return describePlace(pos, t, s.last.tid, s.last.pid) + "\n"
}

func describePlace(pos vmm.Position, t time.Duration, tid, pid int) string {
	return fmt.Sprintf("position %d:%d (exit %d), record time %v, thread %d of process %d", pos.Exit, pos.Branch, pos.Exit, t, tid, pid)
}

// checkpoint saves the place the program is stopped at.
func (s *server) checkpoint() string {
	if len(s.saved) >= maxSaved {
		return fmt.Sprintf("monitor checkpoint: at most %d checkpoints\n", maxSaved)
	}
	var p savedPlace
	s.on(func(b *Trap) { p = savedPlace{mark: s.session.now, pos: b.Position(), time: b.RecordTime()} })
	s.saved = append(s.saved, p)
	return fmt.Sprintf("checkpoint #%d: %s\n", len(s.saved), describePlace(p.pos, p.time, p.mark.TID, p.mark.PID))
}

// seek goes where arg says: an exit count (EXIT or EXIT:BRANCH, as
// monitor when prints), a record time, or a saved place (#N).
func (s *server) seek(arg string) (string, error) {
	var goal exitGoal
	switch {
	case arg == "":
		return "monitor seek: give EXIT[:BRANCH], a record time (2.5s) or #N (monitor checkpoints)\n", nil
	case strings.HasPrefix(arg, "#"):
		n, err := strconv.Atoi(arg[1:])
		if err != nil || n < 1 || n > len(s.saved) {
			return fmt.Sprintf("monitor seek: no checkpoint %s (%d saved)\n", arg, len(s.saved)), nil
		}
		return s.jump(s.saved[n-1].mark)
	case strings.IndexFunc(arg, unicode.IsLetter) >= 0:
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return fmt.Sprintf("monitor seek: %q is not a record time (e.g. 2.5s)\n", arg), nil
		}
		goal.time = d
	default:
		exit, branch, _ := strings.Cut(arg, ":")
		n, err := strconv.ParseUint(exit, 10, 64)
		if err != nil || branch != "" && branch != "0" {
			return fmt.Sprintf("monitor seek: %q is not a position (EXIT, or EXIT:0: a Linux program's positions count exits)\n", arg), nil
		}
		goal.exit = n
	}
	if goal.exit == 0 && goal.time == 0 {
		return s.jump(Mark{Start: true})
	}
	return s.seekExit(&goal)
}

// jump goes to a mark and says where that is.
func (s *server) jump(m Mark) (string, error) {
	s.watchAt = 0
	if err := s.returnTo(m); err != nil {
		return "", err
	}
	return s.where(), nil
}

// seekExit replays to goal; a recording that ends before it leaves the
// program where it was.
func (s *server) seekExit(goal *exitGoal) (string, error) {
	var now Mark
	s.on(func(*Trap) { now = s.session.now })
	from := s.before(goal.exit)
	if goal.exit == 0 {
		from = s.beforeTime(goal.time)
	}
	if err := s.replayFor(&seeker{at: goal}, from, 0); err != nil {
		return "", err
	}
	if s.over == nil {
		s.atBegin, s.watchAt = false, 0
		return s.where(), nil
	}
	s.over, s.idle = nil, true
	if err := s.returnTo(now); err != nil {
		return "", err
	}
	return fmt.Sprintf("monitor seek: the recording ends first, at exit %d (record time %v); still at %s", goal.last, goal.lastTime, s.where()), nil
}

// machineCheckpoints says where replays going back start from, and where
// the session's replays started.
func (s *server) machineCheckpoints() string {
	started := fmt.Sprintf("replays started from boot %d times, from the tape's checkpoints %d, from the session's %d\n", s.startedFrom[0], s.startedFrom[1], s.startedFrom[2])
	switch {
	case s.kit:
		return "machine checkpoints: none (a kit guest's replays start at boot); " + started
	case s.checkpoints == nil:
		return "machine checkpoints: none; " + started
	}
	all := len(s.checkpoints.Checkpoints())
	taken, full := s.checkpoints.Taken()
	out := fmt.Sprintf("machine checkpoints: %d from the tape's checkpoint file, %d taken by this session", all-taken, taken)
	if full != "" {
		out += " (it takes no more: " + full + ")"
	}
	return out + "; " + started
}
