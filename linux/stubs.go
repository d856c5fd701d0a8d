package linux

import (
	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// The SYSCALL stub, at LSTAR: exit to the VMM, which serves the call and
// resumes the program after its SYSCALL itself, at CPL3 whether SYSCALL
// left it there (PVM hosts) or entered CPL0 (VMX hosts).
var syscallStub = []byte{
	0xE6, abi.PortSyscall, // out %al, $PortSyscall: one port, the one the I/O bitmap opens
}

// errorCodeVectors are the exceptions for which the CPU pushes an error
// code.
var errorCodeVectors = map[int]bool{8: true, 10: true, 11: true, 12: true, 13: true, 14: true, 17: true, 21: true, 29: true, 30: true}

// Exception stubs, one abi.VectorStubSize slot per vector: push a zero
// error code where the CPU pushes none, push the vector, exit to the VMM.
// The VMM reads the frame at RSP: vector, error code, then the CPU's
// interrupt frame (RIP, CS, RFLAGS, RSP, SS); a trap it handles (an
// emulated instruction) resumes through the IRETQ, at the frame's RIP.
func writeStubs(ram *memory.RAM) error {
	if err := ram.Write(stubPage, syscallStub); err != nil {
		return err
	}
	for v := 0; v < 256; v++ {
		var code []byte
		if !errorCodeVectors[v] {
			code = append(code, 0x6A, 0x00) // push $0
		}
		code = append(code, 0x68, byte(v), 0, 0, 0) // push $v
		code = append(code,
			0xE6, abi.PortTrap, // out %al, $PortTrap
			0x48, 0x83, 0xC4, 0x10, // add $16, %rsp: drop the vector and error code
			0x48, 0xCF) // iretq: resume where the VMM left the frame
		if err := ram.Write(vectorsPage+uint64(v)*abi.VectorStubSize, code); err != nil {
			return err
		}
	}
	return nil
}
