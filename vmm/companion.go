package vmm

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
)

// A Companion is work a Kernel does on a host thread of its own while the
// vCPU runs the guest, from the other host CPU: a Linux program's
// exception-less system calls (linux/fastcall.go), which the guest posts
// in its memory and spins for instead of exiting. It runs for the whole
// of Run; Hold gives it the machine as the vCPU thread has it between
// two KVM_RUNs.
type Companion func(c *Beside)

// Beside is a Companion's side of the run.
type Beside struct {
	m      *Machine
	done   atomic.Bool
	parked atomic.Bool
	wake   chan struct{}
	// cpus are the host CPUs the companion runs on, vcpuCPUs the
	// vCPU's (splitCPUs); none: wherever the host puts them.
	cpus     unix.CPUSet
	vcpuCPUs []int
}

// SetCompanion makes f run beside the vCPU during Run.
func (m *Machine) SetCompanion(f Companion) { m.companion = f }

// BesideEngine is an Engine that lets a companion serve a guest exit in
// place of the vCPU loop (ServeBeside): QuietExit says whether it has
// nothing to do at a guest exit at position at — what its BeforeEntry
// would do there at StopGuestExit, nothing. An engine that is not one
// is never asked.
type BesideEngine interface {
	QuietExit(at Position) bool
}

// FinishingKernel is a Kernel some of whose exits finish what a
// companion served beside (a system call that blocked, say): such an
// exit is the one ServeBeside counted, not another.
type FinishingKernel interface {
	FinishesBeside(port uint16) bool
}

// ServeBeside counts a guest exit at port that the companion serves in
// the vCPU loop's place — a system call the guest posted and spins for —
// if the engine has nothing to do there, and runs serve as the loop would
// run the exit's handling: events logged meanwhile carry the exit's
// position and regs' digest, the registers the exit would have shown.
// It reports whether it did. Call it under Hold. If the engine finds
// something to do there after all (QuietAfter), the guest must make the
// exit, which FinishingKernel tells from a new one.
func (m *Machine) ServeBeside(port uint16, regs *kvm.Regs, serve func()) (bool, error) {
	next := m.Position()
	next.Exit++
	if !m.quietExit(next) {
		return false, nil
	}
	if err := m.eng.GuestExit(); err != nil {
		return false, err
	}
	m.exits++
	m.stats.ExitsBeside++
	m.lastStop, m.lastExit = StopGuestExit, exitInfo{Reason: kvm.ExitIO, Port: port}
	m.besideRegs = regs
	serve()
	m.besideRegs = nil
	return true, nil
}

// QuietAfter reports whether the engine still has nothing to do at the
// exit a companion served (ServeBeside): an interrupt may have come, or
// a replay's tape may hold one there behind the call's inputs.
func (m *Machine) QuietAfter() bool { return m.quietExit(m.Position()) }

func (m *Machine) quietExit(at Position) bool {
	be, ok := m.eng.(BesideEngine)
	return ok && !m.Stopping() && be.QuietExit(at)
}

// Done reports whether the run is over: the companion returns.
func (b *Beside) Done() bool { return b.done.Load() }

// Park waits until the vCPU next enters the guest, or the run ends: a
// companion with nothing to do lets its CPU go.
func (b *Beside) Park() {
	b.parked.Store(true)
	if !b.done.Load() {
		<-b.wake
	}
	b.parked.Store(false)
}

// Hold runs f while the vCPU loop waits: the vCPU is inside KVM_RUN, or
// about to enter, for all of f, never between two exits, so f may use
// the Kernel and the machine as the loop does, but not the vCPU itself.
// Once the loop has ended it does not run f: the run's end is measured.
func (b *Beside) Hold(f func()) {
	b.m.exitMu.Lock()
	defer b.m.exitMu.Unlock()
	if !b.done.Load() {
		f()
	}
}

// startCompanion runs the companion, if there is one, on its own OS
// thread and host CPUs; the returned function ends it and waits.
func (m *Machine) startCompanion() (stop func()) {
	if m.companion == nil {
		return func() {}
	}
	b := &Beside{m: m, wake: make(chan struct{}, 1)}
	m.beside = b
	m.splitCPUs(b)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if b.cpus.Count() > 0 {
			_ = unix.SchedSetaffinity(0, &b.cpus) // a preference: it serves wherever it runs
		}
		m.companion(b)
	}()
	return func() {
		b.done.Store(true)
		b.wakeUp()
		wg.Wait()
	}
}

// splitCPUs gives the vCPU and its companion host CPUs of their own, so
// that neither waits for the other to be preempted: the vCPU the
// Config.VCPUAffinity's, or else the first the process may use, the
// companion the others. With one CPU they share it.
func (m *Machine) splitCPUs(b *Beside) {
	var all unix.CPUSet
	if unix.SchedGetaffinity(0, &all) != nil {
		return
	}
	vcpu := m.cfg.VCPUAffinity
	if cpu, ok := firstIn(&all); len(vcpu) == 0 && ok {
		vcpu = []int{cpu}
	}
	rest := all
	for _, cpu := range vcpu {
		rest.Clear(cpu)
	}
	if rest.Count() == 0 {
		return
	}
	b.vcpuCPUs, b.cpus = vcpu, rest
}

// FirstHostCPU is the first host CPU this process may run on.
func FirstHostCPU() (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, fmt.Errorf("vmm: host CPUs: %w", err)
	}
	if cpu, ok := firstIn(&set); ok {
		return cpu, nil
	}
	return 0, errors.New("vmm: no host CPU in this process's affinity mask")
}

// firstIn is the first CPU of set.
func firstIn(set *unix.CPUSet) (int, bool) {
	for cpu := 0; cpu < len(set)*64; cpu++ {
		if set.IsSet(cpu) {
			return cpu, true
		}
	}
	return 0, false
}

// entering tells a parked companion that the vCPU enters the guest.
func (b *Beside) entering() {
	if b.parked.Load() {
		b.wakeUp()
	}
}

func (b *Beside) wakeUp() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}
