package replayer

import (
	"errors"
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/host/hostview"
)

// noHostView is the Host.Missing of a tape without host frames.
const noHostView = "the tape has no host view: it was recorded with --host off, or by a reprise older than tape format 3"

// hostCopier copies the host view in a tape's host frames into a run,
// as the replay reads past them (Options.OnHost): its records become host
// events, and what describes them (the clock origin, vCPU threads, thread
// names, what is missing) the run's Host, stored by finish.
type hostCopier struct {
	in      eventSink
	host    *eventdb.Host
	frames  int
	names   map[uint32]int // host thread → index in host.Threads
	start   int64          // CLOCK_MONOTONIC at record time zero
	started bool
}

func newHostCopier(in eventSink) *hostCopier {
	return &hostCopier{in: in, host: &eventdb.Host{}, names: map[uint32]int{}}
}

// view is the run's Host, once the replay has read the tape.
func (c *hostCopier) view(path string) (*eventdb.Host, error) {
	switch {
	case c.frames == 0:
		c.host.Missing = noHostView
	case !c.started:
		return nil, fmt.Errorf("replayer: host view of %s has no start record", path)
	}
	return c.host, nil
}

func (c *hostCopier) frame(count uint32, body []byte) error {
	c.frames++
	recs, err := hostview.Decode(body, count)
	if err != nil {
		return err
	}
	for i := range recs {
		if err := c.record(&recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// hypervisorCodes maps hostview kinds to eventdb.KindHypervisor codes.
var hypervisorCodes = map[hostview.Kind]uint64{
	hostview.KindVCPU:      eventdb.HypervisorVCPU,
	hostview.KindIRQ:       eventdb.HypervisorIRQ,
	hostview.KindInject:    eventdb.HypervisorInject,
	hostview.KindTimerSet:  eventdb.HypervisorTimerSet,
	hostview.KindTimerFire: eventdb.HypervisorTimerFire,
}

func (c *hostCopier) record(r *hostview.Record) error {
	if r.Kind == hostview.KindStart {
		if c.started {
			return errors.New("a second start record")
		}
		c.start, c.started = r.Time, true
		c.host.Start = time.Duration(r.Time)
		c.host.Missing = r.Text
		return nil
	}
	if !c.started {
		return fmt.Errorf("a %v record before the start record", r.Kind)
	}
	e := eventdb.Event{Time: time.Duration(r.Time - c.start)}
	switch r.Kind {
	case hostview.KindRun:
		e.Kind, e.Thread, e.Pos.Exit, e.Addr, e.Args = eventdb.KindVCPURun, r.CPU, r.Exit, uint64(r.Code), []uint64{uint64(r.Dur)}
	case hostview.KindIdle:
		e.Kind, e.Thread, e.Pos.Exit, e.Args = eventdb.KindVCPUIdle, r.CPU, r.Exit, []uint64{uint64(r.Dur)}
	case hostview.KindVCPU, hostview.KindIRQ, hostview.KindInject, hostview.KindTimerSet, hostview.KindTimerFire:
		value := uint64(r.Code)
		switch r.Kind {
		case hostview.KindVCPU:
			value = uint64(r.TID)
			c.host.VCPUs = append(c.host.VCPUs, eventdb.VCPU{Index: r.CPU, TID: r.TID})
		case hostview.KindTimerSet:
			value = r.Arg
		}
		e.Kind, e.Thread, e.Addr, e.Args = eventdb.KindHypervisor, r.CPU, hypervisorCodes[r.Kind], []uint64{value}
	case hostview.KindSwitch:
		c.host.Sched = true
		e.Kind, e.Thread, e.Addr, e.Args = eventdb.KindHostSwitch, r.CPU, uint64(r.Next), []uint64{uint64(r.TID), uint64(r.Code)}
	case hostview.KindWakeup:
		e.Kind, e.Thread, e.Args = eventdb.KindHostWakeup, r.TID, []uint64{uint64(r.CPU)}
	case hostview.KindMigrate:
		e.Kind, e.Thread, e.Args = eventdb.KindHostMigrate, r.TID, []uint64{uint64(r.Code), uint64(r.CPU)}
	case hostview.KindComm:
		c.name(r.TID, r.Text)
		return nil
	case hostview.KindLost:
		c.host.Lost += r.Arg
		return nil
	default:
		return fmt.Errorf("a %v record, which this reprise does not know", r.Kind)
	}
	return c.in.Add(&e)
}

// name records a host thread's name; a thread renamed keeps its last.
func (c *hostCopier) name(tid uint32, comm string) {
	if i, ok := c.names[tid]; ok {
		c.host.Threads[i].Comm = comm
		return
	}
	c.names[tid] = len(c.host.Threads)
	c.host.Threads = append(c.host.Threads, eventdb.HostThread{TID: tid, Comm: comm})
}
