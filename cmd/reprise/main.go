// Command reprise records, replays and diagnoses KVM virtual machines.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Exit statuses of reprise itself. A guest's own exit status is passed
// through unchanged by `reprise run`; these are chosen above the range the
// bundled workloads use.
const (
	exitDivergence  = 3 // a replay stopped matching its recording
	exitDamaged     = 4 // a tape is damaged (tape.IsDamaged)
	exitUsage       = 2
	exitTimeout     = 124 // as timeout(1)
	exitInterrupted = 130 // 128 + SIGINT, as a shell reports Ctrl-C
	exitFailure     = 125 // reprise or the guest failed (the message says which)
)

// exitError carries a specific exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code) // the command has reported already
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// newRootCmd is the command line; prof, if not nil, takes --cpuprofile.
func newRootCmd(prof *cpuProfile) *cobra.Command {
	root := &cobra.Command{
		Use:   "reprise",
		Short: "Record, replay and diagnose KVM virtual machines",
		Long: `reprise runs a guest on KVM with a VMM of its own. Record a session once at
almost no cost, replay exactly that execution with probes, and let offline
tools answer questions about it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if prof != nil {
		prof.addFlag(root)
	}
	root.AddCommand(newRunCmd(), newRecordCmd(), newReplayCmd(), newInfoCmd(), newPcapCmd(), newEventsCmd(), newLockstatCmd(), newDeadlockCmd(), newProfileCmd(), newPreemptCmd(), newOverheadCmd(), newTimelineCmd(), newDemoCmd(), newWorkloadsCmd(), newCCCmd(), newPackCmd(), newMergeCmd(), newDebugCmd())
	return root
}

func main() {
	var prof cpuProfile
	err := newRootCmd(&prof).Execute()
	err = errors.Join(err, prof.stop()) // before any exit
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "reprise:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "reprise:", err)
	os.Exit(exitUsage)
}
