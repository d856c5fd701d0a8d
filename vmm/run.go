package vmm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/devices"
)

// Result is how a run ended.
type Result struct {
	Status  uint32 // the guest's exit status
	Elapsed time.Duration
	Stats   Stats
	// Marks is the host time (since boot) of the latest REPRISE_HC_MARK
	// of each id.
	Marks map[uint64]time.Duration
	// End describes how the guest's execution ended, with the RAM and
	// console hashes a recording keeps and a replay compares; nil if the
	// run stopped without a defined end (a VMM error, a cancelled live run).
	End *End
}

// Between returns the host time from the last mark start to the last mark
// end, and whether both were made.
func (r *Result) Between(start, end uint64) (time.Duration, bool) {
	s, hs := r.Marks[start]
	e, he := r.Marks[end]
	return e - s, hs && he
}

// Run boots the guest and runs it until it powers off, faults, its engine
// ends it, or ctx is done. A guest fault is returned as *GuestFault; the
// engine's errors as they are. When ctx is done the engine decides where
// the run stops (a recording looks for a point its replay can find again).
func (m *Machine) Run(ctx context.Context) (*Result, error) {
	m.start = time.Now()
	m.startHostClock()
	done := make(chan error, 1)
	stopCompanion := m.startCompanion()
	go func() {
		// One OS thread for the vCPU's whole life: KVM wants a vCPU's
		// ioctls from one thread, and kicks are aimed at that thread. It
		// is never unlocked, so it ends with the goroutine, its CPU
		// affinity with it.
		runtime.LockOSThread()
		if err := m.pin(); err != nil {
			done <- err
			return
		}
		tid := unix.Gettid()
		m.tid.Store(int32(tid))
		if m.host.obs != nil {
			m.host.obs.VCPUThread(m.hostNow(), uint32(tid))
		}
		err := m.loop()
		m.tid.Store(0)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = m.stopAndWait(done)
	}
	stopCompanion()
	m.timer.Stop()
	m.console.Flush()
	end, err := m.endOf(err)
	if err = m.eng.Finish(end, err); errors.Is(err, ErrStopped) {
		err = fmt.Errorf("vmm: run interrupted: %w", context.Cause(ctx))
	}
	m.stats.KicksSent = m.kicksSent.Load()
	m.stats.DiskRefused = m.disk.Refused
	res := &Result{Elapsed: time.Since(m.start), Stats: m.stats, Marks: m.marks, End: end}
	if end != nil && end.Reason == EndExited {
		res.Status = end.Status
	}
	return res, err
}

// pin confines the calling thread, the vCPU's, to Config.VCPUAffinity,
// or, beside a companion, to a CPU of its own (splitCPUs).
func (m *Machine) pin() error {
	cpus := m.cfg.VCPUAffinity
	if len(cpus) == 0 && m.beside != nil {
		cpus = m.beside.vcpuCPUs
	}
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, cpu := range cpus {
		set.Set(cpu)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("vmm: pinning the vCPU to host CPUs %v: %w", cpus, err)
	}
	return nil
}

// endOf turns the loop's result into the end of the guest's execution, or
// nil if it did not reach one; the error left is what Run should report.
func (m *Machine) endOf(err error) (*End, error) {
	var (
		end End
		off *devices.PowerOff
		gf  *GuestFault
	)
	switch {
	case errors.As(err, &off):
		end.Reason, end.Status, err = EndExited, off.Status, nil
	case errors.As(err, &gf):
		end.Reason, end.Fault = EndFault, gf.Reason
	case errors.Is(err, ErrEndHere):
		end.Reason, err = EndInterrupted, nil
	default:
		return nil, err
	}
	if err := m.eng.BeforeEnd(); err != nil {
		return nil, err
	}
	var herr error
	end.RAMHash, herr = m.HashRAM()
	if herr != nil {
		return nil, herr
	}
	end.ConsoleHash, end.ConsoleBytes = m.console.Sum()
	return &end, err
}

// stopAndWait asks the vCPU loop to stop and waits for it, kicking again
// while it waits: an engine may stop only at a point of its choosing
// (a recording: a repeatable one) and looks for one each time the vCPU
// stops.
func (m *Machine) stopAndWait(done <-chan error) error {
	m.stopping.Store(true)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		m.kick()
		select {
		case err := <-done:
			return err
		case <-t.C:
		}
	}
}
