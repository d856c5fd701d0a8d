package linux

import "github.com/reprise-vm/reprise/linux/mm"

// addressSpace is a process's address space (package mm), under the
// names the system calls have always used for its accesses.
type addressSpace struct{ *mm.Space }

func newAddressSpace(fr *mm.Frames) (*addressSpace, error) {
	s, err := mm.New(fr)
	if err != nil {
		return nil, err
	}
	return &addressSpace{s}, nil
}

// clone is a fork's copy of the address space (mm.Space.Clone).
func (as *addressSpace) clone() (*addressSpace, error) {
	s, err := as.Clone()
	if err != nil {
		return nil, err
	}
	return &addressSpace{s}, nil
}

func (as *addressSpace) read(va uint64, b []byte) error  { return as.Read(va, b) }
func (as *addressSpace) write(va uint64, b []byte) error { return as.Write(va, b) }
func (as *addressSpace) putUint64(va, v uint64) error    { return as.PutUint64(va, v) }

func (as *addressSpace) readString(va uint64, max int) (string, error) {
	return as.ReadString(va, max)
}

// Mapping is a file mapped into a process: what names the addresses in
// it (mm.Mapping).
type Mapping = mm.Mapping

type prot = mm.Prot

const (
	protRead  = mm.ProtRead
	protWrite = mm.ProtWrite
	protExec  = mm.ProtExec
)

// The address space's failures, which memErr turns into errnos.
var (
	errFault       = mm.ErrFault
	errNoMemory    = mm.ErrNoMemory
	errUnmapped    = mm.ErrUnmapped
	errMapCount    = mm.ErrMapCount
	errNameTooLong = mm.ErrNameTooLong
)

func checkRange(start, length uint64) (end uint64, ok bool) { return mm.CheckRange(start, length) }
