package devices

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// NIC registers, as offsets from its base port (abi.PortNICRXRing).
const (
	nicRXRing = 0x0 // write: GPA of the RX ring
	nicTXRing = 0x4 // write: GPA of the TX ring
	nicRXTail = 0x8 // write: RX buffers posted up to this index
	nicTXTail = 0xC // write: TX frames queued up to this index
	nicInfo   = 0x10
	// NICPorts is how many ports the NIC occupies.
	NICPorts = 0x14
)

// NIC is a network card with descriptor rings in guest RAM. It moves frames
// between the rings and the machine and knows nothing of where they come
// from or go: received frames are handed to Deliver — from the host backend
// when live or recording, from the tape in replay — which the machine calls
// as it injects the NIC interrupt, so the RX "complete" bits are set at
// that one position (InSight §2.2.1). Frames the guest sends are taken at
// its TX doorbell and passed to Send, which the machine's input source
// decides (send, log, or compare with the recording).
//
// Ring addresses, indices and lengths are guest-controlled: descriptors
// outside RAM, oversized frames and buffers that do not fit are skipped and
// counted, never followed.
type NIC struct {
	ram      *memory.RAM
	attached bool
	// Send receives each frame the guest transmits; an error stops the vCPU.
	Send func(frame []byte) error
	// RXPosted is called when the guest posts receive buffers.
	RXPosted func()

	rxRing, txRing uint64
	rxTail, rxHead uint32 // posted up to rxTail; filled up to rxHead
	txHead         uint32
	Bad            uint64 // descriptors or frames the device refused
}

// NewNIC returns a NIC; attached says whether a network backend is behind
// it (the guest reads this from the info register).
func NewNIC(ram *memory.RAM, attached bool) *NIC {
	return &NIC{ram: ram, attached: attached}
}

// PortRead serves the info register.
func (n *NIC) PortRead(port uint16, data []byte) {
	var v uint32
	if port == nicInfo && n.attached {
		v = 1
	}
	putLE(data, v)
}

// PortWrite serves the ring and doorbell registers.
func (n *NIC) PortWrite(port uint16, data []byte) error {
	v := le32(data)
	switch port {
	case nicRXRing:
		n.rxRing, n.rxHead, n.rxTail = uint64(v), 0, 0
	case nicTXRing:
		n.txRing, n.txHead = uint64(v), 0
	case nicRXTail:
		// At most a ring's worth may be outstanding.
		if v-n.rxHead <= abi.NICRing {
			n.rxTail = v
		} else {
			n.Bad++
		}
		if n.RXPosted != nil {
			n.RXPosted()
		}
	case nicTXTail:
		return n.transmit(v)
	}
	return nil
}

// RXFree is how many posted receive buffers are still empty.
func (n *NIC) RXFree() int {
	if n.rxRing == 0 {
		return 0
	}
	return int(n.rxTail - n.rxHead)
}

func (n *NIC) desc(ring uint64, i uint32) (buf uint64, length uint16, ok bool) {
	raw, err := n.ram.Slice(ring+uint64(i%abi.NICRing)*abi.NICDescSize, abi.NICDescSize)
	if err != nil {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(raw), binary.LittleEndian.Uint16(raw[8:]), true
}

func (n *NIC) complete(ring uint64, i uint32, length uint16) {
	var b [4]byte
	binary.LittleEndian.PutUint16(b[0:], length)
	binary.LittleEndian.PutUint16(b[2:], abi.NICDone)
	_ = n.ram.Write(ring+uint64(i%abi.NICRing)*abi.NICDescSize+8, b[:])
}

// Deliver puts frames into the posted receive buffers, in order, and
// returns a digest of what it delivered. A frame that does not fit its
// buffer is dropped (and counted); frames beyond the posted buffers are the
// caller's to keep (it asked RXFree).
func (n *NIC) Deliver(frames [][]byte) []byte {
	h := fnv.New64a()
	for _, f := range frames {
		if n.RXFree() == 0 {
			n.Bad++
			continue
		}
		buf, capacity, ok := n.desc(n.rxRing, n.rxHead)
		if !ok || len(f) > int(capacity) || n.ram.Write(buf, f) != nil {
			n.Bad++
			n.complete(n.rxRing, n.rxHead, 0) // the buffer comes back empty
			n.rxHead++
			continue
		}
		n.complete(n.rxRing, n.rxHead, uint16(len(f)))
		n.rxHead++
		h.Write(f)
	}
	var head [4]byte
	binary.LittleEndian.PutUint32(head[:], n.rxHead)
	h.Write(head[:])
	return h.Sum(nil)
}

// transmit takes the frames queued up to tail and hands each to Send.
func (n *NIC) transmit(tail uint32) error {
	if n.txRing == 0 || tail-n.txHead > abi.NICRing {
		n.Bad++
		return nil
	}
	for ; n.txHead != tail; n.txHead++ {
		buf, length, ok := n.desc(n.txRing, n.txHead)
		if !ok {
			n.Bad++
			continue
		}
		frame, err := n.ram.Slice(buf, uint64(length))
		if err != nil || length == 0 || length > abi.NICFrameMax {
			n.Bad++
			n.complete(n.txRing, n.txHead, length)
			continue
		}
		if n.Send != nil {
			if err := n.Send(append([]byte(nil), frame...)); err != nil {
				return err
			}
		}
		n.complete(n.txRing, n.txHead, length)
	}
	return nil
}
