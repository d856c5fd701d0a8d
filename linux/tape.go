package linux

import (
	"slices"

	"github.com/reprise-vm/reprise/tape"
)

// Header is what a recording of p keeps of it in its tape, its vCPU
// pinned to hostCPU; the executable's bytes go in the tape's image.
func (p *Program) Header(hostCPU int) *tape.Linux {
	return &tape.Linux{Path: p.Path, Argv: p.Argv, Env: p.Env, Random: p.Random, Epoch: p.Epoch, HostCPU: hostCPU,
		Files: slices.Clone(p.Files), Stdin: p.Stdin, Personality: Version}
}

// RecordedProgram is the program a tape's Linux header and executable
// describe, for a replay: its files are checked against what was
// recorded (Program.Recorded).
func RecordedProgram(l *tape.Linux, image []byte) Program {
	return Program{Path: l.Path, Image: image, Argv: l.Argv, Env: l.Env, Random: l.Random, Epoch: l.Epoch,
		Files: slices.Clone(l.Files), Stdin: l.Stdin, Recorded: true}
}
