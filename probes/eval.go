package probes

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// Regs gives the guest's registers at a hit, as they were before the int3
// executed: RIP is the probed instruction's address (for a %return probe,
// the return address), not the address past the int3.
type Regs interface {
	Reg(x86asm.Reg) uint64
}

// Memory reads guest-virtual memory through the guest's page tables at the
// hit. It reports an error for an unmapped address rather than faulting.
type Memory interface {
	ReadVirt(gva uint64, b []byte) error
}

// ReadError is a dereference the guest's memory could not satisfy. The VMM
// records the argument as missing; the hit and the replay go on.
type ReadError struct {
	Addr  uint64
	Width int
	Err   error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("probes: reading %d bytes at %#x: %v", e.Width, e.Addr, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

// ErrNoMemory is returned by Eval for a dereference when m is nil.
var ErrNoMemory = errors.New("probes: no guest memory to read")

// Eval evaluates e: registers from r, dereferences read little-endian
// from m. Offsets wrap modulo 2^64, like the guest's own address
// arithmetic. A failed read is a *ReadError naming the address.
func (e Expr) Eval(r Regs, m Memory) (uint64, error) {
	var v uint64
	if e.Deref == nil {
		v = r.Reg(e.Reg)
	} else {
		addr, err := e.Deref.Eval(r, m)
		if err != nil {
			return 0, err
		}
		w := e.Width
		if w != 1 && w != 2 && w != 4 && w != 8 {
			return 0, fmt.Errorf("probes: bad width %d reading %#x", w, addr)
		}
		if m == nil {
			return 0, &ReadError{Addr: addr, Width: w, Err: ErrNoMemory}
		}
		var buf [8]byte
		if err := m.ReadVirt(addr, buf[:w]); err != nil {
			return 0, &ReadError{Addr: addr, Width: w, Err: err}
		}
		v = binary.LittleEndian.Uint64(buf[:])
	}
	return v + uint64(e.Off), nil
}

// Value is one argument's value at a hit; Err is set (and Value is 0)
// when it could not be read.
type Value struct {
	Name  string
	Value uint64
	Err   error
}

// EvalArgs evaluates every argument of p; a failed read makes only that
// argument missing.
func (p *Probe) EvalArgs(r Regs, m Memory) []Value {
	vs := make([]Value, len(p.Args))
	for i, a := range p.Args {
		v, err := a.Expr.Eval(r, m)
		vs[i] = Value{Name: a.Name, Value: v, Err: err}
	}
	return vs
}
