package probes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"
)

type fakeRegs map[x86asm.Reg]uint64

func (r fakeRegs) Reg(x x86asm.Reg) uint64 { return r[x] }

// fakeMemory maps pages of guest-virtual memory; reads that touch an
// unmapped byte fail, as a page-table walk would.
type fakeMemory struct {
	bytes map[uint64]byte
	reads []uint64
}

var errUnmapped = errors.New("not mapped")

func (m *fakeMemory) ReadVirt(gva uint64, b []byte) error {
	m.reads = append(m.reads, gva)
	for i := range b {
		v, ok := m.bytes[gva+uint64(i)]
		if !ok {
			return fmt.Errorf("%w: %#x", errUnmapped, gva+uint64(i))
		}
		b[i] = v
	}
	return nil
}

func (m *fakeMemory) put64(addr, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	for i, c := range b {
		m.bytes[addr+uint64(i)] = c
	}
}

func TestEval(t *testing.T) {
	regs := fakeRegs{x86asm.RDI: 0x1000, x86asm.RSI: 0x9999, x86asm.RAX: 42, x86asm.RSP: 0x3000, x86asm.RIP: 0x400000, x86asm.R9: 4}
	mem := &fakeMemory{bytes: map[uint64]byte{}}
	mem.put64(0x1000, 0x2000)             // *rdi: a pointer
	mem.put64(0x1008, 0x8877665544332211) // the struct's second field
	mem.put64(0x2000, 0xdeadbeefcafef00d) // **rdi
	mem.put64(0x3000, 0x5000)             // [rsp]: an address with nothing behind it
	mem.put64(0x2ff8, 0x1000)             // [rsp-8]
	for _, tc := range []struct {
		expr string
		want uint64
		err  string // substring of the error, "" for none
	}{
		{"rdi", 0x1000, ""},
		{"arg0", 0x1000, ""},
		{"rip", 0x400000, ""},
		{"rdi+8", 0x1008, ""},
		{"r9-8", 0xfffffffffffffffc, ""}, // wraps like the guest's arithmetic
		{"*(rdi+8)", 0x8877665544332211, ""},
		{"*(arg0+8):4", 0x44332211, ""},
		{"*(arg0+8):2", 0x2211, ""},
		{"*(arg0+8):1", 0x11, ""},
		{"*(rdi+9):1", 0x22, ""},
		{"*rdi", 0x2000, ""},
		{"**rdi", 0xdeadbeefcafef00d, ""},
		{"**rdi:4", 0xcafef00d, ""},
		{"*(*rdi+4):4", 0xdeadbeef, ""},
		{"*rdi+0x10", 0x2010, ""},
		{"***(rsp-8)", 0xdeadbeefcafef00d, ""},
		{"*rsi", 0, "probes: reading 8 bytes at 0x9999: not mapped"},
		{"*(rsi+1):2", 0, "probes: reading 2 bytes at 0x999a"},
		{"**rsp", 0, "probes: reading 8 bytes at 0x5000"},                       // the first read works, the second fails
		{"*(rdi+0x1006):4", 0, "reading 4 bytes at 0x2006: not mapped: 0x2008"}, // straddles the end of the mapping
	} {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := ParseExpr(tc.expr, true)
			require.NoError(t, err)
			got, err := e.Eval(regs, mem)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				var re *ReadError
				require.True(t, errors.As(err, &re))
				require.ErrorIs(t, err, errUnmapped)
				require.Zero(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEvalReadErrorFields(t *testing.T) {
	e, err := ParseExpr("**(rdi+8):2", false)
	require.NoError(t, err)
	mem := &fakeMemory{bytes: map[uint64]byte{}}
	mem.put64(0x1008, 0x7000)
	_, err = e.Eval(fakeRegs{x86asm.RDI: 0x1000}, mem)
	var re *ReadError
	require.True(t, errors.As(err, &re))
	require.Equal(t, uint64(0x7000), re.Addr)
	require.Equal(t, 2, re.Width)
	require.Equal(t, []uint64{0x1008, 0x7000}, mem.reads, "reads happen innermost first")

	// No memory at all: registers still work, dereferences fail cleanly.
	_, err = e.Eval(fakeRegs{}, nil)
	require.ErrorIs(t, err, ErrNoMemory)
	v, err := Expr{Reg: x86asm.RDI, Off: 1}.Eval(fakeRegs{x86asm.RDI: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(2), v)

	// A hand-built Expr with a bad width is an error, not a panic.
	_, err = Expr{Deref: &Expr{Reg: x86asm.RDI}, Width: 3}.Eval(fakeRegs{}, mem)
	require.ErrorContains(t, err, "bad width 3")
}

func TestEvalArgs(t *testing.T) {
	s, err := ParseSpec("f ok=rdi bad=*rsi count=*(rdi+8):4")
	require.NoError(t, err)
	p := Probe{Args: s.Args}
	mem := &fakeMemory{bytes: map[uint64]byte{}}
	mem.put64(0x1008, 7)
	vs := p.EvalArgs(fakeRegs{x86asm.RDI: 0x1000, x86asm.RSI: 0x10}, mem)
	require.Len(t, vs, 3)
	require.Equal(t, Value{Name: "ok", Value: 0x1000}, vs[0])
	require.Equal(t, "bad", vs[1].Name)
	require.ErrorContains(t, vs[1].Err, "reading 8 bytes at 0x10")
	require.Equal(t, Value{Name: "count", Value: 7}, vs[2], "a missing argument does not spoil the others")
}

func TestWantsThread(t *testing.T) {
	require.True(t, (&Probe{}).WantsThread(7))
	p := &Probe{Threads: []uint32{2, 3}}
	require.True(t, p.WantsThread(3))
	require.False(t, p.WantsThread(4))
}
