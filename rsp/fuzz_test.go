package rsp

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParse feeds any payload to Parse: it must not panic, and what it
// accepts must be within the bounds doc.go promises.
//
//	go test ./rsp -run '^$' -fuzz FuzzParse -fuzztime 20s
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.payload))
	}
	for _, tc := range malformedCases {
		f.Add([]byte(tc.payload))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := Parse(payload)
		if err != nil {
			require.Nil(t, c)
			require.True(t, strings.HasPrefix(err.Error(), "rsp: packet "), err.Error())
			return
		}
		checkBounds(t, payload, c)
		again, err := Parse(payload)
		require.NoError(t, err)
		require.Equal(t, c, again)
	})
}

func checkBounds(t *testing.T, payload []byte, c Command) {
	switch c := c.(type) {
	case QSupported:
		require.LessOrEqual(t, len(c.Features), maxFeatures)
	case CatchSyscalls:
		require.LessOrEqual(t, len(c.Calls), maxSyscalls)
		require.True(t, c.Enable || c.Calls == nil)
	case QueryAttached:
		checkPID(t, c.PID)
	case Kill:
		checkPID(t, c.PID)
	case Detach:
		checkPID(t, c.PID)
	case Monitor:
		require.LessOrEqual(t, 2*len(c.Command), len(payload))
	case XferRead:
		require.LessOrEqual(t, c.Length, uint64(MaxPacket))
	case ThreadExtraInfo:
		checkThread(t, c.Thread)
	case ThreadAlive:
		checkThread(t, c.Thread)
	case SetThread:
		require.Contains(t, []byte("gc"), c.Op)
		checkThread(t, c.Thread)
	case WriteRegisters:
		require.NotEmpty(t, c.Data)
		require.LessOrEqual(t, 2*len(c.Data), len(payload))
	case ReadRegister:
		checkRegister(t, c.Reg)
	case WriteRegister:
		checkRegister(t, c.Reg)
		require.NotEmpty(t, c.Value)
	case ReadMemory:
		require.LessOrEqual(t, c.Length, uint64(MaxPacket/2))
		require.NoError(t, checkRange(c.Addr, c.Length))
	case WriteMemory:
		require.LessOrEqual(t, len(c.Data), len(payload))
		require.NoError(t, checkRange(c.Addr, uint64(len(c.Data))))
	case InsertBreak:
		checkBreak(t, c)
	case RemoveBreak:
		checkBreak(t, InsertBreak(c))
	case VCont:
		require.NotEmpty(t, c.Actions)
		require.LessOrEqual(t, len(c.Actions), maxVContActions)
		for _, a := range c.Actions {
			require.Contains(t, []byte("csCStr"), a.Kind)
			require.LessOrEqual(t, a.RangeStart, a.RangeEnd)
			checkThread(t, a.Thread)
		}
	case FileSetFS:
		checkPID(t, c.PID)
	case FileOpen:
		require.LessOrEqual(t, len(c.Path), maxPath)
	case FileReadlink:
		require.LessOrEqual(t, len(c.Path), maxPath)
	case FilePread:
		require.LessOrEqual(t, c.Count, uint64(MaxPacket/2))
		require.LessOrEqual(t, c.FD, maxFD)
	case FileClose:
		require.LessOrEqual(t, c.FD, maxFD)
	case Unknown:
		require.Equal(t, string(payload), c.Payload)
	}
}

func checkPID(t *testing.T, pid int) {
	require.GreaterOrEqual(t, pid, 0)
	require.LessOrEqual(t, pid, maxID)
}

func checkRegister(t *testing.T, reg int) {
	require.GreaterOrEqual(t, reg, 0)
	require.LessOrEqual(t, reg, maxRegister)
}

func checkBreak(t *testing.T, b InsertBreak) {
	require.LessOrEqual(t, b.Kind, WatchAccess)
	require.GreaterOrEqual(t, b.Size, 0)
	require.LessOrEqual(t, b.Size, maxBreakSize)
	require.NoError(t, checkRange(b.Addr, uint64(b.Size)))
}

// checkThread checks a thread id is one gdb could mean, and that it
// survives String and parsing back.
func checkThread(t *testing.T, id ThreadID) {
	for _, n := range []int{id.PID, id.TID} {
		require.GreaterOrEqual(t, n, All)
		require.LessOrEqual(t, n, maxID)
	}
	if id.PID == All {
		require.Equal(t, All, id.TID)
	}
	again, err := parseThreadID(id.String())
	require.NoError(t, err)
	require.Equal(t, id, again)
}

// FuzzConnRead feeds any byte stream to Conn.Read until it fails: it must
// not panic, must end, and must return no packet over MaxPacket.
//
//	go test ./rsp -run '^$' -fuzz FuzzConnRead -fuzztime 20s
func FuzzConnRead(f *testing.F) {
	var all strings.Builder
	for _, tc := range parseCases {
		f.Add([]byte(packet(tc.payload)), false)
		all.WriteString(packet(tc.payload))
	}
	f.Add([]byte(all.String()), false)
	f.Add([]byte(all.String()), true)
	for _, s := range []string{
		"+\x03-" + packet("0* ") + "junk" + packet("}]* "),
		"$m0,1#00$m0,1#zz" + packet("m0,1"),
		"$ab$" + packet("X0,4:}\x03}\x04}]}\x0a")[1:],
		"$a*~*~*~*~#00",
		packet("*a") + packet("a*") + packet("ab}"),
		"$abc#1",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, noAck bool) {
		c, out := newTestConn(string(data))
		if noAck {
			c.SetNoAck()
		}
		packets := 0
		var err error
		for reads := 0; ; reads++ {
			// Every Read consumes a byte at least.
			require.LessOrEqual(t, reads, len(data)+1)
			var p []byte
			p, err = c.Read()
			if errors.Is(err, ErrInterrupt) {
				continue
			}
			if err != nil {
				break
			}
			require.LessOrEqual(t, len(p), MaxPacket)
			packets++
		}
		_, again := c.Read()
		require.Equal(t, err, again, "the error is final")
		acks := bytes.Count(out.Bytes(), []byte{ackByte})
		if noAck {
			require.Zero(t, out.Len())
		} else {
			require.Equal(t, packets, acks)
			require.Equal(t, out.Len()-acks, bytes.Count(out.Bytes(), []byte{nackByte}))
		}
	})
}

// FuzzRoundTrip checks any payload Write sends reads back the same.
//
//	go test ./rsp -run '^$' -fuzz FuzzRoundTrip -fuzztime 20s
func FuzzRoundTrip(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.payload))
	}
	f.Add([]byte("$#}*\x03+-"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > MaxPacket/2 {
			return // escaped, it might not fit
		}
		stub, out := newTestConn("+")
		require.NoError(t, stub.Write(payload))
		gdb, acks := newTestConn(out.String())
		got, err := gdb.Read()
		require.NoError(t, err)
		require.Equal(t, string(payload), string(got))
		require.Equal(t, "+", acks.String())
	})
}
