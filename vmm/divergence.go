package vmm

import (
	"fmt"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
)

// DivergenceError is a replay that stopped matching its recording.
type DivergenceError struct {
	Event    uint64 // index of the tape event where it showed
	Kind     tape.Kind
	At       tape.Position // the event's recorded position
	What     string        // what differed
	Expected string
	Found    string
	LastGood tape.Position // position of the last event that matched
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("replay diverged at event %d (%v at %s): %s: expected %s, found %s; last good position %s",
		e.Event, e.Kind, fmtPos(e.At), e.What, e.Expected, e.Found, fmtPos(e.LastGood))
}

// TapeCutError is a replay that ran out of tape before the recording's
// end: the recorder was killed, or the tape is damaged. Everything before
// it was replayed and checked.
type TapeCutError struct {
	Events uint64        // events replayed
	Last   tape.Position // where the last one applied
	Cause  error
}

func (e *TapeCutError) Error() string {
	return fmt.Sprintf("tape ends after %d events (last at %s): %v", e.Events, fmtPos(e.Last), e.Cause)
}

func (e *TapeCutError) Unwrap() error { return e.Cause }

func fmtPos(p tape.Position) string {
	return fmt.Sprintf("exit %d, branch %d", p.Exit, p.Branch)
}

func fmtExit(reason uint8, port uint16) string {
	r := kvm.ExitReason(reason)
	if r == kvm.ExitIO {
		return fmt.Sprintf("%v port %#x", r, port)
	}
	return r.String()
}
