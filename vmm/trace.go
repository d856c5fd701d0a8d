package vmm

import (
	"encoding/binary"
	"time"

	"github.com/reprise-vm/reprise/abi"
)

// The guest kit kernel's trace ring (guest/include/reprise/trace.h): a
// header, then records the kernel appends at no exit cost.
const (
	traceMagic     = 0x3145434152545052 // "RPTRACE1"
	traceHeader    = 0x20
	traceRecSize   = 32
	traceHeadOff   = 0x10
	traceMaxRecord = 1 << 16 // capacity bound: the header is guest data
)

// TraceRecord is one record of the guest kernel's trace ring: a context
// switch, a thread created or exited, or an explicit guest event.
type TraceRecord struct {
	Kind  uint32 // trace.h REPRISE_TRACE_*
	TID   uint32
	A, B  uint64
	Ticks uint64 // the guest's tick count when written
	// Pos and Time are where the replay drained the record: at or after
	// the point the kernel wrote it (its records carry no position).
	Pos  Position
	Time time.Duration
}

// TraceHandler receives drained trace records in write order.
type TraceHandler func(r *TraceRecord) error

// traceRing drains the ring into Config.OnTrace.
type traceRing struct {
	addr    uint64 // of the ring header; 0: the image has none
	drained uint64 // records read so far
	Lost    uint64 // records overwritten before they were drained
}

// drainTrace reads the records written since the last drain. Every field
// of the ring is guest data and checked: a broken ring stops being read.
func (m *Machine) drainTrace() error {
	t := &m.trace
	if t.addr == 0 || m.cfg.OnTrace == nil {
		return nil
	}
	hdr, err := m.ram.Slice(t.addr, traceHeader)
	if err != nil || binary.LittleEndian.Uint64(hdr) != traceMagic {
		return nil // not booted yet, or not a ring
	}
	capacity := uint64(binary.LittleEndian.Uint32(hdr[8:]))
	if capacity == 0 || capacity > traceMaxRecord || capacity&(capacity-1) != 0 ||
		binary.LittleEndian.Uint32(hdr[12:]) != traceRecSize {
		return nil
	}
	head := binary.LittleEndian.Uint64(hdr[traceHeadOff:])
	if head < t.drained {
		return nil
	}
	if head-t.drained > capacity {
		t.Lost += head - t.drained - capacity
		t.drained = head - capacity
	}
	pos, now := m.position(), m.recordTime()
	for ; t.drained < head; t.drained++ {
		raw, err := m.ram.Slice(t.addr+traceHeader+(t.drained&(capacity-1))*traceRecSize, traceRecSize)
		if err != nil {
			return nil
		}
		r := &TraceRecord{
			Kind: binary.LittleEndian.Uint32(raw), TID: binary.LittleEndian.Uint32(raw[4:]),
			A: binary.LittleEndian.Uint64(raw[8:]), B: binary.LittleEndian.Uint64(raw[16:]),
			Ticks: binary.LittleEndian.Uint64(raw[24:]), Pos: pos, Time: now,
		}
		if err := m.cfg.OnTrace(r); err != nil {
			return err
		}
	}
	return nil
}

// findTraceRing locates the ring by its ELF symbol.
func (m *Machine) findTraceRing() {
	if s, ok := m.cfg.Image.Lookup(abi.TraceRingSymbol); ok {
		m.trace.addr = s.Addr
	}
}
