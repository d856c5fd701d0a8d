// Package devices holds the machine's device models. A device sees only
// port offsets and data on a Bus; host-side input (time, interrupts, bytes)
// reaches it through small interfaces, so record and replay swap the input
// source and never the device.
package devices

import (
	"fmt"
	"sort"
)

// PortDevice is a device reached by port I/O. port is relative to the base
// the device was attached at. data is 1, 2 or 4 bytes (guest-chosen size):
// reads fill it, writes carry the guest's value.
type PortDevice interface {
	PortRead(port uint16, data []byte)
	PortWrite(port uint16, data []byte) error
}

type portRange struct {
	base, size uint16
	name       string
	dev        PortDevice
}

// end is one past the range's last port; uint32 because a range may end at
// 0xFFFF.
func (r *portRange) end() uint32 { return uint32(r.base) + uint32(r.size) }

// Bus dispatches port I/O to the attached devices. It is used only by the
// vCPU thread; devices that also change state from other goroutines lock
// internally.
type Bus struct {
	ranges     []portRange
	Unassigned uint64 // accesses to ports no device claims
}

// Attach claims [base, base+size) for dev.
func (b *Bus) Attach(name string, base, size uint16, dev PortDevice) error {
	if size == 0 || uint32(base)+uint32(size) > 0x10000 {
		return fmt.Errorf("devices: %s: bad port range %#x+%#x", name, base, size)
	}
	for _, r := range b.ranges {
		if uint32(base) < r.end() && uint32(r.base) < uint32(base)+uint32(size) {
			return fmt.Errorf("devices: %s at %#x+%#x overlaps %s at %#x+%#x", name, base, size, r.name, r.base, r.size)
		}
	}
	b.ranges = append(b.ranges, portRange{base: base, size: size, name: name, dev: dev})
	sort.Slice(b.ranges, func(i, j int) bool { return b.ranges[i].base < b.ranges[j].base })
	return nil
}

func (b *Bus) find(port uint16) *portRange {
	i := sort.Search(len(b.ranges), func(i int) bool { return b.ranges[i].end() > uint32(port) })
	if i < len(b.ranges) && b.ranges[i].base <= port {
		return &b.ranges[i]
	}
	return nil
}

// Read serves an IN. Unclaimed ports read as all ones, like an ISA bus.
func (b *Bus) Read(port uint16, data []byte) {
	if r := b.find(port); r != nil {
		r.dev.PortRead(port-r.base, data)
		return
	}
	b.Unassigned++
	for i := range data {
		data[i] = 0xff
	}
}

// Write serves an OUT. Writes to unclaimed ports are dropped. An error
// from a device stops the vCPU (e.g. the guest asked to power off).
func (b *Bus) Write(port uint16, data []byte) error {
	if r := b.find(port); r != nil {
		return r.dev.PortWrite(port-r.base, data)
	}
	b.Unassigned++
	return nil
}

// le32 widens a 1-, 2- or 4-byte little-endian port value.
func le32(data []byte) uint32 {
	var v uint32
	for i := len(data) - 1; i >= 0; i-- {
		v = v<<8 | uint32(data[i])
	}
	return v
}

// putLE fills data (1, 2 or 4 bytes) with v, little-endian.
func putLE(data []byte, v uint32) {
	for i := range data {
		data[i] = byte(v >> (8 * i))
	}
}
