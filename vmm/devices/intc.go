package devices

import "sync/atomic"

// IntcLines is the number of interrupt lines of the controller.
const IntcLines = 32

// Intc is the userspace interrupt controller: edge-triggered lines, a mask
// register the guest writes, and a pending set the vCPU loop drains. There
// is deliberately no in-kernel irqchip: every interrupt goes through
// Next/Ack in the VMM, where it can be positioned and logged.
//
// Raise may be called from any goroutine; Next, Ack and the port handlers
// run on the vCPU thread.
type Intc struct {
	base    uint8 // vector of line 0
	pending atomic.Uint32
	mask    atomic.Uint32
	notify  func() // wakes the vCPU after Raise
}

// NewIntc maps line n to vector base+n and calls notify after each Raise.
func NewIntc(base uint8, notify func()) *Intc {
	return &Intc{base: base, notify: notify}
}

// Raise marks line pending (edges coalesce while pending) and wakes the vCPU.
func (c *Intc) Raise(line int) {
	if line < 0 || line >= IntcLines {
		return
	}
	c.pending.Or(1 << line)
	if c.notify != nil {
		c.notify()
	}
}

// Post marks line pending without waking the vCPU: for interrupts the
// machine moderates, delivered at the vCPU's next stop.
func (c *Intc) Post(line int) {
	if line >= 0 && line < IntcLines {
		c.pending.Or(1 << line)
	}
}

// Next returns the vector of the highest-priority (lowest) unmasked pending
// line.
func (c *Intc) Next() (vector uint8, ok bool) {
	p := c.pending.Load() &^ c.mask.Load()
	if p == 0 {
		return 0, false
	}
	line := 0
	for p&1 == 0 {
		p >>= 1
		line++
	}
	return c.base + uint8(line), true
}

// Ack clears the pending line of vector once it has been injected.
func (c *Intc) Ack(vector uint8) {
	line := int(vector) - int(c.base)
	if line >= 0 && line < IntcLines {
		c.pending.And(^uint32(1 << line))
	}
}

// Masked reports whether the guest has disabled line.
func (c *Intc) Masked(line int) bool { return c.mask.Load()&(1<<line) != 0 }

// Pending reports whether any unmasked line is pending.
func (c *Intc) Pending() bool { return c.pending.Load()&^c.mask.Load() != 0 }

// Intc registers, as offsets from its base port.
const (
	intcMask  = 0 // read/write: bit n set = line n disabled
	intcRaise = 1 // write n: raise line n; read: the pending lines
	// IntcPorts is how many ports the controller occupies.
	IntcPorts = 2
)

// PortRead returns the mask register or the pending lines.
func (c *Intc) PortRead(port uint16, data []byte) {
	switch port {
	case intcMask:
		putLE(data, c.mask.Load())
	case intcRaise:
		putLE(data, c.pending.Load())
	}
}

// PortWrite sets the mask register or raises a line.
func (c *Intc) PortWrite(port uint16, data []byte) error {
	switch port {
	case intcMask:
		c.mask.Store(le32(data))
		if c.Pending() && c.notify != nil {
			c.notify()
		}
	case intcRaise:
		c.Raise(int(le32(data)))
	}
	return nil
}
