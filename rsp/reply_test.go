package rsp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSimpleReplies(t *testing.T) {
	require.Equal(t, "OK", string(OK()))
	require.Equal(t, "E00", string(Error(0)))
	require.Equal(t, "E0e", string(Error(14)))
	require.Equal(t, "Eff", string(Error(255)))
	require.Equal(t, "00ff7e", string(Hex([]byte{0, 0xff, 0x7e})))
	require.Empty(t, Hex(nil))
	require.Equal(t, "S05", string(StopSignal(SigTrap)))
	require.Equal(t, "S02", string(StopSignal(SigInt)))
	require.Equal(t, "QCp1.2", string(CurrentThread(ThreadID{PID: 1, TID: 2})))
	require.Equal(t, "O", string(Output(nil)), "a keepalive, which is not OK")
	require.Equal(t, "O68690a", string(Output([]byte("hi\n"))))
	require.Equal(t, "PacketSize=10000", string(Supported()))
	require.Equal(t, "PacketSize=10000;multiprocess+;QStartNoAckMode+", string(Supported("multiprocess+", "QStartNoAckMode+")))
}

func TestStopReply(t *testing.T) {
	for _, tc := range []struct {
		r    StopReply
		want string
	}{
		{StopReply{Signal: SigTrap}, "T05"},
		{StopReply{Signal: SigTrap, Thread: ThreadID{PID: 1, TID: 1}, Reason: ReasonSwBreak}, "T05thread:p1.1;swbreak:;"},
		{StopReply{
			Signal: SigTrap,
			Thread: ThreadID{PID: 1, TID: 1},
			Regs:   []RegValue{{Num: 6, Value: []byte{0x10, 0xe0, 0xff, 0xff, 0xff, 0x7f, 0, 0}}, {Num: 0x10, Value: []byte{0x36, 0x11, 0x40, 0, 0, 0, 0, 0}}},
			Reason: ReasonWatch, ReasonValue: "7ffe0000",
		}, "T05thread:p1.1;06:10e0ffffff7f0000;10:3611400000000000;watch:7ffe0000;"},
		{StopReply{Signal: SigTrap, Thread: ThreadID{PID: 0x1a, TID: 0x1b}, Reason: ReasonReplayLog, ReasonValue: "begin"}, "T05thread:p1a.1b;replaylog:begin;"},
		{StopReply{Signal: SigTrap, Thread: ThreadID{PID: 1, TID: 2}, Reason: ReasonSyscallEntry, ReasonValue: "e7"}, "T05thread:p1.2;syscall_entry:e7;"},
		{StopReply{Signal: SigInt, Thread: AllThreads}, "T02thread:p-1.-1;"},
	} {
		require.Equal(t, tc.want, string(tc.r.Encode()))
	}
}

func TestExited(t *testing.T) {
	require.Equal(t, "W00;process:1", string(Exited{PID: 1}.Encode()))
	require.Equal(t, "W7f;process:1a", string(Exited{Code: 0x7f, PID: 0x1a}.Encode()))
	require.Equal(t, "W01", string(Exited{Code: 1}.Encode()))
}

func TestThreadList(t *testing.T) {
	require.Equal(t, "mp1.1,p1.2", string(ThreadList([]ThreadID{{PID: 1, TID: 1}, {PID: 1, TID: 2}})))
	require.Equal(t, "mp1.a", string(ThreadList([]ThreadID{{PID: 1, TID: 10}})))
	require.Equal(t, "l", string(ThreadList(nil)))
}

func TestXferChunk(t *testing.T) {
	doc := []byte("<target>$#}*</target>") // 21 bytes
	for _, tc := range []struct {
		offset, length uint64
		want           string
	}{
		{0, 8, "m<target>"},
		{0, 21, "l<target>$#}*</target>"},
		{0, 1000, "l<target>$#}*</target>"},
		{8, 4, "m$#}*"},
		{12, 9, "l</target>"},
		{20, 1<<64 - 1, "l>"},
		{21, 10, "l"},
		{1 << 63, 10, "l"},
	} {
		require.Equal(t, tc.want, string(XferChunk(doc, tc.offset, tc.length)), "offset %d length %d", tc.offset, tc.length)
	}
}

// TestXferChunkOverConn checks a binary reply reaches gdb intact:
// XferChunk leaves escaping to Conn.Write.
func TestXferChunkOverConn(t *testing.T) {
	doc := []byte("a$b#c}d*e\x03")
	stub, out := newTestConn("+")
	require.NoError(t, stub.Write(XferChunk(doc, 0, 100)))
	gdb, _ := newTestConn(out.String())
	got, err := gdb.Read()
	require.NoError(t, err)
	require.Equal(t, append([]byte("l"), doc...), got)
}

// Linux's signals in gdb's numbering (include/gdb/signals.def): the
// classic ones keep theirs, the others move, real-time ones included; a
// process's end is W with its code or X with its signal.
func TestLinuxSignalsAndEnds(t *testing.T) {
	for linux, gdb := range map[int]Signal{2: 2, 5: 5, 7: 10, 9: 9, 10: 30, 11: 11, 12: 31, 17: 20, 19: 17, 29: 23, 31: 12, 32: 77, 34: 46, 63: 75, 64: 78, 0: 143, 65: 143} {
		require.Equal(t, gdb, LinuxSignal(linux), "signal %d", linux)
	}
	require.Equal(t, "X0b;process:2", string(Killed{Signal: LinuxSignal(11), PID: 2}.Encode()))
	require.Equal(t, "X09", string(Killed{Signal: LinuxSignal(9)}.Encode()))
	require.Equal(t, "W03;process:1a", string(Exited{Code: 3, PID: 26}.Encode()))
}
