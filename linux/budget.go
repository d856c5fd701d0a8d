package linux

import (
	"runtime/debug"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// What a program holds in the host's memory besides its guest RAM, and
// the bounds on it. Each kind is charged as the program acquires it and
// released as it lets go, and a charge past its bound fails with the
// error Linux gives at the same limit, so a hostile program meets an
// error and the host's memory stays bounded:
//
//	file contents   1 GiB       ENOSPC (a tmpfs full); the contents of a file
//	                            truncated or removed while a mapping or an
//	                            open descriptor still holds it stay charged
//	                            until they are no longer held (vfs)
//	pipe buffers    256 MiB     ENFILE from pipe (pipe-user-pages-hard): each
//	                            pipe charges its capacity while open, 64 KiB,
//	                            8 KiB past 64 MiB (pipe-user-pages-soft)
//	file-system nodes 65 536    ENOSPC (a tmpfs out of inodes): files and
//	                            directories, removed ones still open included
//	processes       256         EAGAIN from fork (RLIMIT_NPROC), zombies
//	                            included; orphans are reparented to their
//	                            subreaper or the first process, which reaps
//	                            them
//	epoll watches   65 536      ENOSPC from epoll_ctl (max_user_watches): the
//	                            files all epoll instances watch together
//	lock ranges     65 536      ENOLCK from fcntl's F_SETLK: the byte ranges
//	                            locked apart, of every file
//
// Threads (1024, thread.go) and descriptors (4096 a process, vfs/fd.go)
// are bounded where they are made. A new kind is one more resource in
// vfs/budget.go, with its bound and error in limits, charged where it is
// made and released where it goes: the count of mappings, for one, which
// costs host memory across all processes (256 of 65 530 mappings each
// would be some 2 GiB of bookkeeping).
//
// Host memory stays within HostMemoryBound: guest RAM, plus twice the
// bytes held (a file's contents are copied once as it grows past its
// capacity, which leaves a quarter of headroom; the Go heap's garbage is
// collected against a limit set from the same figures, heapLimit), plus
// HostOverhead for everything counted rather than sized (nodes,
// processes, descriptors, threads) and the VMM itself.

// The resources and their bounds are vfs's (vfs/budget.go): the tree
// and pipes charge there, and the kernel charges processes.
type budget = vfs.Budget

const (
	fileBytes    = vfs.FileBytes
	processCount = vfs.Processes
	maxFileBytes = vfs.MaxFileBytes
	maxProcesses = vfs.MaxProcesses
)

// HostOverhead bounds the host memory of what is counted rather than
// sized, and of the VMM: measured at under 350 MiB with every count at
// its bound (TestHostile*).
const HostOverhead = 512 << 20

// MaxHeldBytes is the most a program holds of what is sized: file
// contents and pipe buffers.
const MaxHeldBytes = maxFileBytes + vfs.MaxPipeBytes

// HostMemoryBound is the most host memory (resident) a run of a Linux
// program with ramBytes of guest RAM holds while the program holds held
// bytes of file contents and pipe buffers (at most MaxHeldBytes): the
// bound the budget keeps, twice what is held.
func HostMemoryBound(ramBytes, held int64) int64 {
	return ramBytes + 2*held + HostOverhead
}

// heapLimit is the Go heap's soft limit while a program runs: its garbage
// (contents a file outgrew, pipes closed) is collected before the heap
// passes what the program may hold, with room for the VMM.
const heapLimit = maxFileBytes + maxFileBytes/4 + vfs.MaxPipeBytes + HostOverhead

// limitHeap lowers the Go runtime's memory limit to heapLimit, unless it
// is lower already (GOMEMLIMIT). The limit is the process's: programs
// replayed side by side (replay --jobs) share it, which costs them more
// collections when together they hold more, never a failure (it is soft).
func limitHeap() {
	if debug.SetMemoryLimit(-1) > heapLimit {
		debug.SetMemoryLimit(heapLimit)
	}
}
