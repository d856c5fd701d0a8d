package debugger

import (
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/rsp"
)

// Replay runs the replay a server debugs, with the session as its
// debugger (replayer.Options.Debugger), from checkpoint from (numbered
// as Checkpoints lists them, from 1; 0: from boot) to checkpoint until
// (0: the end), and returns its exit status.
type Replay func(s *Session, from, until int) (status uint32, err error)

// ended is the replay's end: the program exited (err nil) or the replay
// failed.
type ended struct {
	status uint32
	err    error
}

// server is one gdb client's connection to a replay. It answers packets
// on one goroutine; until acks are off it reads them there too (a Conn
// waits for acks on the stream it reads), after on a reader goroutine, so
// that an interrupt (0x03) reaches a running program: it stops at its
// next exit.
type server struct {
	conn    *rsp.Conn
	session *Session
	replay  Replay
	// checkpoints are where a replay again may start (nil: boot only);
	// startedFrom counts the replays started from boot, from the tape's
	// checkpoint file and from the session's own checkpoints.
	checkpoints Checkpoints
	startedFrom [3]int
	end         chan ended
	// last is where the program last stopped; over, once the replay
	// ended, how.
	last stop
	over *ended
	// gThread is the thread register and memory reads are of (Hg); first
	// the process the replay started with.
	gThread rsp.ThreadID
	first   int
	// kit: the program is a kit guest.
	kit bool
	// packets are the client's packets once acks are off (read), pending
	// those that came while the program ran.
	packets chan packet
	pending []packet
	done    chan struct{} // closed when Serve returns: the reader ends
	// idle: no replay runs (one between two checkpoints ended).
	idle bool
	// atBegin: a reverse continue found nothing before and went back to
	// the start of the history; watchAt, that it stopped after a write to
	// the watch at that address.
	atBegin bool
	watchAt uint64
	// saved are the places monitor checkpoint saved, in order.
	saved []savedPlace
	// keepAlive, while a monitor command runs, has wait send gdb an empty
	// output packet every second: gdb waits for its answer 2 s at a
	// time, complaining each time it does not come.
	keepAlive bool
	// files are the files gdb opened by host I/O (files.go: /proc's, the
	// program's mapped ones), by descriptor; fsPID the process
	// vFile:setfs named (0: none).
	files map[int][]byte
	fsPID int
	// gone are processes gdb followed that a command going back left
	// behind (before their fork), whose ends gdb is yet to be told of.
	gone []int
	// searching: a reverse command runs, whose replays gdb's interrupt
	// gives up (search).
	searching bool
}

// Serve debugs the replay run starts for the gdb client on rw until the
// client detaches, kills it or goes, or the replay ends and the client
// leaves. checkpoints are those run can start from (nil: none). It
// returns the replay's error, if any, or the connection's.
func Serve(rw io.ReadWriter, run Replay, checkpoints Checkpoints) error {
	s := &server{conn: rsp.NewConn(rw), session: NewSession(), replay: run, checkpoints: checkpoints, end: make(chan ended, 1), done: make(chan struct{})}
	defer close(s.done)
	s.count(0)
	go s.start(0, 0)
	if err := s.wait(); err != nil {
		return err
	}
	s.first = s.last.pid
	s.on(func(b *Trap) { s.kit = b.Kit })
	for {
		payload, err := s.next()
		switch {
		case errors.Is(err, rsp.ErrInterrupt):
			continue // the program is stopped already
		case err != nil:
			return s.leave(err)
		}
		cmd, err := rsp.Parse(payload)
		if err != nil {
			if err := s.conn.Write(rsp.Error(22)); err != nil { // EINVAL
				return s.leave(err)
			}
			continue
		}
		done, err := s.handle(cmd)
		if err != nil || done {
			return s.leave(err)
		}
	}
}

// maxPending bounds the packets kept while the program runs (gdb sends
// none but the interrupt then).
const maxPending = 16

// packet is a packet the reader read, or its error.
type packet struct {
	payload []byte
	err     error
}

// start runs a replay of the session's from checkpoint from to
// checkpoint until. On its own goroutine.
func (s *server) start(from, until int) {
	status, err := s.replay(s.session, from, until)
	s.end <- ended{status, err}
}

// next is the client's next packet: one that came while the program ran,
// else the next read.
func (s *server) next() ([]byte, error) {
	if len(s.pending) > 0 {
		p := s.pending[0]
		s.pending = s.pending[1:]
		return p.payload, p.err
	}
	if s.packets != nil {
		p := <-s.packets
		return p.payload, p.err
	}
	return s.conn.Read()
}

// read hands the client's packets to the server once acks are off (a
// Conn then reads on one goroutine while it writes on another), so that
// an interrupt reaches a running program.
func (s *server) read() {
	for {
		b, err := s.conn.Read()
		select {
		case s.packets <- packet{b, err}:
		case <-s.done:
			return
		}
		if err != nil && !errors.Is(err, rsp.ErrInterrupt) {
			return
		}
	}
}

// wait waits for the program's next stop or the replay's end. An
// interrupt meanwhile asks the program to stop at its next exit; another
// packet waits for the stop. For a monitor command (keepAlive), gdb is
// sent an empty output packet every second.
func (s *server) wait() error {
	var tick <-chan time.Time
	var gone error
	if s.keepAlive {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	for {
		packets := s.packets
		if len(s.pending) >= maxPending {
			packets = nil // the reader waits, and the client with it
		}
		select {
		case st := <-s.session.stops:
			s.last = st
			s.gThread = rsp.ThreadID{PID: st.pid, TID: st.tid}
			return gone
		case e := <-s.end:
			s.over = &e
			return e.err
		case <-tick:
			if err := s.conn.Write(rsp.Output(nil)); err != nil {
				// The client is gone: stop the program, as for an
				// interrupt, and end with the stop.
				s.session.interrupt.Store(true)
				tick, gone = nil, err
			}
		case p := <-packets:
			if p.err != nil { // an interrupt, or a client gone: stop it
				s.session.interrupt.Store(true)
			}
			if !errors.Is(p.err, rsp.ErrInterrupt) {
				s.pending = append(s.pending, p)
			}
		}
	}
}

// leave ends the session: a program still stopped is killed (the client
// went without detaching). It returns the replay's error, if it failed,
// else a ClientError for a connection that broke (connErr: what Serve's
// last read or write met; nil or EOF when the client ended it).
func (s *server) leave(connErr error) error {
	if s.over == nil {
		s.session.detached.Store(true)
		s.requests(resume{kill: true})
		e := <-s.end
		s.over = &e
	}
	switch {
	case s.over.err != nil && !errors.Is(s.over.err, errKilled):
		return s.over.err
	case connErr != nil && !errors.Is(connErr, io.EOF):
		return &ClientError{connErr}
	}
	return nil
}

// ClientError is a gdb client's connection that broke, or that sent what
// the protocol does not allow (a packet past rsp.MaxPacket): the session
// ended, the replay with it.
type ClientError struct{ Err error }

func (e *ClientError) Error() string { return "gdb client: " + e.Err.Error() }
func (e *ClientError) Unwrap() error { return e.Err }

// requests ends the stop with r.
func (s *server) requests(r resume) { s.session.requests <- request{resume: &r} }

// on runs f on the stopped machine.
func (s *server) on(f func(b *Trap)) {
	done := make(chan struct{})
	s.session.requests <- request{do: f, done: done}
	<-done
}

// supported answers gdb's qSupported: what the server does, with fork
// and exec events if gdb takes them (a vfork is a fork here: its child's
// memory is a copy).
func (s *server) supported(q rsp.QSupported) []byte {
	features := slices.Clone(supported)
	var forks, execs bool
	for _, f := range q.Features {
		switch f {
		case "fork-events+":
			forks = true
			features = append(features, f)
		case "exec-events+":
			execs = true
			features = append(features, f)
		}
	}
	if s.over == nil {
		s.on(func(*Trap) { s.session.tellForks, s.session.tellExecs = forks, execs })
	}
	if !s.kit {
		features = append(features, "QCatchSyscalls+")
	}
	return rsp.Supported(features...)
}

// detachOne lets gdb stop following process pid, if it follows others:
// the program runs on, gdb's breakpoints and watches in pid gone. one is
// false for a detach of everything, which ends the session.
func (s *server) detachOne(pid int) (one bool, err error) {
	if pid == rsp.Any {
		return false, nil
	}
	s.on(func(b *Trap) {
		for p, on := range s.session.followed {
			one = one || on && p != pid
		}
		if one {
			err = s.session.unfollow(b, pid)
		}
	})
	return one, err
}

// supported is what the server always tells gdb it does (qSupported; the
// packet size rsp.Supported gives).
var supported = []string{
	"QStartNoAckMode+", "multiprocess+", "swbreak+", "hwbreak+", "vContSupported+", "ReverseContinue+", "ReverseStep+",
	"qXfer:features:read+", "qXfer:auxv:read+", "qXfer:exec-file:read+",
}

// errReadOnly answers a write to memory or registers: the past is fixed.
var errReadOnly = []byte("E.reprise: a replay cannot change its past")

// handle answers one command; done says the session is over.
func (s *server) handle(cmd rsp.Command) (done bool, err error) {
	if s.over != nil {
		return s.afterEnd(cmd)
	}
	var reply []byte
	switch c := cmd.(type) {
	case rsp.QSupported:
		reply = s.supported(c)
	case rsp.StartNoAckMode:
		if err := s.conn.Write(rsp.OK()); err != nil {
			return true, err
		}
		s.conn.SetNoAck()
		s.packets = make(chan packet)
		go s.read()
		return false, nil
	case rsp.QueryAttached:
		reply = []byte("1")
	case rsp.QuerySymbol:
		reply = rsp.OK()
	case rsp.Monitor:
		s.keepAlive = true
		out, err := s.monitor(c.Command)
		s.keepAlive = false
		if err != nil {
			return true, err
		}
		reply = rsp.Hex([]byte(out))
	case rsp.XferRead:
		reply = s.xfer(c)
	case rsp.QueryCurrentThread:
		reply = rsp.CurrentThread(rsp.ThreadID{PID: s.last.pid, TID: s.last.tid})
	case rsp.ThreadInfoFirst:
		reply = rsp.ThreadList(s.threads())
	case rsp.ThreadInfoNext:
		reply = rsp.ThreadList(nil)
	case rsp.ThreadExtraInfo:
		reply = rsp.Hex([]byte(s.threadName(c.Thread)))
	case rsp.ThreadAlive:
		reply = rsp.Error(3) // ESRCH
		if s.thread(c.Thread) != nil {
			reply = rsp.OK()
		}
	case rsp.SetThread:
		reply = rsp.OK()
		if c.Op == 'g' {
			s.gThread = c.Thread
			if t := s.thread(c.Thread); t != nil {
				s.gThread = rsp.ThreadID{PID: t.PID, TID: t.TID}
			} else {
				// Reads and breakpoints there fail rather than reach
				// another thread (gdb goes on whatever the reply): a
				// fork's child gdb detaches from may be gone already.
				reply = rsp.Error(3)
			}
		}
	case rsp.ReadRegisters:
		reply = s.registers(-1)
	case rsp.ReadRegister:
		reply = s.registers(c.Reg)
	case rsp.WriteRegisters, rsp.WriteRegister, rsp.WriteMemory:
		reply = errReadOnly
	case rsp.ReadMemory:
		reply = s.memory(c.Addr, c.Length)
	case rsp.InsertBreak:
		reply = s.breakpoint(c.Kind, c.Addr, c.Size, true)
	case rsp.RemoveBreak:
		reply = s.breakpoint(c.Kind, c.Addr, c.Size, false)
	case rsp.StopReason:
		reply = s.stopReply()
	case rsp.FileSetFS, rsp.FileOpen, rsp.FilePread, rsp.FileClose, rsp.FileReadlink:
		reply = s.file(c)
	case rsp.CatchSyscalls:
		reply = s.catchSyscalls(c)
	case rsp.VContQuery:
		reply = []byte("vCont;c;C;s;S;r")
	case rsp.Continue, rsp.ContinueWithSignal:
		return s.run(resume{watch: true})
	case rsp.Step, rsp.StepWithSignal:
		return s.run(resume{step: map[int]addrRange{s.last.tid: {}}, watch: true})
	case rsp.ReverseContinue:
		return s.search(s.reverseContinue)
	case rsp.ReverseStep:
		return s.search(s.reverseStep)
	case rsp.VCont:
		r, ok := s.vcont(c)
		if !ok {
			reply = rsp.Error(3) // ESRCH: a thread to step that is not there
			break
		}
		return s.run(r)
	case rsp.Kill:
		s.requests(resume{kill: true})
		e := <-s.end
		s.over = &e
		if c.PID != rsp.Any {
			return true, s.conn.Write(rsp.OK())
		}
		return true, nil
	case rsp.Detach:
		if one, err := s.detachOne(c.PID); one {
			reply = rsp.OK()
			if err != nil {
				reply = rsp.Error(14)
			}
			break
		}
		s.session.detached.Store(true)
		s.on(func(b *Trap) { err = s.session.clearAll(b) })
		if err != nil {
			return true, err
		}
		if err := s.conn.Write(rsp.OK()); err != nil {
			return true, err
		}
		s.requests(resume{})
		e := <-s.end
		s.over = &e
		return true, e.err
	default: // unknown, or not supported here: gdb learns so from ""
	}
	return false, s.conn.Write(reply)
}

// afterEnd answers the client once the replay ended: its exit status,
// and nothing to read.
func (s *server) afterEnd(cmd rsp.Command) (done bool, err error) {
	switch c := cmd.(type) {
	case rsp.Kill:
		if c.PID != rsp.Any {
			return true, s.conn.Write(rsp.OK())
		}
		return true, nil
	case rsp.Detach:
		return true, s.conn.Write(rsp.OK())
	case rsp.QSupported:
		return false, s.conn.Write(s.supported(c))
	case rsp.StopReason, rsp.Continue, rsp.Step, rsp.VCont, rsp.ContinueWithSignal, rsp.StepWithSignal:
		return false, s.conn.Write(s.exitReply())
	}
	return false, s.conn.Write(rsp.Error(3)) // ESRCH: no process
}

// run resumes the program and reports where it stops next, or its end.
func (s *server) run(r resume) (bool, error) {
	s.atBegin, s.watchAt = false, 0
	if reply := s.goneReply(); reply != nil {
		return false, s.conn.Write(reply) // not run: told first
	}
	s.requests(r)
	if err := s.wait(); err != nil {
		return true, err
	}
	if s.over != nil {
		return false, s.conn.Write(s.exitReply())
	}
	return false, s.conn.Write(s.stopReply())
}

// vcont is a vCont's resume: the threads its s and r actions name step
// (one naming every thread steps the one that stopped), an r's on while
// it stays in its range; c and the rest run. ok is false if a thread to
// step is not a live one.
func (s *server) vcont(c rsp.VCont) (r resume, ok bool) {
	r.watch, r.step = true, map[int]addrRange{}
	for _, a := range c.Actions {
		if a.Kind != 's' && a.Kind != 'S' && a.Kind != 'r' {
			continue
		}
		t := s.thread(a.Thread)
		if t == nil {
			return r, false
		}
		r.step[t.TID] = addrRange{a.RangeStart, a.RangeEnd}
	}
	return r, true
}

// stopReply is the T packet of the last stop: SIGTRAP, the thread, its
// frame registers, and swbreak at a breakpoint (its pc the breakpoint's);
// or a followed process's end.
func (s *server) stopReply() []byte {
	st := s.last
	if st.kind == stopEnd {
		return endReply(st.ended)
	}
	sig := rsp.SigTrap
	if st.kind == stopInterrupt {
		sig = rsp.SigInt
	}
	r := rsp.StopReply{Signal: sig, Thread: rsp.ThreadID{PID: st.pid, TID: st.tid},
		Regs: []rsp.RegValue{{Num: 6, Value: word64(st.regs.RBP)}, {Num: 7, Value: word64(st.regs.RSP)}, {Num: 16, Value: word64(st.regs.RIP)}}}
	switch {
	case s.atBegin:
		r.Reason, r.ReasonValue = rsp.ReasonReplayLog, "begin"
	case s.watchAt != 0:
		r.Reason, r.ReasonValue = rsp.ReasonWatch, strconv.FormatUint(s.watchAt, 16)
	case st.kind == stopBreak:
		r.Reason = rsp.ReasonSwBreak
	case st.kind == stopWatch:
		r.Reason, r.ReasonValue = watchReasons[st.watchKind], strconv.FormatUint(st.watch, 16)
	case st.kind == stopFork:
		r.Reason, r.ReasonValue = rsp.ReasonFork, rsp.ThreadID{PID: st.child, TID: st.child}.String()
	case st.kind == stopExec:
		r.Reason, r.ReasonValue = rsp.ReasonExec, hex.EncodeToString([]byte(st.exe))
	case st.kind == stopSyscall && st.call.entry:
		r.Reason, r.ReasonValue = rsp.ReasonSyscallEntry, strconv.FormatUint(st.call.nr, 16)
	case st.kind == stopSyscall:
		r.Reason, r.ReasonValue = rsp.ReasonSyscallReturn, strconv.FormatUint(st.call.nr, 16)
	}
	return r.Encode()
}

// exitReply says the replay ended: the program's exit status, or (the
// replay failed) SIGKILL — of the first process if gdb follows it, else of
// the first it follows, which the run's end killed.
func (s *server) exitReply() []byte {
	if !s.session.following(s.first) {
		for _, p := range slices.Sorted(maps.Keys(s.session.followed)) {
			if s.session.following(p) {
				return endReply(ProcessEnd{PID: p, Signal: int(unix.SIGKILL)})
			}
		}
	}
	if s.over.err != nil {
		return endReply(ProcessEnd{PID: s.first, Signal: int(unix.SIGKILL)})
	}
	return endReply(ProcessEnd{PID: s.first, Code: uint8(s.over.status)})
}

// endReply is the W or X stop reply of a process's end.
func endReply(e ProcessEnd) []byte {
	if e.Signal != 0 {
		return rsp.Killed{Signal: rsp.LinuxSignal(e.Signal), PID: e.PID}.Encode()
	}
	return rsp.Exited{Code: e.Code, PID: e.PID}.Encode()
}

// threads lists the live threads of the processes gdb follows.
func (s *server) threads() []rsp.ThreadID {
	var out []rsp.ThreadID
	s.on(func(b *Trap) {
		for _, t := range b.Threads() {
			if s.session.following(t.PID) {
				out = append(out, rsp.ThreadID{PID: t.PID, TID: t.TID})
			}
		}
	})
	return out
}

// thread is the live thread of a followed process that id names — for
// every or any thread, the one that stopped, or the first of the process
// id names — nil if none.
func (s *server) thread(id rsp.ThreadID) *ThreadInfo {
	pid, tid := id.PID, id.TID
	anyPID := pid == rsp.All || pid == rsp.Any
	if tid == rsp.All || tid == rsp.Any {
		tid = rsp.Any
		if anyPID || pid == s.last.pid {
			tid = s.last.tid
		}
	}
	var found *ThreadInfo
	s.on(func(b *Trap) {
		for _, t := range b.Threads() {
			if s.session.following(t.PID) && (anyPID || t.PID == pid) && (tid == rsp.Any || t.TID == tid) {
				found = &t
				return
			}
		}
	})
	return found
}

func (s *server) threadName(id rsp.ThreadID) string {
	if t := s.thread(id); t != nil {
		return t.Name
	}
	return ""
}

// registers is the 'g' reply of the Hg thread (reg < 0), or one
// register's 'p' reply.
func (s *server) registers(reg int) []byte {
	if reg >= len(registers) {
		return rsp.Error(22)
	}
	var state ThreadState
	var ok bool
	var err error
	s.on(func(b *Trap) { state, ok, err = b.State(s.gThread.TID) })
	if st := s.last; st.kind == stopSyscall && st.tid == s.gThread.TID {
		state.OrigRAX = st.call.nr // at a return too, as Linux's syscall-exit stop shows it
	}
	switch {
	case err != nil || !ok:
		return rsp.Error(3)
	case reg < 0:
		return rsp.Hex(registerBytes(&state))
	}
	return rsp.Hex(registers[reg].value(&state, state.XSave.Bytes()))
}

// memory is the 'm' reply: what of [addr, addr+n) the Hg thread's
// process can read, from addr on; EFAULT if none.
func (s *server) memory(addr, n uint64) []byte {
	buf := make([]byte, n)
	got := 0
	s.on(func(b *Trap) {
		for got < len(buf) {
			end := min(len(buf), got+int(4096-(addr+uint64(got))%4096))
			if b.ReadMemory(s.gThread.PID, addr+uint64(got), buf[got:end]) != nil {
				return
			}
			got = end
		}
	})
	if got == 0 && n > 0 {
		return rsp.Error(14)
	}
	return rsp.Hex(buf[:got])
}

// breakpoint sets or clears a breakpoint (software or hardware: both are
// int3s here) or a write watchpoint (the replay steps every thread and
// compares the memory after each instruction: exact, and slow) in the Hg
// thread's process. Read and access watchpoints are not the server's, nor
// a kit guest's write watchpoints (finding the last write backwards needs
// a Linux program's exits): "" tells gdb so, which then watches by
// stepping.
func (s *server) breakpoint(kind rsp.BreakKind, addr uint64, size int, set bool) []byte {
	pid := s.gThread.PID
	var err error
	switch kind {
	case rsp.BreakSoftware, rsp.BreakHardware:
		s.on(func(b *Trap) {
			image, ok := b.ImageOf(pid)
			if !ok {
				if set { // nothing to clear in a process that is gone
					err = errors.New("no such process")
				}
				return
			}
			k := bpKey{pid: pid, image: image, addr: addr}
			if set {
				err = s.session.setBreak(b, k)
			} else {
				err = s.session.clearBreak(b, k)
			}
		})
	case rsp.WatchWrite, rsp.WatchRead, rsp.WatchAccess:
		s.on(func(b *Trap) {
			if set {
				err = s.session.setWatch(b, pid, addr, size, kind)
			} else {
				s.session.clearWatch(pid, addr, size, kind)
			}
		})
	default:
		return nil
	}
	if err != nil {
		return rsp.Error(14)
	}
	return rsp.OK()
}

// watchReasons are the stop reasons of each kind of watch.
var watchReasons = map[rsp.BreakKind]rsp.Reason{rsp.WatchWrite: rsp.ReasonWatch, rsp.WatchRead: rsp.ReasonRWatch, rsp.WatchAccess: rsp.ReasonAWatch}

// xfer answers a qXfer read: the target description, the Hg process's
// auxiliary vector, or a process's executable.
func (s *server) xfer(c rsp.XferRead) []byte {
	var doc []byte
	switch {
	case c.Object == "features" && c.Annex == "target.xml":
		doc = []byte(targetXML)
	case c.Object == "auxv":
		var err error
		s.on(func(b *Trap) { doc, err = b.Auxv(s.gThread.PID) })
		if err != nil {
			return rsp.Error(14)
		}
	case c.Object == "exec-file":
		pid := s.gThread.PID
		if c.Annex != "" {
			p, err := strconv.ParseInt(c.Annex, 16, 32)
			if err != nil {
				return rsp.Error(22)
			}
			pid = int(p)
		}
		s.on(func(b *Trap) { doc = []byte(b.Exe(int(pid))) })
		if len(doc) == 0 {
			return rsp.Error(3)
		}
	default:
		return nil
	}
	return rsp.XferChunk(doc, c.Offset, c.Length)
}
