package vmm

import (
	"crypto/rand"
	"time"

	"github.com/reprise-vm/reprise/kvm"
)

// live is the engine of a machine without one: inputs from the host,
// interrupts injected as soon as the guest can take them, nothing kept.
type live struct{ m *Machine }

func (e *live) Attach(m *Machine) error { e.m = m; return nil }

func (e *live) BeforeEntry(Stop) error {
	m := e.m
	if m.Stopping() {
		return ErrStopped
	}
	vector, ok := m.NextInterrupt()
	switch {
	case !ok:
		m.RequestInterruptWindow(false)
	case !m.ReadyForInterrupt():
		m.RequestInterruptWindow(true)
	default:
		_, err := m.Deliver(vector)
		return err
	}
	return nil
}

func (e *live) GuestExit() error                           { return nil }
func (e *live) QuietExit(Position) bool                    { return !e.m.InterruptPending() }
func (e *live) PortIn(uint16, []byte) error                { return nil }
func (e *live) Clock() (time.Duration, error)              { return e.m.Now(), nil }
func (e *live) Entropy(b []byte) error                     { _, err := rand.Read(b); return err }
func (e *live) NetTX([]byte) error                         { return nil }
func (e *live) Halt() error                                { return e.m.Idle() }
func (e *live) Breakpoint(*kvm.Regs) (uint64, bool, error) { return 0, false, nil }
func (e *live) ProbeExit(*kvm.Regs) (uint64, bool, error)  { return 0, false, nil }
func (e *live) BeforeEnd() error                           { return nil }
func (e *live) Finish(_ *End, runErr error) error          { return runErr }
