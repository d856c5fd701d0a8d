package devices

import "fmt"

// IntcState is the interrupt controller's state.
type IntcState struct {
	// Base is the vector of line 0. The constructor sets it, not the guest:
	// Restore only checks it, refusing a state from a controller with
	// another base, whose pending lines would reach the guest as other
	// vectors.
	Base uint8
	// Pending has bit n set while line n is raised and not yet acknowledged.
	Pending uint32
	// Mask has bit n set while the guest has disabled line n.
	Mask uint32
}

// Every bit pattern of Pending and Mask is one the guest can reach (it
// writes the whole mask register and can raise any line), provided a
// uint32 has exactly one bit per line; this does not compile otherwise.
var _ = [1]struct{}{}[IntcLines-32]

// Save returns the controller's state. A Raise from another goroutine
// during Save lands in it or after it, as if it came a moment later.
func (c *Intc) Save() IntcState {
	return IntcState{Base: c.base, Pending: c.pending.Load(), Mask: c.mask.Load()}
}

// Restore sets the pending and mask registers from s. It does not call
// notify: the vCPU is not running yet, and the machine asks Next before
// every entry into the guest.
func (c *Intc) Restore(s IntcState) error {
	if s.Base != c.base {
		return &StateError{"intc", "Base", s.Base, fmt.Sprintf("saved with line 0 at vector %#x; this controller has it at %#x", s.Base, c.base)}
	}
	c.mask.Store(s.Mask)
	c.pending.Store(s.Pending)
	return nil
}
