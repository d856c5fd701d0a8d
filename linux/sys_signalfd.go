package linux

import (
	"encoding/binary"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// signalfd: the signals pending for the thread that reads or polls it,
// taken as struct signalfd_siginfo. The kernel's signalfds, in creation
// order, are told when a signal becomes pending (signal.go), so their
// readers and pollers wake in the recording's order.

// signals is the kernel as the signalfds' source: the running thread's
// pending signals, the one reading or polling.
type signals struct{ k *Kernel }

func (s signals) SignalPending(mask uint64) bool { return s.k.current().pending&mask != 0 }

// TakeSignal dequeues the lowest pending signal in mask as struct
// signalfd_siginfo: the siginfo's fields at their signalfd places.
func (s signals) TakeSignal(mask uint64) ([128]byte, bool) {
	t := s.k.current()
	ready := t.pending & mask
	if ready == 0 {
		return [128]byte{}, false
	}
	sig := uint64(1)
	for ready&sigbit(sig) == 0 {
		sig++
	}
	t.pending &^= sigbit(sig)
	si := t.infos[sig]
	delete(t.infos, sig)
	le := binary.LittleEndian
	var out [128]byte
	le.PutUint32(out[0:], uint32(sig))       // ssi_signo
	le.PutUint32(out[4:], le.Uint32(si[4:])) // ssi_errno
	le.PutUint32(out[8:], le.Uint32(si[8:])) // ssi_code
	switch code := int32(le.Uint32(si[8:])); {
	case code == -2: // SI_TIMER: ssi_tid, ssi_overrun, ssi_ptr and ssi_int
		le.PutUint32(out[24:], le.Uint32(si[16:]))
		le.PutUint32(out[32:], le.Uint32(si[20:]))
		le.PutUint64(out[48:], le.Uint64(si[24:]))
		le.PutUint32(out[44:], le.Uint32(si[24:]))
	case sig == uint64(unix.SIGCHLD) && code > 0: // ssi_pid, ssi_uid, ssi_status
		le.PutUint32(out[12:], le.Uint32(si[16:]))
		le.PutUint32(out[16:], le.Uint32(si[20:]))
		le.PutUint32(out[40:], le.Uint32(si[24:]))
	default: // ssi_pid and ssi_uid of kill's and tgkill's
		le.PutUint32(out[12:], le.Uint32(si[16:]))
		le.PutUint32(out[16:], le.Uint32(si[20:]))
	}
	return out, true
}

func sysSignalfd(t *thread, a args) (uint64, error) {
	return sysSignalfd4(t, args{a[0], a[1], a[2], 0})
}

// sysSignalfd4 makes a signalfd for the signals in the mask at a[1], or
// (fd not -1) changes an existing one's mask.
func sysSignalfd4(t *thread, a args) (uint64, error) {
	if a[2] != 8 || a[3]&^(unix.SFD_CLOEXEC|unix.SFD_NONBLOCK) != 0 {
		return 0, unix.EINVAL
	}
	var b [8]byte
	if err := t.proc.as.Read(a[1], b[:]); err != nil {
		return 0, memErr(err)
	}
	mask := binary.LittleEndian.Uint64(b[:]) &^ unblockable
	if int32(a[0]) != -1 {
		f, err := t.proc.fds.Get(uint64(uint32(a[0])))
		if err != nil {
			return 0, err
		}
		sf := vfs.SignalFDOf(f)
		if sf == nil {
			return 0, unix.EINVAL
		}
		sf.Mask = mask
		sf.Changed()
		return a[0] & 0xffffffff, nil
	}
	f, _ := vfs.NewSignalFD(signals{t.k}, mask, a[3])
	fd, err := t.install(f, a[3]&unix.SFD_CLOEXEC != 0)
	if err == nil {
		t.k.signalfds = append(t.k.signalfds, f)
	}
	return fd, err
}

// signalPending tells the open signalfds that a signal became pending,
// and forgets the closed ones.
func (k *Kernel) signalPending() {
	k.signalfds = slices.DeleteFunc(k.signalfds, func(f *openFile) bool { return vfs.SignalFDOf(f).Closed() })
	for _, f := range k.signalfds {
		vfs.SignalFDOf(f).Changed()
	}
}
