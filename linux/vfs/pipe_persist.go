package vfs

import "fmt"

// SavedPipe is a pipe.
type SavedPipe struct {
	Buf              []byte
	Capacity         int // 0 in a checkpoint from before pipes had capacities: PipeCapacity
	Readers, Writers int
	Ino              uint64
}

// capacity is the saved pipe's capacity.
func (p *SavedPipe) capacity() int {
	if p.Capacity == 0 {
		return PipeCapacity
	}
	return p.Capacity
}

func (sv *Saver) pipe(p *Pipe) int {
	if i, ok := sv.pipes[p]; ok {
		return i
	}
	sv.pipes[p] = len(sv.Pipes)
	sv.Pipes = append(sv.Pipes, SavedPipe{Buf: p.buf, Capacity: p.capacity, Readers: p.readers, Writers: p.writers, Ino: p.ino})
	return sv.pipes[p]
}

// checkPipes refuses a pipe of a capacity a pipe cannot have, or holding
// more than it.
func checkPipes(pipes []SavedPipe) error {
	for i, p := range pipes {
		if c := p.capacity(); c != PipeCapacity && c != SmallPipeCapacity || len(p.Buf) > c || p.Readers < 0 || p.Writers < 0 {
			return fmt.Errorf("pipe %d: %d bytes of %d, %d readers, %d writers", i, len(p.Buf), p.Capacity, p.Readers, p.Writers)
		}
	}
	return nil
}

// restore is the saved pipe, charging b when its ends close.
func (p *SavedPipe) restore(b *Budget) *Pipe {
	return &Pipe{buf: p.Buf, capacity: p.capacity(), readers: p.Readers, writers: p.Writers, budget: b, ino: p.Ino}
}
