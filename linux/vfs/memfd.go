package vfs

import "golang.org/x/sys/unix"

// Seals are what a memfd's contents may no longer have done to them
// (F_ADD_SEALS): F_SEAL_SEAL, SHRINK, GROW, WRITE, FUTURE_WRITE, EXEC.
type Seals uint32

// AllSeals are the seals Linux knows.
const AllSeals = Seals(unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_FUTURE_WRITE | 0x20)

// NewMemFD makes a memfd's file: anonymous memory, a regular file in no
// directory (freed when its last open file closes, so the caller opens
// it at once), every permission, sealable if asked (else sealed against
// more seals, as Linux's).
func (fs *FileSystem) NewMemFD(sealable bool) (*Node, error) {
	n, err := fs.NewNode(false, 0o777)
	if err != nil {
		return nil, err
	}
	n.removed, n.memfd = true, true
	if !sealable {
		n.seals = unix.F_SEAL_SEAL
	}
	return n, nil
}

// Seals are a memfd's seals; ok is false for any other file, which has
// none to give.
func (n *Node) Seals() (s Seals, ok bool) { return n.seals, n.memfd }

// AddSeals seals a memfd further: EINVAL for any other file or a seal
// Linux does not know, EPERM once F_SEAL_SEAL is set.
func (n *Node) AddSeals(s Seals) error {
	switch {
	case !n.memfd || s&^AllSeals != 0:
		return unix.EINVAL
	case n.seals&unix.F_SEAL_SEAL != 0:
		return unix.EPERM
	}
	n.seals |= s
	return nil
}

// sealedAgainst answers EPERM if a seal of n forbids a change of its
// contents from size old to size new (a write leaves the size, or grows
// it).
func (n *Node) sealedAgainst(old, new int64, write bool) error {
	switch {
	case write && n.seals&(unix.F_SEAL_WRITE|unix.F_SEAL_FUTURE_WRITE) != 0,
		new > old && n.seals&unix.F_SEAL_GROW != 0,
		new < old && n.seals&unix.F_SEAL_SHRINK != 0:
		return unix.EPERM
	}
	return nil
}
