package kvm

import (
	"sync/atomic"
	"unsafe"
)

func newVCPU(id, fd int, mem []byte) *VCPU {
	return &VCPU{id: id, fd: fd, runMem: mem, run: (*run)(unsafe.Pointer(&mem[0]))}
}

// exitAs views the exit union of kvm_run as T.
func exitAs[T any](r *run) *T { return (*T)(unsafe.Pointer(&r.Exit[0])) }

// IOExit returns the port I/O of an ExitIO. Data aliases kvm_run: for IN
// the VMM fills it before the next Run; it is valid until then.
func (c *VCPU) IOExit() IO {
	e := exitAs[ioExit](c.run)
	n := int(e.Size) * int(e.Count)
	off := int(e.DataOffset)
	var data []byte
	if off > 0 && n > 0 && off+n <= len(c.runMem) {
		data = c.runMem[off : off+n]
	}
	return IO{Port: e.Port, Size: int(e.Size), Out: e.Direction == IOOut, Count: int(e.Count), Data: data}
}

// MMIO describes an ExitMMIO. Data aliases kvm_run (for reads the VMM
// fills it before the next Run).
type MMIO struct {
	Addr  uint64
	Write bool
	Data  []byte
}

// MMIOExit returns the memory-mapped access of an ExitMMIO.
func (c *VCPU) MMIOExit() MMIO {
	e := exitAs[mmioExit](c.run)
	n := int(e.Len)
	if n > len(e.Data) {
		n = len(e.Data)
	}
	return MMIO{Addr: e.PhysAddr, Write: e.IsWrite != 0, Data: e.Data[:n]}
}

// SetImmediateExit makes the next (or current, if a signal follows) KVM_RUN
// return EINTR at once. Other threads call it to kick the vCPU, so it
// updates the aligned word holding immediate_exit with compare-and-swap: a
// concurrent byte store of request_interrupt_window (same word, written by
// the vCPU thread) makes the swap retry instead of being lost.
func (c *VCPU) SetImmediateExit(on bool) {
	p := (*atomic.Uint32)(unsafe.Pointer(&c.run.runHeader))
	for {
		old := p.Load()
		nv := old&^0xff00 | uint32(b2u8(on))<<8
		if p.CompareAndSwap(old, nv) {
			return
		}
	}
}
