package replayer

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
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

// check compares the guest's state with the recorded one at an event.
func (e *engine) check(ev *tape.Event) error {
	m := e.m
	pos := m.Position()
	reason, port := m.ExitReason(), m.ExitPort()
	switch {
	case pos.Exit != ev.Pos.Exit || pos.Branch != ev.Pos.Branch:
		return e.diverge(ev, "position", fmtPos(ev.Pos), fmtPos(tape.Position{Exit: pos.Exit, Branch: pos.Branch}))
	case uint8(reason) != ev.ExitReason || port != ev.Port:
		return e.diverge(ev, "exit", vmm.DescribeExit(kvm.ExitReason(ev.ExitReason), ev.Port), vmm.DescribeExit(reason, port))
	}
	digest := m.RegsDigest
	if e.exitDigests {
		digest = m.EventDigest
	}
	if d := digest(); d != ev.Digest && !e.otherKVMs(ev) {
		return e.diverge(ev, "register digest", fmt.Sprintf("%016x", ev.Digest), fmt.Sprintf("%016x", d))
	}
	return nil
}

// otherKVMs reports whether ev's digest is of the registers as another
// kind of KVM shows this stop (vmm.Machine.OtherKVMEventDigests).
func (e *engine) otherKVMs(ev *tape.Event) bool {
	return e.exitDigests && slices.Contains(e.m.OtherKVMEventDigests(), ev.Digest)
}

func (e *engine) diverge(ev *tape.Event, what, want, got string) error {
	return &DivergenceError{Event: e.applied, Kind: ev.Kind, At: ev.Pos, What: what, Expected: bounded(want), Found: bounded(got), LastGood: e.last}
}

// maxStateText bounds what a divergence quotes of each state. The
// expected one comes from the tape or a checkpoint file, which a forger
// controls: a 1 MiB register digest was printed as 2 MB of hex.
const maxStateText = 256

// bounded is s, cut to maxStateText bytes (at a character's start) with
// its full length said when longer.
func bounded(s string) string {
	if len(s) <= maxStateText {
		return s
	}
	n := maxStateText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", s[:n], len(s))
}
