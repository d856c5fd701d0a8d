package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// cpuProfile is --cpuprofile: a CPU profile of reprise itself, for `go
// tool pprof` — where the VMM's own time goes (start-up, a fork, a system
// call), which no guest-side tool sees.
type cpuProfile struct {
	path string
	f    *os.File
}

// addFlag adds --cpuprofile to root, started before any command runs.
func (p *cpuProfile) addFlag(root *cobra.Command) {
	root.PersistentFlags().StringVar(&p.path, "cpuprofile", "", "write a CPU profile of reprise itself to `FILE` (go tool pprof)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return p.start() }
}

func (p *cpuProfile) start() error {
	if p.path == "" {
		return nil
	}
	f, err := os.Create(p.path)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return errors.Join(fmt.Errorf("--cpuprofile: %w", err), f.Close())
	}
	p.f = f
	return nil
}

// stop ends the profile, if one runs, and writes it out.
func (p *cpuProfile) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.f.Close()
	p.f = nil
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	return nil
}
