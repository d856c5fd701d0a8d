package devices

import "crypto/rand"

// Entropy gives the guest random bits from the host on every read. It is a
// nondeterministic input like any device read: a recording logs each value
// and a replay returns the logged one. Stateless: nothing to save.
type Entropy struct{}

// PortRead fills data with random bytes.
func (Entropy) PortRead(port uint16, data []byte) { _, _ = rand.Read(data) }

// PortWrite ignores writes.
func (Entropy) PortWrite(port uint16, data []byte) error { return nil }
