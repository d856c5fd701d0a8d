package devices

import (
	"fmt"
	"math"

	"github.com/reprise-vm/reprise/abi"
)

// NICState is the NIC's registers and ring positions. The rings themselves
// (descriptors, buffers, done bits) are in guest RAM, saved with it; Send,
// RXPosted and the backend are the constructor's and the machine's.
//
// Indices run free: slot i%abi.NICRing of a ring holds index i.
type NICState struct {
	// Attached says a network backend is behind the NIC (the info
	// register). The constructor sets it, not the guest: Restore only
	// checks it, since a guest that found a network must not lose it.
	Attached bool
	RXRing   uint64 // GPA of the RX ring, as the guest wrote it (32 bits; 0: none)
	TXRing   uint64 // GPA of the TX ring, as the guest wrote it (32 bits; 0: none)
	RXHead   uint32 // receive buffers filled so far
	RXTail   uint32 // receive buffers posted so far; at most abi.NICRing past RXHead
	TXHead   uint32 // transmit frames taken so far
	Bad      uint64 // descriptors or frames the NIC refused
}

// Save returns the NIC's state.
func (n *NIC) Save() NICState {
	return NICState{
		Attached: n.attached,
		RXRing:   n.rxRing, TXRing: n.txRing,
		RXHead: n.rxHead, RXTail: n.rxTail, TXHead: n.txHead,
		Bad: n.Bad,
	}
}

// Restore sets the NIC's registers and ring positions from s. It does not
// call RXPosted: the buffers were posted before the snapshot.
func (n *NIC) Restore(s NICState) error {
	if err := s.check(n.attached); err != nil {
		return err
	}
	n.rxRing, n.txRing = s.RXRing, s.TXRing
	n.rxHead, n.rxTail, n.txHead = s.RXHead, s.RXTail, s.TXHead
	n.Bad = s.Bad
	return nil
}

// check refuses what the port handlers never leave behind.
func (s *NICState) check(attached bool) error {
	bad := func(field string, v any, format string, args ...any) error {
		return &StateError{"nic", field, v, fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Attached != attached:
		return bad("Attached", s.Attached, "this NIC has attached = %t: the network behind it differs from the saved machine's", attached)
	case s.RXRing > math.MaxUint32:
		return bad("RXRing", s.RXRing, "the ring register is 32 bits")
	case s.TXRing > math.MaxUint32:
		return bad("TXRing", s.TXRing, "the ring register is 32 bits")
	case s.RXTail-s.RXHead > abi.NICRing:
		return bad("RXTail", s.RXTail, "%d buffers past RXHead = %d; at most a ring (abi.NICRing = %d) can be posted", s.RXTail-s.RXHead, s.RXHead, abi.NICRing)
	case s.RXRing == 0 && s.RXHead != 0:
		return bad("RXHead", s.RXHead, "no RX ring, so nothing was received (setting a ring resets the indices)")
	case s.TXRing == 0 && s.TXHead != 0:
		return bad("TXHead", s.TXHead, "no TX ring, so nothing was sent (setting a ring resets the indices)")
	}
	return nil
}
