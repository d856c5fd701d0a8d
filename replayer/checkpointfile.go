package replayer

import (
	"github.com/reprise-vm/reprise/checkpoint"
)

// CheckpointFile is a tape's checkpoint file held open for many replays
// that start from its checkpoints, one after another — a debugging
// session's (Options.CheckpointFile). It is opened and indexed once, and
// a checkpoint's RAM is hashed against its recorded SHA-256 the first time
// a replay starts from it, not each time: hashing the whole of RAM is
// most of a restore. Afterwards the file's frame checksums guard what is
// read again, and each replay is still checked at its events and its end.
type CheckpointFile struct {
	path     string
	f        *checkpoint.File
	verified map[int]bool
}

// OpenCheckpointFile opens the checkpoint file at path, which must be of
// rec's recording.
func OpenCheckpointFile(path string, rec *Recording) (*CheckpointFile, error) {
	f, err := checkpoint.Open(path, checkpoint.RecordingOf(rec.Header))
	if err != nil {
		return nil, err
	}
	return &CheckpointFile{path: path, f: f, verified: map[int]bool{}}, nil
}

// Checkpoints are the file's checkpoints, in order.
func (c *CheckpointFile) Checkpoints() []checkpoint.Summary { return c.f.Checkpoints() }

// Close closes the file.
func (c *CheckpointFile) Close() error { return c.f.Close() }

// isVerified reports whether checkpoint i's RAM was checked (never for
// a file of one replay's own: nil).
func (c *CheckpointFile) isVerified(i int) bool { return c != nil && c.verified[i] }

func (c *CheckpointFile) setVerified(i int) {
	if c != nil {
		c.verified[i] = true
	}
}
