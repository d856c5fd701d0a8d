package rsp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// parseCases are packets gdb 13+ sends (from its manual and a session
// with gdbserver), and what Parse makes of them.
var parseCases = []struct {
	payload string
	want    Command
}{
	{"qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+;vfork-events+;exec-events+;vContSupported+;QThreadEvents+;no-resumed+;memory-tagging+;xmlRegisters=i386",
		QSupported{Features: []string{"multiprocess+", "swbreak+", "hwbreak+", "qRelocInsn+", "fork-events+", "vfork-events+", "exec-events+", "vContSupported+", "QThreadEvents+", "no-resumed+", "memory-tagging+", "xmlRegisters=i386"}}},
	{"qSupported", QSupported{}},
	{"QCatchSyscalls:1", CatchSyscalls{Enable: true}},
	{"QCatchSyscalls:1;0;1;3b", CatchSyscalls{Enable: true, Calls: []uint64{0, 1, 0x3b}}},
	{"QCatchSyscalls:0", CatchSyscalls{}},
	{"vMustReplyEmpty", MustReplyEmpty{}},
	{"QStartNoAckMode", StartNoAckMode{}},
	{"Hgp0.0", SetThread{Op: 'g', Thread: AnyThread}},
	{"Hgp1.1", SetThread{Op: 'g', Thread: ThreadID{PID: 1, TID: 1}}},
	{"Hc-1", SetThread{Op: 'c', Thread: AllThreads}},
	{"Hcp1.-1", SetThread{Op: 'c', Thread: ThreadID{PID: 1, TID: All}}},
	{"qXfer:features:read:target.xml:0,ffb", XferRead{Object: "features", Annex: "target.xml", Offset: 0, Length: 0xffb}},
	{"qXfer:features:read:64bit-sse.xml:ffb,ffb", XferRead{Object: "features", Annex: "64bit-sse.xml", Offset: 0xffb, Length: 0xffb}},
	{"qXfer:auxv:read::0,1000", XferRead{Object: "auxv", Offset: 0, Length: 0x1000}},
	{"qXfer:exec-file:read:1:0,ffb", XferRead{Object: "exec-file", Annex: "1", Length: 0xffb}},
	{"qXfer:libraries-svr4:read::0,ffb", XferRead{Object: "libraries-svr4", Length: 0xffb}},
	{"qXfer:libraries-svr4:read:start=7ffff7fc3000;prev=7ffff7ffe2e0:0,ffb", XferRead{Object: "libraries-svr4", Annex: "start=7ffff7fc3000;prev=7ffff7ffe2e0", Length: 0xffb}},
	{"qXfer:threads:read::0,ffb", XferRead{Object: "threads", Length: 0xffb}},
	{"qXfer:threads:read::0,ffffffff", XferRead{Object: "threads", Length: MaxPacket}},
	{"qTStatus", QueryTStatus{}},
	{"?", StopReason{}},
	{"qfThreadInfo", ThreadInfoFirst{}},
	{"qsThreadInfo", ThreadInfoNext{}},
	{"qAttached:1", QueryAttached{PID: 1}},
	{"qAttached", QueryAttached{}},
	{"qC", QueryCurrentThread{}},
	{"qOffsets", QueryOffsets{}},
	{"qSymbol::", QuerySymbol{}},
	{"qThreadExtraInfo,p1.2", ThreadExtraInfo{Thread: ThreadID{PID: 1, TID: 2}}},
	{"Tp1.2", ThreadAlive{Thread: ThreadID{PID: 1, TID: 2}}},
	{"g", ReadRegisters{}},
	{"G00112233", WriteRegisters{Data: []byte{0x00, 0x11, 0x22, 0x33}}},
	{"p10", ReadRegister{Reg: 0x10}},
	{"pfff", ReadRegister{Reg: 0xfff}},
	{"P10=0011223344556677", WriteRegister{Reg: 0x10, Value: []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77}}},
	{"m7fffffffe000,40", ReadMemory{Addr: 0x7fffffffe000, Length: 0x40}},
	{"m401000,0", ReadMemory{Addr: 0x401000}},
	{"m0,100000", ReadMemory{Length: MaxPacket / 2}},
	{"mffffffffffffffff,1", ReadMemory{Addr: 1<<64 - 1, Length: 1}},
	{"M1000,2:abcd", WriteMemory{Addr: 0x1000, Data: []byte{0xab, 0xcd}}},
	{"X1000,3:\x00}\xff", WriteMemory{Addr: 0x1000, Data: []byte{0, '}', 0xff}}},
	{"X1000,2::#", WriteMemory{Addr: 0x1000, Data: []byte(":#")}},
	{"X401000,0:", WriteMemory{Addr: 0x401000}},
	{"Z0,401136,1", InsertBreak{Kind: BreakSoftware, Addr: 0x401136, Size: 1}},
	{"z0,401136,1", RemoveBreak{Kind: BreakSoftware, Addr: 0x401136, Size: 1}},
	{"Z1,401136,1", InsertBreak{Kind: BreakHardware, Addr: 0x401136, Size: 1}},
	{"Z2,7ffe0000,8", InsertBreak{Kind: WatchWrite, Addr: 0x7ffe0000, Size: 8}},
	{"z2,7ffe0000,8", RemoveBreak{Kind: WatchWrite, Addr: 0x7ffe0000, Size: 8}},
	{"Z3,7ffe0000,4", InsertBreak{Kind: WatchRead, Addr: 0x7ffe0000, Size: 4}},
	{"Z4,7ffe0000,2", InsertBreak{Kind: WatchAccess, Addr: 0x7ffe0000, Size: 2}},
	{"Z0,401136,1;X3,220027", InsertBreak{Kind: BreakSoftware, Addr: 0x401136, Size: 1}},
	{"Z0,401136,1;cmds:0,X3,220027", InsertBreak{Kind: BreakSoftware, Addr: 0x401136, Size: 1}},
	{"c", Continue{}},
	{"c401000", Continue{Addr: addr(0x401000)}},
	{"s", Step{}},
	{"s401000", Step{Addr: addr(0x401000)}},
	{"C0b", ContinueWithSignal{Signal: 0xb}},
	{"C05;401000", ContinueWithSignal{Signal: SigTrap, Addr: addr(0x401000)}},
	{"S02", StepWithSignal{Signal: SigInt}},
	{"bc", ReverseContinue{}},
	{"bs", ReverseStep{}},
	{"vCont?", VContQuery{}},
	{"vCont;c:p1.-1", VCont{Actions: []VContAction{{Kind: 'c', Thread: ThreadID{PID: 1, TID: All}}}}},
	{"vCont;s:p1.1;c", VCont{Actions: []VContAction{{Kind: 's', Thread: ThreadID{PID: 1, TID: 1}}, {Kind: 'c', Thread: AllThreads}}}},
	{"vCont;r1000,1010:p1.1", VCont{Actions: []VContAction{{Kind: 'r', RangeStart: 0x1000, RangeEnd: 0x1010, Thread: ThreadID{PID: 1, TID: 1}}}}},
	{"vCont;C0b:p1.2;c", VCont{Actions: []VContAction{{Kind: 'C', Signal: 0xb, Thread: ThreadID{PID: 1, TID: 2}}, {Kind: 'c', Thread: AllThreads}}}},
	{"vCont;t:p1.2", VCont{Actions: []VContAction{{Kind: 't', Thread: ThreadID{PID: 1, TID: 2}}}}},
	{"vCont;S05", VCont{Actions: []VContAction{{Kind: 'S', Signal: SigTrap, Thread: AllThreads}}}},
	{"qRcmd,7768656e", Monitor{Command: "when"}},
	{"qRcmd,", Monitor{}},
	{"k", Kill{}},
	{"vKill;1", Kill{PID: 1}},
	{"D", Detach{}},
	{"D;1", Detach{PID: 1}},
	{"vFile:setfs:0", FileSetFS{}},
	{"vFile:setfs:1f", FileSetFS{PID: 31}},
	{"vFile:open:2f70726f632f312f6d617073,0,1c0", FileOpen{Path: "/proc/1/maps", Mode: 0o700}},
	{"vFile:pread:3,3fff,100", FilePread{FD: 3, Count: 0x3fff, Offset: 0x100}},
	{"vFile:pread:3,ffffffff,0", FilePread{FD: 3, Count: MaxPacket / 2}},
	{"vFile:close:3", FileClose{FD: 3}},
	{"vFile:readlink:2f70726f632f312f657865", FileReadlink{Path: "/proc/1/exe"}},

	// Unknown: the stub answers "".
	{"", Unknown{}},
	{"vFile:unlink:2f746d70", Unknown{Payload: "vFile:unlink:2f746d70"}},
	{"vFile:fstat:3", Unknown{Payload: "vFile:fstat:3"}},
	{"vRun;;", Unknown{Payload: "vRun;;"}},
	{"vCtrlC", Unknown{Payload: "vCtrlC"}},
	{"QThreadEvents:1", Unknown{Payload: "QThreadEvents:1"}},
	{"QNonStop:0", Unknown{Payload: "QNonStop:0"}},
	{"qTfV", Unknown{Payload: "qTfV"}},
	{"qL1200000000000000000", Unknown{Payload: "qL1200000000000000000"}},
	{"qCRC:1000,10", Unknown{Payload: "qCRC:1000,10"}},
	{"qSymbol:7ffff7dd0000:6c6962", Unknown{Payload: "qSymbol:7ffff7dd0000:6c6962"}},
	{"qXfer:siginfo:write::0:0102", Unknown{Payload: "qXfer:siginfo:write::0:0102"}},
	{"Z5,1000,1", Unknown{Payload: "Z5,1000,1"}},
	{"z9", Unknown{Payload: "z9"}},
	{"Hsp1.1", Unknown{Payload: "Hsp1.1"}},
	{"H", Unknown{Payload: "H"}},
	{"!", Unknown{Payload: "!"}},
	{"g;thread:1", Unknown{Payload: "g;thread:1"}},
	{"b9600", Unknown{Payload: "b9600"}},
	{"vCont", Unknown{Payload: "vCont"}},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		got, err := Parse([]byte(tc.payload))
		require.NoError(t, err, tc.payload)
		require.Equal(t, tc.want, got, tc.payload)
	}
}

// malformedCases are packets Parse knows, malformed, and the error each
// gives.
var malformedCases = []struct{ payload, err string }{
	{"m12,zz", `rsp: packet "m12,zz": length: 'z' is not a hex digit`},
	{"m12", `rsp: packet "m12": missing comma`},
	{"m,4", `address: empty number`},
	{"m1000,-4", `length: '-' is not a hex digit`},
	{"m-1000,4", `address: '-' is not a hex digit`},
	{"m10000000000000000,1", `address: 17 hex digits, over 16`},
	{"mffffffffffffffff,2", `range 0xffffffffffffffff+0x2 wraps past 2^64`},
	{"M1000,2:abc", `data: odd number of hex digits (3)`},
	{"M1000,3:abcd", `length 0x3, but 2 bytes of data`},
	{"M1000,2", `missing ':'`},
	{"X1000,3:ab", `length 0x3, but 2 bytes of data`},
	{"X1000,3", `missing ':'`},
	{"Xffffffffffffffff,2:ab", `wraps past 2^64`},
	{"G", `no register data`},
	{"vFile:open:2f70,0", `open takes 3 arguments, not 2`},
	{"vFile:open:2f7,0,0", `path: odd number of hex digits (3)`},
	{"vFile:open:" + strings.Repeat("41", 4097) + ",0,0", `a path of 4097 bytes, over 4096`},
	{"vFile:pread:200000,10,0", `fd: 0x200000 is over 0x100000`},
	{"vFile:pread:3,10", `pread takes 3 arguments, not 2`},
	{"vFile:close:", `empty number`},
	{"G0", `registers: odd number of hex digits (1)`},
	{"p", `register: empty number`},
	{"p1000", `register: 0x1000 is over 0xfff`},
	{"pzz", `register: 'z' is not a hex digit`},
	{"P10", `missing '='`},
	{"P10=", `empty value`},
	{"P10=0q", `value: "0q" is not a hex byte`},
	{"Z0,401136", `missing comma`},
	{"Z0", `missing comma`},
	{"Z0,,1", `address: empty number`},
	{"Z2,1000,100001", `size 0x100001, over 0x100000`},
	{"z2,ffffffffffffffff,8", `wraps past 2^64`},
	{"cxyz", `address: 'x' is not a hex digit`},
	{"C", `signal: empty number`},
	{"C123", `signal "123": over two hex digits`},
	{"C05;", `address: empty number`},
	{"S0x", `signal: 'x' is not a hex digit`},
	{"Hg", `thread id "": empty number`},
	{"Hgpx.1", `thread id "px.1": pid: 'x' is not a hex digit`},
	{"Hgp80000000.1", `over 2^31-1`},
	{"Tp", `pid: empty number`},
	{"qThreadExtraInfo,", `empty number`},
	{"qXfer:features:read:target.xml:0", `missing comma`},
	{"qXfer:features:read:target.xml", `missing ':' before the offset`},
	{"qXfer:features", `missing ':' after the object`},
	{"qXfer:features:read", `missing ':' after the operation`},
	{"qXfer:features:read:target.xml:0,10000000000000000", `length: 17 hex digits, over 16`},
	{"qRcmd,zz", `command: "zz" is not a hex byte`},
	{"qRcmd,7", `command: odd number of hex digits (1)`},
	{"qAttached:", `pid: empty number`},
	{"qAttached:-1", `pid: '-' is not a hex digit`},
	{"D;x", `pid: 'x' is not a hex digit`},
	{"vKill;", `pid: empty number`},
	{"vKill;80000000", `pid: 0x80000000 is over 0x7fffffff`},
	{"qSupported:" + strings.Repeat("x+;", maxFeatures), `257 features, over 256`},
	{"QCatchSyscalls:1" + strings.Repeat(";1", maxSyscalls+1), `1025 system calls, over 1024`},
	{"QCatchSyscalls:2", `"2" is neither 0 nor 1`},
	{"QCatchSyscalls:0;1", `system calls listed to catch none`},
	{"QCatchSyscalls:1;", `system call number`},
	{"QCatchSyscalls:1;xyz", `system call number`},
}

func TestParseMalformed(t *testing.T) {
	for _, tc := range malformedCases {
		got, err := Parse([]byte(tc.payload))
		require.ErrorContains(t, err, tc.err, tc.payload)
		require.ErrorContains(t, err, "rsp: packet "+quote(tc.payload)+": ", tc.payload)
		require.Nil(t, got, tc.payload)
	}
}

func TestParseDoesNotAlias(t *testing.T) {
	payload := []byte("X1000,2:ab")
	c, err := Parse(payload)
	require.NoError(t, err)
	copy(payload, "XXXXXXXXXX")
	require.Equal(t, WriteMemory{Addr: 0x1000, Data: []byte("ab")}, c)
}
