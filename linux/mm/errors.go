package mm

import "fmt"

// The failures of the address space's operations, which the kernel turns
// into errnos. Their texts are the ones the personality had before mm.
var (
	// ErrFault is an access to a page not mapped, or not writable for a
	// write: EFAULT.
	ErrFault = fmt.Errorf("bad address")
	// ErrNoMemory is guest RAM exhausted under a change that needs
	// frames: ENOMEM.
	ErrNoMemory = fmt.Errorf("guest RAM exhausted")
	// ErrUnmapped is a change to a range not wholly mapped: ENOMEM.
	ErrUnmapped = fmt.Errorf("range not mapped")
	// ErrMapCount is a change that would leave more ranges than
	// MaxMapCount allows: ENOMEM.
	ErrMapCount = fmt.Errorf("more than %d mappings", MaxMapCount)
	// ErrNameTooLong is a string longer than asked for: ENAMETOOLONG.
	ErrNameTooLong = fmt.Errorf("string too long")
)
