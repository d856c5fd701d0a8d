package linux

import (
	"errors"

	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
	"golang.org/x/sys/unix"
)

// memfd_create's flags (MFD_*), and the longest name it takes: NAME_MAX
// less the "memfd:" its file's name begins with.
const (
	mfdCloexec       = 1
	mfdAllowSealing  = 2
	mfdHugetlb       = 4
	mfdNoexecSeal    = 8
	mfdExec          = 0x10
	memfdNameMax     = 255 - len("memfd:")
	fSealExec        = 0x20 // F_SEAL_EXEC
	fSealWriteOrMore = unix.F_SEAL_WRITE | unix.F_SEAL_FUTURE_WRITE
)

// sysMemfdCreate makes an anonymous file (memfd_create): memory the
// program can write, map shared and hand to a child. Its name is only
// what /proc/self/fd shows. Huge pages there are none (EINVAL, as a
// kernel without hugetlbfs answers).
func sysMemfdCreate(t *thread, a args) (uint64, error) {
	flags := a[1]
	switch {
	case flags&^(mfdCloexec|mfdAllowSealing|mfdNoexecSeal|mfdExec) != 0,
		flags&mfdNoexecSeal != 0 && flags&mfdExec != 0:
		return 0, unix.EINVAL
	}
	name, err := t.proc.as.ReadString(a[0], memfdNameMax+1)
	switch {
	case errors.Is(err, mm.ErrNameTooLong):
		return 0, unix.EINVAL
	case err != nil:
		return 0, memErr(err)
	}
	n, err := t.k.fs.NewMemFD(flags&(mfdAllowSealing|mfdNoexecSeal) != 0)
	if err != nil {
		return 0, err
	}
	if flags&mfdNoexecSeal != 0 {
		n.Mode = 0o666
		_ = n.AddSeals(fSealExec) // sealable: cannot fail
	}
	f := t.k.fs.Open(n, "/memfd:"+name+" (deleted)", unix.O_RDWR|unix.O_LARGEFILE)
	return t.install(f, flags&mfdCloexec != 0)
}

// fcntlSeals serves F_ADD_SEALS and F_GET_SEALS, on a memfd only
// (EINVAL on any other file). Sealing needs a writable descriptor
// (EPERM); F_SEAL_WRITE, no writable shared mapping of the file (EBUSY).
func (t *thread) fcntlSeals(f *openFile, cmd, seals uint64) (uint64, error) {
	n := f.Node()
	if n == nil {
		return 0, unix.EINVAL
	}
	have, ok := n.Seals()
	switch {
	case !ok:
		return 0, unix.EINVAL
	case cmd == unix.F_GET_SEALS:
		return uint64(have), nil
	case !f.Writable():
		return 0, unix.EPERM
	case vfs.Seals(seals)&^vfs.AllSeals != 0:
		return 0, unix.EINVAL
	case have&unix.F_SEAL_SEAL != 0:
		return 0, unix.EPERM
	case seals&unix.F_SEAL_WRITE != 0 && t.k.mappedWritable(n):
		return 0, unix.EBUSY
	}
	return 0, n.AddSeals(vfs.Seals(seals))
}

// mappedWritable reports whether some process maps n shared and
// writable.
func (k *Kernel) mappedWritable(n *node) bool {
	o := k.shm[n]
	if o == nil {
		return false
	}
	for _, p := range k.liveProcesses() {
		for _, v := range p.as.VMAs() {
			if v.Obj == o && v.Prot&mm.ProtWrite != 0 {
				return true
			}
		}
	}
	return false
}

// sealedWrite reports whether n's seals forbid a new writable shared
// mapping.
func sealedWrite(n *node) bool {
	s, _ := n.Seals()
	return s&fSealWriteOrMore != 0
}
