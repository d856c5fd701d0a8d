package debugger

import (
	"bytes"
)

// A reverse continue with watched memory looks for the last write to it
// before where the program is, in two replays: the first compares the
// memory at every exit (cheap: no stepping) and finds the last stretch of
// execution that changed it; the second steps that stretch's thread from
// the stretch's first instruction and compares after each, noting the
// last change — up to where the program was, if it was in that stretch.
// A change no instruction made was the exit's own (a system call writing
// the memory): the place is then where the stretch after it began.

// watchScan is one of those searches.
type watchScan struct {
	vals [][]byte // the watched memory at the last look (nil: unreadable)
	// abs counts arrivals since the current exit, never restarted by a
	// hop (absExit is that exit): the goal's place in its stretch's own
	// count, goalAbs, for the second replay to stop at.
	abs     map[uint64]int
	absExit uint64
	goalAbs int
	// First replay: resume is where the stretch after the latest exit
	// began; start, where the last stretch that changed the memory
	// began (inGoal: the goal's own), after where the one after it did.
	resume Mark
	start  *Mark
	after  *Mark
	inGoal bool
	// Second replay (step): stepping the stretch of exit exit, until the
	// goal's arrival if it is the goal's stretch; last is the place just
	// before the instruction of the last change (where a reverse run
	// stops: gdb sees the value before the write, as with a hardware
	// watchpoint run backwards), addr the watch that changed; before is
	// the place before the latest step.
	step   bool
	exit   uint64
	until  *Hop
	last   *Mark
	addr   uint64
	before Mark
}

// look reads the watched memory again and returns the address of the
// first watch whose bytes changed since the last look (0 if none). Memory
// that was unreadable and now is, or the reverse, is no write.
func (s *Session) look(b *Trap, ws *watchScan) uint64 {
	if ws.vals == nil {
		ws.vals = make([][]byte, len(s.watches))
	}
	var changed uint64
	for i, w := range s.watches {
		now := w.read(b)
		if now != nil && ws.vals[i] != nil && !bytes.Equal(now, ws.vals[i]) && changed == 0 {
			changed = w.addr
		}
		ws.vals[i] = now
	}
	return changed
}

// countAbs counts an arrival in ws's never-restarted tally.
func (ws *watchScan) countAbs(exit, addr uint64) int {
	if exit != ws.absExit || ws.abs == nil {
		ws.abs, ws.absExit = map[uint64]int{}, exit
	}
	ws.abs[addr]++
	return ws.abs[addr]
}

// exitedScan is the first replay's look at an exit: a change since the
// last look was made by the stretch that began at ws.resume, or by this
// exit.
func (s *Session) exitedScan(b *Trap, sk *seeker) {
	ws, exit := sk.watch, b.Position().Exit
	if exit > sk.goal.Exit && !sk.window {
		return
	}
	resume := markAfterExit(b)
	if s.look(b, ws) != 0 {
		start := ws.resume
		ws.start, ws.after, ws.inGoal = &start, &resume, false
	}
	if ws.after != nil && ws.after.Exit == exit {
		ws.after = &resume // the last report of an exit is where its stretch begins
	}
	ws.resume = resume
}

// resumedScan is the first replay's look where it starts from a
// checkpoint, at one of the restored threads: the checkpoint's exit was
// told before it was taken, so without this look a write in the stretch
// after it, before the next exit, would go unseen. The running thread's
// place is where that stretch begins (an interrupt at the checkpoint's
// exit, if one comes, tells the one it runs instead).
func (s *Session) resumedScan(b *Trap, ws *watchScan, running bool) {
	s.look(b, ws)
	if running {
		ws.resume = markAfterExit(b)
	}
}

// goalScan is the first replay's look on arriving at its goal: a change
// since the last exit was made in the goal's stretch, before the goal.
func (s *Session) goalScan(b *Trap, sk *seeker) {
	ws := sk.watch
	ws.goalAbs = ws.abs[b.Regs.RIP]
	if s.look(b, ws) != 0 {
		start := ws.resume
		ws.start, ws.after, ws.inGoal = &start, nil, true
	}
}

// stepScan is a landing of the second replay's stepping: it notes a
// change, and says whether the stretch (or the goal in it) is done.
func (s *Session) stepScan(b *Trap, sk *seeker, here Mark) (done bool) {
	ws, exit := sk.watch, b.Position().Exit
	if exit != ws.exit {
		return true
	}
	n := ws.countAbs(exit, b.Regs.RIP)
	if addr := s.look(b, ws); addr != 0 {
		last := ws.before
		ws.last, ws.addr = &last, addr
	}
	ws.before = here
	return ws.until != nil && b.Regs.RIP == ws.until.Addr && n == ws.until.Count
}

// entryScan is the first replay's look on arriving at its goal, a system
// call's entry: a change since the last exit was made by the stretch that
// ends with the call, which is stepped whole.
func (s *Session) entryScan(b *Trap, ws *watchScan) {
	if s.look(b, ws) != 0 {
		start := ws.resume
		ws.start, ws.after, ws.inGoal = &start, nil, false
	}
}
