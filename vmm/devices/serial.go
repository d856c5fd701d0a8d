package devices

import "io"

// 16550 UART register offsets and bits (the subset a console needs).
const (
	uartData    = 0 // THR (write) / RBR (read); divisor low with DLAB
	uartIER     = 1 // interrupt enable; divisor high with DLAB
	uartIIR     = 2 // interrupt identification (read) / FCR (write)
	uartLCR     = 3
	uartMCR     = 4
	uartLSR     = 5
	uartMSR     = 6
	uartScratch = 7

	lcrDLAB      = 0x80
	ierBits      = 0x0f // the interrupt enable bits a 16550 has
	mcrBits      = 0x1f // the modem control bits a 16550 has
	lsrTHRE      = 0x20 // transmit holding register empty
	lsrTEMT      = 0x40 // transmitter empty
	iirNoIntr    = 0x01
	msrDCDDSRCTS = 0xb0

	// SerialPorts is how many ports a UART occupies.
	SerialPorts = 8
)

// Serial is a transmit-only 16550 console: bytes written to THR go to Out.
// The transmitter is always ready, so the guest never polls. Receive is not
// wired (no console input yet); RBR reads 0.
type Serial struct {
	Out io.Writer

	ier, lcr, mcr, scratch uint8
	dll, dlm               uint8
}

// PortRead implements PortDevice.
func (s *Serial) PortRead(port uint16, data []byte) {
	var v uint8
	switch port {
	case uartData:
		if s.lcr&lcrDLAB != 0 {
			v = s.dll
		}
	case uartIER:
		v = s.ier
		if s.lcr&lcrDLAB != 0 {
			v = s.dlm
		}
	case uartIIR:
		v = iirNoIntr
	case uartLCR:
		v = s.lcr
	case uartMCR:
		v = s.mcr
	case uartLSR:
		v = lsrTHRE | lsrTEMT
	case uartMSR:
		v = msrDCDDSRCTS
	case uartScratch:
		v = s.scratch
	}
	putLE(data, uint32(v))
}

// PortWrite implements PortDevice. Console output errors are not the
// guest's fault and must not stop it; they are dropped like a full FIFO.
func (s *Serial) PortWrite(port uint16, data []byte) error {
	v := uint8(le32(data))
	switch port {
	case uartData:
		if s.lcr&lcrDLAB != 0 {
			s.dll = v
		} else if s.Out != nil {
			_, _ = s.Out.Write([]byte{v})
		}
	case uartIER:
		if s.lcr&lcrDLAB != 0 {
			s.dlm = v
		} else {
			s.ier = v & ierBits
		}
	case uartLCR:
		s.lcr = v
	case uartMCR:
		s.mcr = v & mcrBits
	case uartScratch:
		s.scratch = v
	}
	return nil
}
