package vmm

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
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

// SetCompanion makes f run beside the vCPU during Run. Only a live run
// takes one: what a companion serves makes no exit, so a recording would
// have no position for it.
func (m *Machine) SetCompanion(f Companion) error {
	if _, ok := m.eng.(*live); !ok {
		return errCompanionLive
	}
	m.companion = f
	return nil
}

var errCompanionLive = errors.New("vmm: only a live run takes a companion: what it serves makes no exit, which a recording could not place")

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
func (b *Beside) Hold(f func()) {
	b.m.exitMu.Lock()
	defer b.m.exitMu.Unlock()
	f()
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
	if len(vcpu) == 0 {
		for cpu := 0; cpu < len(all)*64; cpu++ {
			if all.IsSet(cpu) {
				vcpu = []int{cpu}
				break
			}
		}
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

// entering tells a parked companion that the vCPU enters the guest.
func (b *Beside) entering() {
	if b != nil && b.parked.Load() {
		b.wakeUp()
	}
}

func (b *Beside) wakeUp() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}
