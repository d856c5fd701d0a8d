package vfs

import (
	"io"

	"golang.org/x/sys/unix"
)

// Console is the standard streams' file: stdin reads empty, stdout and
// stderr write to the machine's console.
type Console struct {
	steady
	notTTY
	out io.Writer
}

// NewConsole is the console writing to out.
func NewConsole(out io.Writer) *Console { return &Console{out: out} }

func (*Console) Read(*OpenFile, []byte, int64) (int, error)          { return 0, nil }
func (c *Console) Write(_ *OpenFile, b []byte, _ int64) (int, error) { return c.out.Write(b) }
func (*Console) Seek(*OpenFile, int64, uint64) (uint64, error)       { return 0, unix.ESPIPE }
func (*Console) Release()                                            {}
func (*Console) Node() *Node                                         { return nil }
func (*Console) save(_ *Saver, s *SavedFile)                         { s.Console = true }
