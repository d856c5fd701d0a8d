package rsp

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// OK answers a command that succeeded with nothing to say.
func OK() []byte { return []byte("OK") }

// Error answers a command that failed; gdb shows the number, it does not
// interpret it.
func Error(errno uint8) []byte { return fmt.Appendf(nil, "E%02x", errno) }

// Hex encodes b as two hex digits a byte: memory and register contents, a
// monitor command's output, a thread's extra info.
func Hex(b []byte) []byte { return hex.AppendEncode(nil, b) }

// Output is console output sent before a monitor command's answer: gdb
// prints it and reads on. An empty one only says the target is alive:
// each packet restarts gdb's wait, which is remotetimeout (2 s) long.
func Output(text []byte) []byte { return append([]byte("O"), Hex(text)...) }

// Supported answers qSupported: PacketSize (MaxPacket, so that gdb sends
// nothing longer than a Conn reads), then features ("multiprocess+",
// "QStartNoAckMode+", "ReverseContinue+", "qXfer:features:read+", ...).
func Supported(features ...string) []byte {
	b := fmt.Appendf(nil, "PacketSize=%x", MaxPacket)
	for _, f := range features {
		b = append(b, ';')
		b = append(b, f...)
	}
	return b
}

// CurrentThread answers qC.
func CurrentThread(t ThreadID) []byte { return []byte("QC" + t.String()) }

// StopSignal is the shortest stop reply: the target stopped with sig.
func StopSignal(sig Signal) []byte { return fmt.Appendf(nil, "S%02x", uint8(sig)) }

// Reason says why a stop reply's thread stopped, when a signal does not say
// enough; gdb needs it to tell a breakpoint from a watchpoint, and the ends
// of a replay.
type Reason string

// Stop reasons. A watch reason's value is the data address, hex; a
// replaylog one's is "begin" or "end", the end of the replay that
// reverse or forward execution ran into.
const (
	ReasonSwBreak   Reason = "swbreak"
	ReasonHwBreak   Reason = "hwbreak"
	ReasonWatch     Reason = "watch"
	ReasonRWatch    Reason = "rwatch"
	ReasonAWatch    Reason = "awatch"
	ReasonReplayLog Reason = "replaylog"
	// A fork's value is the child's thread id (ThreadID.String); an exec's
	// the new executable's path, hex.
	ReasonFork Reason = "fork"
	ReasonExec Reason = "exec"
	// A system call's entry or return (QCatchSyscalls); the value is its
	// number, hex.
	ReasonSyscallEntry  Reason = "syscall_entry"
	ReasonSyscallReturn Reason = "syscall_return"
)

// RegValue is a register sent with a stop reply, to spare gdb asking.
type RegValue struct {
	Num   int
	Value []byte
}

// StopReply is the T stop reply.
type StopReply struct {
	Signal      Signal
	Thread      ThreadID // left out when the zero ThreadID
	Regs        []RegValue
	Reason      Reason // left out when empty
	ReasonValue string
}

// Encode writes T<sig>thread:<id>;<reg>:<hex>;...;<reason>:<value>;.
// The fields are the server's, not gdb's: none may hold ';' or ':'.
func (r StopReply) Encode() []byte {
	b := fmt.Appendf(nil, "T%02x", uint8(r.Signal))
	if r.Thread != (ThreadID{}) {
		b = fmt.Appendf(b, "thread:%s;", r.Thread)
	}
	for _, reg := range r.Regs {
		b = fmt.Appendf(b, "%02x:", reg.Num)
		b = hex.AppendEncode(b, reg.Value)
		b = append(b, ';')
	}
	if r.Reason != "" {
		b = fmt.Appendf(b, "%s:%s;", r.Reason, r.ReasonValue)
	}
	return b
}

// Exited is the W stop reply: the process exited with Code.
type Exited struct {
	Code uint8
	PID  int // left out when Any
}

// Encode writes W<code>[;process:<pid>].
func (e Exited) Encode() []byte {
	b := fmt.Appendf(nil, "W%02x", e.Code)
	if e.PID != Any {
		b = fmt.Appendf(b, ";process:%x", e.PID)
	}
	return b
}

// Killed is the X stop reply: the process ended by Signal.
type Killed struct {
	Signal Signal
	PID    int // left out when Any
}

// Encode writes X<signal>[;process:<pid>].
func (k Killed) Encode() []byte {
	b := fmt.Appendf(nil, "X%02x", uint8(k.Signal))
	if k.PID != Any {
		b = fmt.Appendf(b, ";process:%x", k.PID)
	}
	return b
}

// ThreadList answers qfThreadInfo or qsThreadInfo: "m" and the ids, or "l"
// when there are none (left).
func ThreadList(ids []ThreadID) []byte {
	if len(ids) == 0 {
		return []byte("l")
	}
	s := make([]string, len(ids))
	for i, t := range ids {
		s[i] = t.String()
	}
	return []byte("m" + strings.Join(s, ","))
}

// XferChunk answers a qXfer read of the document data: up to length bytes
// from offset, after "m" if more follow, "l" if they reach the end. The
// bytes are raw; Conn.Write escapes them.
func XferChunk(data []byte, offset, length uint64) []byte {
	size := uint64(len(data))
	if offset >= size {
		return []byte("l")
	}
	if length >= size-offset {
		return append([]byte("l"), data[offset:]...)
	}
	return append([]byte("m"), data[offset:offset+length]...)
}
