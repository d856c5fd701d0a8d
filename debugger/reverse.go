package debugger

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/reprise-vm/reprise/rsp"
)

// Reverse execution: every command replays again (mark.go says how a
// place is found): reverse-continue scans back for the last arrival at
// gdb's breakpoints or the last write to watched memory, reverse-stepi
// steps forward from an earlier place of the thread and keeps the place
// before the last step, and each goes back to what it found.

// search runs the reverse command cmd, which gdb's interrupt gives up: a
// search may step a long stretch one instruction at a time (a write in a
// loop that computes for seconds takes hours), and Ctrl-C must end it.
// The replay under way ends at its next trap or exit, the program goes
// back to where the command found it — the search had not yet found what
// lies between there and here, so no place it reached is an answer — and
// stops there for the interrupt (SIGINT).
func (s *server) search(cmd func() (bool, error)) (bool, error) {
	var now Mark
	s.on(func(*Trap) { now = s.session.now })
	s.searching = true
	done, err := cmd()
	s.searching = false
	if !errors.Is(err, errAbandoned) {
		return done, err
	}
	s.over, s.idle = nil, true
	s.watchAt = 0
	if err := s.returnTo(now); err != nil {
		return true, err
	}
	s.session.interrupt.Store(false) // this stop answers it, and any other on the way back
	s.last.kind = stopInterrupt
	return false, s.conn.Write(s.backReply())
}

// reverseContinue runs back to the last arrival at one of gdb's
// breakpoints before where the program is stopped: it replays to here
// with them all placed, noting each arrival on the way, then replays
// again to the last one. With none, it goes back to the start of the
// history (replaylog begin).
func (s *server) reverseContinue() (bool, error) {
	s.watchAt = 0
	var now Mark
	var watching, reads bool
	var calls *syscallCatch
	var held map[int]string
	scan := map[bpKey]bool{}
	s.on(func(b *Trap) {
		now, watching, calls, held = s.session.now, len(s.session.watches) > 0, s.session.catch, exes(b)
		reads = slices.ContainsFunc(s.session.watches, func(w watch) bool { return w.kind != rsp.WatchWrite })
		for k := range s.session.user {
			scan[k] = true
		}
	})
	switch {
	case reads:
		return false, s.conn.Write([]byte("E.reprise: going back stops at writes to watched memory only: delete the rwatch and awatch watchpoints (watch is served backwards)"))
	case watching && s.kit:
		// The search for the last write looks at the memory at each exit
		// the program makes (Exited), which a kit guest's kernel does not
		// report.
		return false, s.conn.Write([]byte("E.reprise: a kit guest's watchpoints are served forwards only: delete them to go back"))
	case now.Start:
		return s.historyStart()
	}
	target, addr, err := s.scanBack(now, func() *seeker {
		sk := &seeker{scan: scan, calls: calls}
		if watching {
			sk.watch = &watchScan{}
		}
		return sk
	})
	if err != nil {
		return true, err
	}
	s.watchAt = addr
	return s.goBackTo(target, now, held)
}

// scanBack finds the last of what a seek records (fresh makes each seek)
// before now: replaying from the last checkpoint before now to now, then,
// finding nothing, stretches between earlier checkpoints, latest first
// and each twice as many checkpoints long as the one after it (a restore
// costs as much as replaying a good deal), down to boot. It returns the
// place — the start of the history if none — and, for a watch's write,
// the watch's address.
func (s *server) scanBack(now Mark, fresh func() *seeker) (Mark, uint64, error) {
	starts := s.starts()
	from, width := rankBefore(starts, now.Exit), 1
	for until := 0; ; until, from, width = from, max(from-width, 0), width*2 {
		sk := fresh()
		if until == 0 {
			sk.goal = now
			if err := s.replayAgain(sk, number(starts, from)); err != nil {
				return Mark{}, 0, err
			}
		} else if err := s.replayWindow(sk, number(starts, from), number(starts, until)); err != nil {
			return Mark{}, 0, err
		}
		target, addr, err := s.lastFound(sk, now)
		if err != nil || !target.Start || from == 0 {
			return target, addr, err
		}
	}
}

// lastFound is the last place a finished seek recorded: its last hit, or
// a later last write to watched memory (and the watch's address); the
// start of the history if none.
func (s *server) lastFound(sk *seeker, now Mark) (Mark, uint64, error) {
	target := Mark{Start: true}
	if n := len(sk.hits); n > 0 {
		target = sk.hits[n-1]
	}
	ws := sk.watch
	if ws == nil || ws.start == nil || !target.Start && ws.start.Exit < target.Exit {
		return target, 0, nil
	}
	found, addr, err := s.lastWrite(ws, now)
	if err != nil || found == nil {
		return target, 0, err
	}
	return *found, addr, nil
}

// lastWrite replays the stretch the first replay found changing the
// watched memory, stepping it, and returns the place right after its last
// change and the watch's address — or, if no instruction of it made the
// change (its exit did), where the next stretch began.
func (s *server) lastWrite(found *watchScan, now Mark) (*Mark, uint64, error) {
	ws := &watchScan{step: true, exit: found.start.Exit}
	if found.inGoal {
		ws.until = &Hop{Addr: now.Path[len(now.Path)-1].Addr, Count: found.goalAbs}
	}
	if err := s.replayAgain(&seeker{goal: *found.start, watch: ws}, s.before(found.start.Exit)); err != nil {
		return nil, 0, err
	}
	if ws.last != nil {
		return ws.last, ws.addr, nil
	}
	return found.after, 0, nil
}

// reverseStep goes back one instruction of the stopped thread: to the
// place placeBefore finds.
func (s *server) reverseStep() (bool, error) {
	s.watchAt = 0
	var now Mark
	s.on(func(*Trap) { now = s.session.now })
	// Its place is in the thread's own stretch, in the image it runs: no
	// exec is crossed, and goBackTo is given no executables to check.
	switch {
	case now.Start:
		return s.historyStart()
	case now.atExit(): // the call's SYSCALL, in the stretch its exit ends
		target, err := s.lastArrival(now, s.last.regs.RIP-2)
		switch {
		case err != nil:
			return true, err
		case target == nil:
			return false, s.conn.Write([]byte("E.reprise: cannot find the SYSCALL of this system call's entry"))
		}
		return s.goBackTo(*target, now, nil)
	}
	target, err := s.placeBefore(now)
	switch {
	case err != nil:
		return true, err
	case target == nil && s.kit:
		return false, s.conn.Write([]byte("E.reprise: cannot step back here yet: the thread's place before is known from its own last stop or its start, not from another thread's stop"))
	case target == nil:
		return false, s.conn.Write([]byte("E.reprise: cannot step back across this exit yet (only a system call's, a retried fault's, an emulated RDTSC's or a signal's delivery)"))
	}
	return s.goBackTo(*target, now, nil)
}

// placeBefore finds the place one instruction of now's thread before
// now: it replays to an earlier place of the thread in the same stretch
// between two exits — the path's previous hop, the previous arrival at
// this address, or where the stretch began (found by replaying with the
// exits watched) — and steps the thread on to now, noting the place
// before each step. At the first instruction of a stretch the place is
// across the exit (beforeExit); nil if it cannot be found.
func (s *server) placeBefore(now Mark) (*Mark, error) {
	last, prefix := now.Path[len(now.Path)-1], now.Path[:len(now.Path)-1]
	from := Mark{Exit: now.Exit, Path: slices.Clone(prefix), TID: now.TID, PID: now.PID, Image: now.Image, Time: now.Time}
	switch {
	case s.kit && last.Count == 1 && len(prefix) == 0:
		// A kit guest's path begins at boot: the thread's first arrival
		// here since then is found stepping it from its birth. (One that
		// begins at an interrupt's exit has no place before it.)
		var birth uint64
		var born bool
		s.on(func(b *Trap) { birth, born = b.Birth(now.TID) })
		if !born || birth == last.Addr || now.Exit > 0 {
			return nil, nil
		}
		from.Path = []Hop{{birth, 1, now.TID}}
	case s.kit && last.Count == 1 && prefix[len(prefix)-1].TID != now.TID:
		return nil, nil // the hop before is another thread's: where this one stood then is not known
	case last.Count > 1:
		from.Path = append(from.Path, Hop{last.Addr, last.Count - 1, last.TID})
	case len(prefix) == 0:
		sk := &seeker{goal: now, findResume: true}
		if err := s.replayAgain(sk, s.before(now.Exit)); err != nil {
			return nil, err
		}
		from = sk.resumed
		if from.TID != now.TID || from.Path[0].Addr == last.Addr {
			return s.beforeExit(now)
		}
	}
	sk := &seeker{goal: from, stepTo: last.Addr}
	if err := s.replayAgain(sk, s.before(from.Exit)); err != nil {
		return nil, err
	}
	return &sk.last, nil
}

// beforeExit finds the place before now, the first instruction of a
// stretch: the thread's SYSCALL before it (its last arrival there); after
// a fault the kernel served and the program retries (copy on write), the
// place before the attempt that faulted — the thread's last arrival at the
// same instruction, in the stretch that the fault ended; after an
// instruction the kernel emulated (an RDTSC), that instruction — the
// thread's last arrival there, in the stretch its trap ended; at a signal
// handler's entry, the place the signal interrupted — the SYSCALL it was
// delivered after, or the instruction that faulted. nil for any other
// exit.
func (s *server) beforeExit(now Mark) (*Mark, error) {
	at := now.Path[0].Addr
	var signaled, emulated bool
	var interrupted, emulatedAt uint64
	s.on(func(b *Trap) {
		exit, handler, from, ok := b.SignalEntry(now.TID)
		signaled, interrupted = ok && exit == now.Exit && handler == at, from
		exit, emulatedAt, ok = b.Emulated(now.TID)
		emulated = ok && exit == now.Exit
	})
	switch {
	case emulated: // the handler of a signal delivered as it resumed, too
		return s.lastArrival(now, emulatedAt)
	case signaled:
		if s.afterSyscall(now.PID, interrupted) {
			interrupted -= 2
		}
		return s.lastArrival(now, interrupted)
	case s.afterSyscall(now.PID, at):
		found, _, err := s.scanBack(now, s.arrivalsAt(now, at-2))
		return &found, err
	}
	found, err := s.lastArrival(now, at)
	if err != nil || found == nil {
		return nil, err
	}
	return s.placeBefore(*found)
}

// afterSyscall reports whether the instruction before va in process pid
// is a SYSCALL.
func (s *server) afterSyscall(pid int, va uint64) bool {
	var code [2]byte
	var err error
	s.on(func(b *Trap) { err = b.ReadMemory(pid, va-2, code[:]) })
	return err == nil && code == [2]byte{0x0f, 0x05}
}

// arrivalsAt makes the seeks that record now's thread's arrivals at va.
func (s *server) arrivalsAt(now Mark, va uint64) func() *seeker {
	return func() *seeker { return &seeker{scan: map[bpKey]bool{now.key(va): true}, scanTID: now.TID} }
}

// lastArrival is now's thread's last arrival at va in the stretch before
// now's (the one the exit now's stretch follows ended), nil if it has none
// there.
func (s *server) lastArrival(now Mark, va uint64) (*Mark, error) {
	found, _, err := s.scanBack(now, s.arrivalsAt(now, va))
	if err != nil || found.Start || found.TID != now.TID || found.Exit+1 != now.Exit {
		return nil, err
	}
	return &found, nil
}

// historyStart answers a reverse command at the program's first
// instruction: nothing is before it.
func (s *server) historyStart() (bool, error) {
	s.atBegin = true
	return false, s.conn.Write(s.backReply())
}

// goBackTo replays to target and reports the stop there — unless target
// is a place a scan found in an earlier image of another executable than
// the one its process runs at now, where gdb stopped (held, by pid; nil
// when the place cannot be in another image): gdb holds the later image's
// symbols, and the remote protocol cannot tell it of an exec undone, so
// it would read that code with them. Then the program goes back to now
// (the scan left it elsewhere) and gdb is told why.
func (s *server) goBackTo(target, now Mark, held map[int]string) (bool, error) {
	if was := held[target.PID]; was != "" && target.exe != "" && target.exe != was {
		if err := s.returnTo(now); err != nil {
			return true, err
		}
		return false, s.conn.Write(fmt.Appendf(nil, "E.reprise: what was found is in process %d before it ran %s, when it ran %s: going back across an exec is served into the same executable only", target.PID, was, target.exe))
	}
	if err := s.returnTo(target); err != nil {
		return true, err
	}
	return false, s.conn.Write(s.backReply())
}

// exes are the executables the processes run where the program is
// stopped at b, by pid: what gdb holds their symbols from.
func exes(b *Trap) map[int]string {
	held := map[int]string{}
	for _, t := range b.Threads() {
		if _, ok := held[t.PID]; !ok {
			held[t.PID] = b.Exe(t.PID)
		}
	}
	return held
}

// backReply answers a command that went back: the stop there — or first,
// if gdb follows processes that do not exist there (it went back before
// their fork), the end of one of them, since gdb keeps an inferior's last
// thread, whose registers would be asked for. The others are answered at
// the next resumes, and gdb is told of each fork again going forwards.
func (s *server) backReply() []byte {
	var err error
	s.on(func(b *Trap) {
		live := map[int]bool{}
		for _, t := range b.Threads() {
			live[t.PID] = true
		}
		for _, p := range slices.Sorted(maps.Keys(s.session.followed)) {
			if s.session.following(p) && !live[p] {
				err = errors.Join(err, s.session.unfollow(b, p)) // gdb's breakpoints there go with it
				delete(s.session.followed, p)
				s.gone = append(s.gone, p)
			}
		}
	})
	if err != nil {
		return rsp.Error(14)
	}
	if reply := s.goneReply(); reply != nil {
		return reply
	}
	return s.stopReply()
}

// goneReply is the end of the next process gdb is to learn went away, nil
// if none is.
func (s *server) goneReply() []byte {
	if len(s.gone) == 0 {
		return nil
	}
	p := s.gone[0]
	s.gone = s.gone[1:]
	return endReply(ProcessEnd{PID: p})
}

// returnTo replays to target (the start of the history if it has no
// path), where the program stops.
func (s *server) returnTo(target Mark) error {
	if target.Path == nil && !target.Start && !target.atExit() {
		target = Mark{Start: true}
	}
	from := 0
	if !target.Start {
		from = s.before(target.Exit)
	}
	if err := s.replayAgain(&seeker{goal: target}, from); err != nil {
		return err
	}
	s.atBegin = target.Start
	return nil
}

// replayFor ends the current replay and starts another for sk, from
// checkpoint from to checkpoint until (0: the end), and waits for its
// first stop or its end (s.over).
func (s *server) replayFor(sk *seeker, from, until int) error {
	if err := s.endReplay(); err != nil {
		return err
	}
	sk.interruptible = s.searching
	s.session.replayAgain(sk)
	s.count(from)
	go s.start(from, until)
	return s.wait()
}

// replayAgain ends the current replay and starts another, from
// checkpoint from, which stops where sk's mark is.
func (s *server) replayAgain(sk *seeker, from int) error {
	if err := s.replayFor(sk, from, 0); err != nil {
		return err
	}
	if s.over != nil {
		return fmt.Errorf("debugger: the replay ended before it came back to %+v", sk.goal)
	}
	return nil
}

// replayWindow replays from checkpoint from to checkpoint until for sk,
// which records what it scans: no stop, and no replay after.
func (s *server) replayWindow(sk *seeker, from, until int) error {
	sk.window = true
	if err := s.replayFor(sk, from, until); err != nil {
		return err
	}
	if s.over == nil {
		return errors.New("debugger: a replay between two checkpoints stopped")
	}
	s.over, s.idle = nil, true
	return nil
}

// endReplay kills the replay that runs, if one does.
func (s *server) endReplay() error {
	if s.idle {
		s.idle = false
		return nil
	}
	s.requests(resume{kill: true})
	if e := <-s.end; e.err != nil && !errors.Is(e.err, errKilled) {
		s.over = &e
		return e.err
	}
	return nil
}
