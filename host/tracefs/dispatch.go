package tracefs

import "time"

// dispatcher delivers parsed events to Handlers. A loss line has no
// timestamp, so a Lost is held back until the next event from its CPU
// (the kernel prints the loss line right before that event) and delivered
// just before it, with its time.
type dispatcher struct {
	h       Handlers
	p       parsed        // the line just parsed, reused to avoid allocating
	pending []Lost        // losses waiting for their CPU's next event
	last    time.Duration // time of the last event, for flush
}

// dispatch delivers d.p.
func (d *dispatcher) dispatch() {
	var cpu int
	switch d.p.kind {
	case kindLost:
		d.pending = append(d.pending, d.p.lost)
		return
	case kindSwitch:
		cpu, d.last = d.p.sw.CPU, d.p.sw.Time
	case kindWakeup:
		cpu, d.last = d.p.wu.CPU, d.p.wu.Time
	case kindMigrate:
		cpu, d.last = d.p.mg.CPU, d.p.mg.Time
	default:
		return
	}
	if len(d.pending) > 0 {
		d.release(cpu, d.last)
	}
	switch d.p.kind {
	case kindSwitch:
		if d.h.Switch != nil {
			d.h.Switch(d.p.sw)
		}
	case kindWakeup:
		if d.h.Wakeup != nil {
			d.h.Wakeup(d.p.wu)
		}
	case kindMigrate:
		if d.h.Migrate != nil {
			d.h.Migrate(d.p.mg)
		}
	}
}

// release delivers the pending losses of cpu, which happened before t.
func (d *dispatcher) release(cpu int, t time.Duration) {
	kept := d.pending[:0]
	for _, l := range d.pending {
		if l.CPU != cpu {
			kept = append(kept, l)
			continue
		}
		l.Time = t
		d.lost(l)
	}
	d.pending = kept
}

// flush delivers the losses still pending at the end of the trace.
func (d *dispatcher) flush() {
	for _, l := range d.pending {
		l.Time = d.last
		d.lost(l)
	}
	d.pending = nil
}

func (d *dispatcher) lost(l Lost) {
	if d.h.Lost != nil {
		d.h.Lost(l)
	}
}
