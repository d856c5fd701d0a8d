package replayer

import (
	"encoding/binary"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm"
)

// The guest kit kernel's trace ring (guest/include/reprise/trace.h): a
// header, then records the kernel appends at no exit cost.
const traceMaxRecord = 1 << 16 // capacity bound: the header is guest data

// TraceRecord is one record of the guest kernel's trace ring: a context
// switch, a thread created or exited, or an explicit guest event.
type TraceRecord struct {
	Kind  uint32 // trace.h REPRISE_TRACE_*
	TID   uint32
	A, B  uint64
	Ticks uint64 // the guest's tick count when written
	// Pos is where the kernel wrote the record: its branch count, and the
	// exits made before it (the ring is drained at every guest exit).
	// Time is that position's record time (tape.RecordClock).
	Pos  vmm.Position
	Time time.Duration
}

// TraceHandler receives drained trace records in write order.
type TraceHandler func(r *TraceRecord) error

// traceRing drains the ring into its handler.
type traceRing struct {
	m       *vmm.Machine
	on      TraceHandler
	addr    uint64 // of the ring header; 0: the image has none
	drained uint64 // records read so far
	lost    uint64 // records overwritten before they were drained
}

// attach locates the ring by its ELF symbol.
func (t *traceRing) attach(m *vmm.Machine) {
	t.m = m
	if s, ok := m.Image().Lookup(abi.TraceRingSymbol); ok {
		t.addr = s.Addr
	}
}

// drainTrace reads the records written since the last drain, all of them
// after the guest's last counted exit. Every field of the ring is guest
// data and checked: a broken ring stops being read.
func (t *traceRing) drain(recordTime func(vmm.Position) time.Duration) error {
	if t.addr == 0 {
		return nil
	}
	ram := t.m.RAM()
	hdr, err := ram.Slice(t.addr, abi.TraceHeader)
	if err != nil || binary.LittleEndian.Uint64(hdr) != abi.TraceMagic {
		return nil // not booted yet, or not a ring
	}
	capacity := uint64(binary.LittleEndian.Uint32(hdr[8:]))
	if capacity == 0 || capacity > traceMaxRecord || capacity&(capacity-1) != 0 ||
		binary.LittleEndian.Uint32(hdr[12:]) != abi.TraceRecSize {
		return nil
	}
	head := binary.LittleEndian.Uint64(hdr[abi.TraceHeadOff:])
	if head < t.drained {
		return nil
	}
	if head-t.drained > capacity {
		t.lost += head - t.drained - capacity
		t.drained = head - capacity
	}
	for ; t.drained < head; t.drained++ {
		raw, err := ram.Slice(t.addr+abi.TraceHeader+(t.drained&(capacity-1))*abi.TraceRecSize, abi.TraceRecSize)
		if err != nil {
			return nil
		}
		branch := binary.LittleEndian.Uint64(raw[32:])
		r := &TraceRecord{
			Kind: binary.LittleEndian.Uint32(raw), TID: binary.LittleEndian.Uint32(raw[4:]),
			A: binary.LittleEndian.Uint64(raw[8:]), B: binary.LittleEndian.Uint64(raw[16:]),
			Ticks: binary.LittleEndian.Uint64(raw[24:]),
			Pos:   vmm.Position{Exit: t.m.Position().Exit, Branch: branch}, Time: recordTime(vmm.Position{Exit: t.m.Position().Exit, Branch: branch}),
		}
		if t.on == nil {
			continue
		}
		if err := t.on(r); err != nil {
			return err
		}
	}
	return nil
}
