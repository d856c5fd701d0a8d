package hostview

import "fmt"

// Kind is what a record says.
type Kind uint8

// Record kinds. The numbers are part of the encoding.
const (
	// KindStart opens a recording's host view: Time is the instant the
	// recording's clock (tape HostTime) reads zero. Text, when set, says
	// why host scheduling is not part of the view.
	KindStart Kind = 1
	// KindRun is one stay of a vCPU in the guest (one KVM_RUN): Time is
	// the entry, Dur its length, CPU the vCPU, Code the exit reason
	// (ExitInterrupted when a signal ended it), Exit the guest exits
	// counted once it ended (the replay's Position.Exit there).
	KindRun Kind = 2
	// KindIdle is a vCPU waiting in the VMM for an interrupt after its
	// guest halted: Time, Dur, CPU (the vCPU), Exit.
	KindIdle Kind = 3
	// KindVCPU: the vCPU CPU started running on host thread TID.
	KindVCPU Kind = 4
	// KindIRQ: an interrupt line (Code) was asserted for vCPU CPU.
	KindIRQ Kind = 5
	// KindInject: vector Code was delivered to the guest on vCPU CPU,
	// deasserting its line.
	KindInject Kind = 6
	// KindTimerSet: the guest programmed its timer to a period of Arg ns
	// (0: stopped).
	KindTimerSet Kind = 7
	// KindTimerFire: the virtual timer expired.
	KindTimerFire Kind = 8
	// KindSwitch is a host sched_switch on host CPU CPU: TID left it in
	// state Code (a State), Next started running.
	KindSwitch Kind = 9
	// KindWakeup: host thread TID was made runnable on host CPU CPU.
	KindWakeup Kind = 10
	// KindMigrate: host thread TID moved from host CPU Code to CPU.
	KindMigrate Kind = 11
	// KindComm names host thread TID: Text.
	KindComm Kind = 12
	// KindLost: the kernel dropped Arg host events on host CPU CPU.
	KindLost Kind = 13

	kindLast = KindLost
)

var kindNames = [...]string{
	KindStart: "start", KindRun: "run", KindIdle: "idle", KindVCPU: "vcpu",
	KindIRQ: "irq", KindInject: "inject", KindTimerSet: "timer-set", KindTimerFire: "timer-fire",
	KindSwitch: "switch", KindWakeup: "wakeup", KindMigrate: "migrate", KindComm: "comm", KindLost: "lost",
}

func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k >= KindStart && k <= kindLast }

// State is how a host thread left its CPU (KindSwitch's Code).
type State uint32

const (
	StateRunnable State = 0 // preempted: it still wanted the CPU
	StateBlocked  State = 1 // it went to sleep (S, D, ...)
	StateExited   State = 2 // it died (X, Z)
)

// ExitInterrupted is KindRun's Code when a signal, not the guest, ended
// the stay in the guest (a kick).
const ExitInterrupted = 0xffff

// Record is one fact about the host. Which fields a kind uses is listed
// with the kinds; the others are zero.
type Record struct {
	Kind Kind
	Time int64 // CLOCK_MONOTONIC, ns
	Dur  int64 // ns
	Exit uint64
	CPU  uint32 // a vCPU index (VMM records) or a host CPU (scheduler records)
	TID  uint32
	Next uint32
	Code uint32
	Arg  uint64
	Text string
}

// field bits of the encoding, in field order.
const (
	fDur = 1 << iota
	fExit
	fCPU
	fTID
	fNext
	fCode
	fArg
	fText
)

// fieldsOf lists the fields each kind may carry.
var fieldsOf = [...]uint8{
	KindStart:     fText,
	KindRun:       fDur | fExit | fCPU | fCode,
	KindIdle:      fDur | fExit | fCPU,
	KindVCPU:      fCPU | fTID,
	KindIRQ:       fCPU | fCode,
	KindInject:    fCPU | fCode,
	KindTimerSet:  fCPU | fArg,
	KindTimerFire: fCPU,
	KindSwitch:    fCPU | fTID | fNext | fCode,
	KindWakeup:    fCPU | fTID,
	KindMigrate:   fCPU | fTID | fCode,
	KindComm:      fTID | fText,
	KindLost:      fCPU | fArg,
}

// MaxText bounds a record's Text.
const MaxText = 256

func (r *Record) String() string {
	return fmt.Sprintf("%v t=%d dur=%d exit=%d cpu=%d tid=%d next=%d code=%d arg=%d %q",
		r.Kind, r.Time, r.Dur, r.Exit, r.CPU, r.TID, r.Next, r.Code, r.Arg, r.Text)
}
