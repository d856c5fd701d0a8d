package devices

import "fmt"

// Each stateful device has a <device>_persist.go beside it, after
// Firecracker's persist.rs: a plain state type (exported fields of basic
// types, JSON and gob friendly), a Save that produces it and a Restore that
// applies it to a device freshly built by the device's own constructor, so
// that booting and restoring share the constructor and attach code.
// Host-side resources — files, goroutines, callbacks, guest RAM — are not
// state: the constructor supplies them.
//
// A saved state is as untrusted as a tape. Restore checks every field
// before it changes anything and refuses, with a *StateError, a value the
// device can never reach or one that does not fit the device it is
// restored into; on error the device is unchanged.
//
// Save and Restore run with the machine stopped: on the vCPU thread, or
// with the vCPU paused and host inputs quiet.

// StateError is a field of a saved device state that Restore refuses.
type StateError struct {
	Device string // "intc", "timer", "serial", "disk", "nic"
	Field  string // the field of the state type, as spelled there
	Value  any    // the value refused
	Reason string // why the device cannot be in that state
}

func (e *StateError) Error() string {
	return fmt.Sprintf("devices: restoring %s: %s = %v: %s", e.Device, e.Field, e.Value, e.Reason)
}
