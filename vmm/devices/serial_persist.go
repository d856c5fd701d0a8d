package devices

import "fmt"

// SerialState is the UART's registers. The rest reads as constants (IIR:
// no interrupt, LSR: transmitter empty, MSR: carrier, RBR: 0), and Out is
// the constructor's.
type SerialState struct {
	IER     uint8 // interrupt enable; only the low 4 bits exist
	LCR     uint8 // line control; bit 7 (DLAB) puts the divisor latch at ports 0 and 1
	MCR     uint8 // modem control; only the low 5 bits exist
	Scratch uint8 // the scratch register, whatever the guest left there
	DLL     uint8 // divisor latch, low byte
	DLM     uint8 // divisor latch, high byte
}

// Save returns the UART's registers.
func (s *Serial) Save() SerialState {
	return SerialState{IER: s.ier, LCR: s.lcr, MCR: s.mcr, Scratch: s.scratch, DLL: s.dll, DLM: s.dlm}
}

// Restore sets the UART's registers from st.
func (s *Serial) Restore(st SerialState) error {
	if st.IER&^ierBits != 0 {
		return &StateError{"serial", "IER", st.IER, fmt.Sprintf("bits outside %#x do not exist", ierBits)}
	}
	if st.MCR&^mcrBits != 0 {
		return &StateError{"serial", "MCR", st.MCR, fmt.Sprintf("bits outside %#x do not exist", mcrBits)}
	}
	s.ier, s.lcr, s.mcr, s.scratch, s.dll, s.dlm = st.IER, st.LCR, st.MCR, st.Scratch, st.DLL, st.DLM
	return nil
}
