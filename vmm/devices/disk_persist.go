package devices

import (
	"errors"
	"fmt"
)

// DiskState is the disk's state between requests. Requests are saved
// nowhere: a request in flight holds host I/O and a pending DMA into guest
// RAM, so a snapshot is taken only with the disk idle and Save refuses
// otherwise (ErrDiskBusy) rather than lose them.
//
// The disk's contents are not here either: they are its DiskStore's, a base
// image and an overlay file, host resources the constructor is given.
// OverlaySectors only guards against restoring over a store that has lost
// the guest's writes (OpenDiskStore starts with an empty overlay); carrying
// the overlay itself belongs to the checkpoint format, with the RAM image.
type DiskState struct {
	// Sectors is the capacity the guest reads (0: no disk). The store sets
	// it: Restore only checks it.
	Sectors uint64
	// OverlaySectors is how many sectors the guest had written, whose
	// contents are in the store's overlay. Restore only checks it, against
	// the store it is given: a count, not the contents.
	OverlaySectors uint64
	Dropped        uint64 // descriptors outside RAM, as Disk.Dropped
	Refused        uint64 // submissions beyond abi.DiskMaxQueued, as Disk.Refused
}

// ErrDiskBusy means the disk has requests submitted and not completed: its
// state can neither be saved nor restored over until the machine has
// completed them.
var ErrDiskBusy = errors.New("devices: disk busy")

func (d *Disk) checkIdle(doing string) error {
	d.mu.Lock()
	n := d.inFlightLocked()
	d.mu.Unlock()
	if n == 0 {
		return nil
	}
	requests := "requests"
	if n == 1 {
		requests = "request"
	}
	return fmt.Errorf("%w: %d %s submitted and not completed; %s", ErrDiskBusy, n, requests, doing)
}

// contents is the capacity and the number of written sectors of d's store.
func (d *Disk) contents() (sectors, written uint64) {
	if d.store == nil {
		return 0, 0
	}
	return d.store.Sectors(), d.store.writtenSectors()
}

// Save returns the disk's state, or ErrDiskBusy while requests are in
// flight.
func (d *Disk) Save() (DiskState, error) {
	if err := d.checkIdle("a snapshot is taken only with the disk idle"); err != nil {
		return DiskState{}, err
	}
	sectors, written := d.contents()
	return DiskState{Sectors: sectors, OverlaySectors: written, Dropped: d.Dropped, Refused: d.Refused}, nil
}

// Restore sets the disk's counters from s, after checking that s fits the
// store the disk was built with. It refuses a disk with requests in flight:
// restore into a freshly built one.
func (d *Disk) Restore(s DiskState) error {
	if err := d.checkIdle("restore only into a freshly built disk"); err != nil {
		return err
	}
	sectors, written := d.contents()
	if s.Sectors != sectors {
		return &StateError{"disk", "Sectors", s.Sectors, fmt.Sprintf("the disk attached has %d sectors", sectors)}
	}
	if s.OverlaySectors != written {
		return &StateError{"disk", "OverlaySectors", s.OverlaySectors,
			fmt.Sprintf("the store's overlay holds %d written sectors: the guest's writes were not restored with the disk", written)}
	}
	d.Dropped, d.Refused = s.Dropped, s.Refused
	return nil
}
