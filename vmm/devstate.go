package vmm

import (
	"errors"
	"fmt"

	"github.com/reprise-vm/reprise/vmm/devices"
)

// DeviceState is the state of every device of a machine; each device's
// own is saved and checked beside it, in package devices. It is plain
// data (JSON and gob encode it) and, read back, as untrusted as a tape:
// every field is checked before a device takes it.
type DeviceState struct {
	Serial devices.SerialState
	Intc   devices.IntcState
	Timer  devices.TimerState
	Disk   devices.DiskState
	NIC    devices.NICState
}

// SaveDevices returns the devices' state. The machine must be stopped —
// not running, or on the vCPU thread between entries (an engine) — and
// its disk idle (devices.ErrDiskBusy otherwise).
func (m *Machine) SaveDevices() (*DeviceState, error) {
	disk, err := m.disk.Save()
	if err != nil {
		return nil, fmt.Errorf("vmm: saving devices: %w", err)
	}
	return &DeviceState{
		Serial: m.serial.Save(),
		Intc:   m.intc.Save(),
		Timer:  m.timer.Save(),
		Disk:   disk,
		NIC:    m.nic.Save(),
	}, nil
}

// restoreDevices applies s to the devices attachDevices has just built. A
// device that refuses its state is left as built, the ones before it
// restored: New then discards the machine.
func (m *Machine) restoreDevices(s *DeviceState) error {
	for _, restore := range []func() error{
		func() error { return m.serial.Restore(s.Serial) },
		func() error { return m.intc.Restore(s.Intc) },
		func() error { return m.timer.Restore(s.Timer) },
		func() error { return m.disk.Restore(s.Disk) },
		func() error { return m.nic.Restore(s.NIC) },
	} {
		if err := restore(); err != nil {
			return fmt.Errorf("vmm: %w", err)
		}
	}
	return nil
}

// HasDisk reports whether the machine has a disk.
func (m *Machine) HasDisk() bool { return m.store != nil }

// DiskWrites is what the guest has written to its disk (SaveOverlay);
// ok is false for a machine without one.
func (m *Machine) DiskWrites() (written []uint64, chunks map[uint64][]byte, ok bool, err error) {
	if m.store == nil {
		return nil, nil, false, nil
	}
	written, chunks, err = m.store.SaveOverlay()
	return written, chunks, true, err
}

// RestoreDiskWrites writes them back into the disk of a machine that has
// not run (before Restore, which checks the count of written sectors).
func (m *Machine) RestoreDiskWrites(written []uint64, chunks map[uint64][]byte) error {
	if m.store == nil {
		return errors.New("vmm: disk writes for a machine without a disk")
	}
	return m.store.RestoreOverlay(written, chunks)
}
