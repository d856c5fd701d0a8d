package linux

import (
	"cmp"
	"slices"

	"github.com/reprise-vm/reprise/tape"
)

// Header is what a recording of p keeps of it in its tape, its vCPU
// pinned to hostCPU; the executable's bytes go in the tape's image, and
// what the program read of the host's files in its events.
func (p *Program) Header(hostCPU int) *tape.Linux {
	return &tape.Linux{Path: p.Path, Argv: p.Argv, Env: p.Env, Random: p.Random, Epoch: p.Epoch, HostCPU: hostCPU,
		Root: p.Root, Mounts: slices.Clone(p.Mounts), Stdin: p.Stdin, Cwd: p.Cwd,
		UID: p.User.UID, GID: p.User.GID, Groups: slices.Clone(p.User.Groups), Personality: cmp.Or(p.Personality, Version), FastCalls: p.FastCalls}
}

// RecordedProgram is the program a tape's Linux header and executable
// describe, for a replay: the files it read are the tape's packed ones,
// or the host's, checked against what was recorded.
func RecordedProgram(l *tape.Linux, image []byte) Program {
	return Program{Path: l.Path, Image: image, Argv: l.Argv, Env: l.Env, Random: l.Random, Epoch: l.Epoch,
		Root: l.Root, Mounts: slices.Clone(l.Mounts), Files: slices.Clone(l.Files), Stdin: l.Stdin, Cwd: l.Cwd,
		User: User{l.UID, l.GID, slices.Clone(l.Groups)}, FastCalls: l.FastCalls, Personality: l.Personality}
}
