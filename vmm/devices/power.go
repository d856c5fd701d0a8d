package devices

import "fmt"

// PowerOff is the error the exit port returns: the guest asked the machine
// to stop with Status.
type PowerOff struct {
	Status uint32
}

func (p *PowerOff) Error() string { return fmt.Sprintf("guest powered off with status %d", p.Status) }

// ExitPort is the shutdown device: a write ends the run with the value as
// the guest's exit status. Stateless: nothing to save.
type ExitPort struct{}

// PortRead reads 0.
func (ExitPort) PortRead(port uint16, data []byte) { putLE(data, 0) }

// PortWrite stops the machine.
func (ExitPort) PortWrite(port uint16, data []byte) error {
	return &PowerOff{Status: le32(data)}
}

// Null ignores writes and reads zero: a target for exit round-trip
// benchmarks. Stateless: nothing to save.
type Null struct{}

// PortRead reads 0.
func (Null) PortRead(port uint16, data []byte) { putLE(data, 0) }

// PortWrite does nothing.
func (Null) PortWrite(port uint16, data []byte) error { return nil }
