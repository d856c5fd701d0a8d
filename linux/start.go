package linux

import (
	"fmt"
	"path"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// startCall is what RAX holds at the program's first exit: the start
// call, which the kernel's boot makes the vCPU run (the SYSCALL stub,
// reached directly) before the program's first instruction. Not a Linux
// system call number, and served only once.
const startCall = 1 << 20

// start finishes booting where the host's files can be read: at an exit,
// where the machine logs (or replays) what the host says. It places the
// files the user gave, opens the standard input, places the executable at
// its path and executes it as execve would.
func (k *Kernel) start() error {
	k.started = true
	init := k.proc()
	for _, m := range k.prog.Mounts {
		if err := k.mount(m); err != nil {
			return fmt.Errorf("linux: the file given as %s (%s): %w", m.Guest, m.Host, err)
		}
	}
	if k.prog.Stdin != "" {
		n, err := k.fs.Lookup(k.prog.Stdin)
		if err == nil && !n.IsRegular() {
			err = unix.EISDIR
		}
		if err == nil {
			err = k.fs.Load(n)
		}
		if err != nil {
			return fmt.Errorf("linux: standard input %s: %w", k.prog.Stdin, err)
		}
		init.fds.Set(0, k.fs.Open(n, k.prog.Stdin, unix.O_RDONLY), false)
	}
	if k.prog.Cwd != "" {
		if d, err := k.fs.Lookup(k.prog.Cwd); err == nil && d.Dir {
			init.cwd = d
		}
	}
	exe, err := k.placeExecutable()
	if err != nil {
		return fmt.Errorf("linux: %s: %w", k.prog.Path, err)
	}
	entry, sp, err := k.execImage(init, k.prog.Path, k.prog.Path, exe, k.prog.Argv, k.prog.Env)
	if err != nil {
		return err
	}
	if err := k.setBranchHook(); err != nil {
		return err
	}
	*k.m.VCPU().SyncedRegs() = kvm.Regs{RIP: entry, RSP: sp, RFLAGS: x86.RFLAGSReserved | x86.RFLAGSIF}
	k.returned = true
	return k.startBreak()
}

// mount places the host file or directory m.Host at m.Guest, over what
// the root has there; the directories leading to it are the root's, or
// made.
func (k *Kernel) mount(m Mount) error {
	a, err := hostView{k}.Stat(m.Host)
	if err != nil {
		return err
	}
	d, name, err := k.dirOf(m.Guest)
	if err != nil {
		return err
	}
	n, err := k.fs.HostNode(m.Host, a)
	if err != nil {
		return err
	}
	return k.fs.Replace(vfs.Entry{Dir: d, Name: name}, n)
}

// placeExecutable puts the program's executable, the tape's image, at its
// path, with the attributes the host's file there has (if it has one):
// the program finds its own bytes there (/proc/self/exe, a re-exec), not
// the host's, which a replay elsewhere might not have.
func (k *Kernel) placeExecutable() (*node, error) {
	d, name, err := k.dirOf(k.prog.Path)
	if err != nil {
		return nil, err
	}
	e := vfs.Entry{Dir: d, Name: name}
	old, err := k.fs.Entry(e)
	if err != nil {
		return nil, err
	}
	n, err := k.fs.NewNode(false, 0o755)
	if err != nil {
		return nil, err
	}
	if old != nil && old.IsRegular() {
		n.Mode, n.UID, n.GID, n.Times = old.Mode, old.UID, old.GID, old.Times
	}
	if err := k.fs.Loaded(n, path.Join(k.prog.Root, k.prog.Path), k.prog.Image, k.imageSum); err != nil {
		return nil, err
	}
	return n, k.fs.Replace(e, n)
}

// dirOf is the directory the absolute path p names an entry of, its links
// followed, made if the root has none there, and the entry's name.
func (k *Kernel) dirOf(p string) (*node, string, error) {
	dir, name := path.Split(vfs.Clean(p))
	d, err := k.fs.Lookup(dir)
	if err == unix.ENOENT {
		d, err = k.fs.MkdirAll(dir)
	}
	if err == nil && !d.Dir {
		err = unix.ENOTDIR
	}
	return d, name, err
}
