package linux

import (
	"fmt"

	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/door"
)

// The door: host clients' connections to the program's published ports
// (vmm/door, linux/vfs's socket_door.go). Their messages arrive with a NIC
// interrupt, at a position a replay finds again, and are applied to the
// sockets here; what the program's sockets send back is handed to the
// machine after each exit and interrupt, so it is logged at the exit the
// program made it.

var _ vmm.NetKernel = (*Kernel)(nil)

// Receive applies the door's messages, in order (vmm.NetKernel). A
// message that is not one the host side sends is an error naming it: it
// came from a damaged tape.
func (k *Kernel) Receive(msgs [][]byte) error {
	for i, b := range msgs {
		m, err := door.Parse(b)
		if err != nil {
			return fmt.Errorf("door message %d of %d: %w", i+1, len(msgs), err)
		}
		if m.Op == door.Open {
			err = k.fs.Arrive(m, k.fs.NewIno())
		} else {
			err = k.fs.Deliver(m)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// flushDoor hands what the program's sockets sent through the door to
// the machine.
func (k *Kernel) flushDoor() error {
	for _, m := range k.fs.TakeOutbox() {
		if err := k.m.SendDoor(&m); err != nil {
			return err
		}
	}
	return nil
}

// SetWire makes w see the packets the program's own internet sockets send
// each other (vfs.Wire): they are not inputs, so a replay sees them
// again as the recording made them.
func (k *Kernel) SetWire(w vfs.Wire) { k.fs.SetWire(w) }
