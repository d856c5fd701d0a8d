package vfs

import "golang.org/x/sys/unix"

// Resource is one kind of thing a program holds on the host. Bounds and
// the reasons for them are described in linux/budget.go.
type Resource int

const (
	FileBytes Resource = iota
	PipeBytes
	SocketBytes
	Nodes
	Processes
	Watches
	Locks
	Resources
)

// Bounds on what a program holds at once.
const (
	MaxFileBytes = 1 << 30   // every file's contents, together
	MaxPipeBytes = 256 << 20 // every open pipe's capacity, together
	// MaxSocketBytes bounds every open socket's buffer capacity together
	// (ENOBUFS past it).
	MaxSocketBytes = 256 << 20
	MaxNodes       = 1 << 16 // files and directories
	// MaxProcesses bounds the processes a program has at once, zombies
	// included.
	MaxProcesses = 256
	// MaxWatches bounds the files all epoll instances watch together
	// (Linux's max_user_watches, ENOSPC).
	MaxWatches = 1 << 16
	// MaxLocks bounds the byte-range locks of all files together: each
	// range a program locks apart is one (ENOLCK past it).
	MaxLocks = 1 << 16
)

// limits are the bounds and the errors a charge past them fails with.
var limits = [Resources]struct {
	max int64
	err unix.Errno
}{
	FileBytes:   {MaxFileBytes, unix.ENOSPC},
	PipeBytes:   {MaxPipeBytes, unix.ENFILE},
	SocketBytes: {MaxSocketBytes, unix.ENOBUFS},
	Nodes:       {MaxNodes, unix.ENOSPC},
	Processes:   {MaxProcesses, unix.EAGAIN},
	Watches:     {MaxWatches, unix.ENOSPC},
	Locks:       {MaxLocks, unix.ENOLCK},
}

// Budget is what a program holds of each resource.
type Budget [Resources]int64

// Charge takes n more of r, or fails with r's error if that would pass
// its bound.
func (b *Budget) Charge(r Resource, n int64) error {
	if n > limits[r].max-b[r] {
		return limits[r].err
	}
	b[r] += n
	return nil
}

// Release gives back n of r.
func (b *Budget) Release(r Resource, n int64) { b[r] -= n }
