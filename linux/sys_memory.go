package linux

import (
	"github.com/reprise-vm/reprise/linux/mm"
	"golang.org/x/sys/unix"
)

// maxHeap bounds how far brk moves the heap past the executable.
const maxHeap = 1 << 40

// sysBrk moves the end of the heap; it answers the current end when asked
// for something it cannot do, as Linux does.
func sysBrk(t *thread, a args) (uint64, error) {
	start, cur := t.proc.brk[0], t.proc.brk[1]
	want := a[0]
	if want < start || want > start+maxHeap {
		return cur, nil
	}
	oldTop, newTop := pageUp(cur), pageUp(want)
	switch {
	case newTop > oldTop:
		if !t.proc.as.Free(oldTop, newTop) {
			return cur, nil
		}
		if err := t.proc.as.Map(oldTop, newTop, mm.ProtRead|mm.ProtWrite); err != nil {
			return cur, nil
		}
	case newTop < oldTop:
		if err := t.proc.as.Unmap(newTop, oldTop); err != nil {
			return cur, nil
		}
	}
	t.proc.brk[1] = want
	return want, nil
}

func protFromLinux(p uint64) (mm.Prot, bool) {
	if p&^(unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC) != 0 {
		return 0, false
	}
	out := mm.Prot(0)
	if p&unix.PROT_READ != 0 {
		out |= mm.ProtRead
	}
	if p&unix.PROT_WRITE != 0 {
		out |= mm.ProtWrite | mm.ProtRead // x86 pages cannot be write-only
	}
	if p&unix.PROT_EXEC != 0 {
		out |= mm.ProtExec | mm.ProtRead
	}
	return out, true
}

// mmap's sharing types (flags&mapType): MAP_SHARED_VALIDATE is shared,
// refusing flags it does not know.
const (
	mapType           = 3
	mapSharedValidate = 3
	// mapKnown are the flags mmap acts on or may ignore, as Linux's
	// LEGACY_MAP_MASK and the rest it knows.
	mapKnown = unix.MAP_SHARED | unix.MAP_PRIVATE | unix.MAP_FIXED | unix.MAP_ANONYMOUS | unix.MAP_DENYWRITE |
		unix.MAP_EXECUTABLE | unix.MAP_GROWSDOWN | unix.MAP_LOCKED | unix.MAP_NORESERVE | unix.MAP_POPULATE |
		unix.MAP_NONBLOCK | unix.MAP_STACK | unix.MAP_HUGETLB | unix.MAP_FIXED_NOREPLACE | unix.MAP_32BIT
)

func sysMmap(t *thread, a args) (uint64, error) {
	addr, length, flags := a[0], pageUp(a[1]), a[3]
	p, ok := protFromLinux(a[2])
	shared := flags&mapType == unix.MAP_SHARED || flags&mapType == mapSharedValidate
	switch {
	case !ok || length == 0 || a[1] > maxUserAddr:
		return 0, unix.EINVAL
	case flags&mapType == 0:
		return 0, unix.EINVAL
	case flags&mapType == mapSharedValidate && flags&^uint64(mapKnown) != 0:
		return 0, unix.EOPNOTSUPP
	}
	var file *openFile
	if flags&unix.MAP_ANONYMOUS == 0 {
		f, err := t.proc.fds.Get(a[4])
		if err != nil {
			return 0, err
		}
		switch {
		case f.Node() == nil || !f.Node().IsRegular():
			return 0, unix.ENODEV
		case a[5]&pageMask != 0:
			return 0, unix.EINVAL
		case a[5]/pageSize > uint64(maxFileSize-int64(length))/pageSize:
			return 0, unix.EOVERFLOW // past the largest offset (file_mmap_ok)
		case !f.Readable():
			return 0, unix.EACCES
		case shared && a[2]&unix.PROT_WRITE != 0 && (!f.Writable() || f.Flags&unix.O_APPEND != 0):
			return 0, unix.EACCES
		case shared && a[2]&unix.PROT_WRITE != 0 && sealedWrite(f.Node()):
			return 0, unix.EPERM
		}
		file = f
	}
	addr, err := t.placeMapping(addr, length, flags)
	if err != nil {
		return 0, err
	}
	switch {
	case shared && file != nil:
		n := file.Node()
		if err := t.proc.as.MapShared(addr, addr+length, p, t.k.fileObject(n), a[5]/pageSize); err != nil {
			return 0, memErr(err)
		}
		if p&mm.ProtWrite != 0 {
			n.Written = true // written through the mapping, as far as anyone can tell
		}
	case shared:
		if err := t.proc.as.MapShared(addr, addr+length, p, t.k.fr.NewObject(nil, nil), 0); err != nil {
			return 0, memErr(err)
		}
	case file == nil && flags&(unix.MAP_STACK|unix.MAP_GROWSDOWN) != 0:
		// A thread's stack (glibc asks for 8 MiB): its pages get
		// frames as the thread touches them, as the main stack's do.
		if err := t.proc.as.MapLazy(addr, addr+length, p); err != nil {
			return 0, memErr(err)
		}
	default:
		if err := t.proc.as.Map(addr, addr+length, p); err != nil {
			return 0, memErr(err)
		}
	}
	if file == nil {
		return addr, nil
	}
	if !shared {
		// A private copy of the file's pages; past the end of the file,
		// zeros (Linux would raise SIGBUS there, past the last page).
		if off := a[5]; off < uint64(file.Node().Size()) {
			data := file.Node().Contents()[off:]
			if err := t.proc.as.Load(addr, data[:min(uint64(len(data)), length)]); err != nil {
				return 0, err
			}
		}
	}
	file.Node().Mapped = true
	m := Mapping{Path: file.Path, Start: addr, End: addr + length, Offset: a[5], Exec: p&mm.ProtExec != 0}
	if err := t.k.mapped(t.proc, m, file.Node().Contents()); err != nil {
		return 0, err
	}
	return addr, nil
}

// placeMapping is where a new mapping of length bytes goes: at addr with
// MAP_FIXED (what was there unmapped) or MAP_FIXED_NOREPLACE, near addr
// as a hint if it is free, else the highest free range.
func (t *thread) placeMapping(addr, length, flags uint64) (uint64, error) {
	fixed := flags&(unix.MAP_FIXED|unix.MAP_FIXED_NOREPLACE) != 0
	switch {
	case fixed:
		if _, ok := mm.CheckRange(addr, length); !ok {
			return 0, unix.EINVAL
		}
		if flags&unix.MAP_FIXED_NOREPLACE != 0 && !t.proc.as.Free(addr, addr+length) {
			return 0, unix.EEXIST
		}
		if err := t.proc.as.Unmap(addr, addr+length); err != nil {
			return 0, memErr(err)
		}
		return addr, nil
	case addr != 0 && addr&pageMask == 0 && t.proc.as.Free(addr, addr+length):
		if _, ok := mm.CheckRange(addr, length); ok {
			return addr, nil
		}
	}
	addr, ok := t.proc.as.FindFree(length)
	if !ok {
		return 0, unix.ENOMEM
	}
	return addr, nil
}

func sysMunmap(t *thread, a args) (uint64, error) {
	end, ok := mm.CheckRange(a[0], pageUp(a[1]))
	if !ok {
		return 0, unix.EINVAL
	}
	return 0, memErr(t.proc.as.Unmap(a[0], end))
}

func sysMprotect(t *thread, a args) (uint64, error) {
	p, ok := protFromLinux(a[2])
	end, ok2 := mm.CheckRange(a[0], pageUp(a[1]))
	if !ok || !ok2 {
		return 0, unix.EINVAL
	}
	return 0, memErr(t.proc.as.Protect(a[0], end, p))
}

// The personality keeps no protection keys (no PKRU per thread, no key in
// a mapping), so none can be allocated: pkey_alloc answers ENOSPC, as
// Linux does when every key is taken or the CPU has none, and programs
// go on without (node asks for one); pkey_mprotect takes only key -1,
// plain mprotect.
func sysPkeyAlloc(_ *thread, a args) (uint64, error) {
	const pkeyAccessMask = 3 // PKEY_DISABLE_ACCESS | PKEY_DISABLE_WRITE
	if a[0] != 0 || a[1]&^pkeyAccessMask != 0 {
		return 0, unix.EINVAL
	}
	return 0, unix.ENOSPC
}

func sysPkeyFree(*thread, args) (uint64, error) { return 0, unix.EINVAL }

func sysPkeyMprotect(t *thread, a args) (uint64, error) {
	if int32(a[3]) != -1 {
		return 0, unix.EINVAL
	}
	return sysMprotect(t, a)
}

// sysMadvise: advice is taken as a hint and ignored, except that
// MADV_DONTNEED empties private anonymous pages, which programs rely on.
func sysMadvise(t *thread, a args) (uint64, error) {
	end, ok := mm.CheckRange(a[0], pageUp(a[1]))
	if !ok {
		return 0, unix.EINVAL
	}
	if a[2] == unix.MADV_DONTNEED {
		return 0, memErr(t.proc.as.Zero(a[0], end))
	}
	return 0, nil
}

// sysMsync: a shared mapping's pages are the file's (shm.go), so there is
// nothing to write back; the arguments are checked as Linux does
// (EINVAL, ENOMEM for a range not mapped).
func sysMsync(t *thread, a args) (uint64, error) {
	start, flags := a[0], a[2]
	const msAsync, msInvalidate, msSync = 1, 2, 4
	switch {
	case start&pageMask != 0 || flags&^uint64(msAsync|msInvalidate|msSync) != 0,
		flags&msAsync != 0 && flags&msSync != 0:
		return 0, unix.EINVAL
	case a[1] == 0:
		return 0, nil
	}
	end, ok := mm.CheckRange(start, pageUp(a[1]))
	if !ok {
		return 0, unix.ENOMEM
	}
	if !t.proc.as.Covered(start, end) {
		return 0, unix.ENOMEM
	}
	return 0, nil
}

// maxMincore bounds the pages one mincore answers for: the vector is
// written a page of it at a time.
const maxMincore = 1 << 20

// sysMincore says which pages of a mapped range are in memory: those with
// a frame (every accessible page has one from the moment it is mapped but
// the stack's untouched ones; a PROT_NONE page never accessible has none).
// ENOMEM for a range not mapped.
func sysMincore(t *thread, a args) (uint64, error) {
	start := a[0]
	if start&pageMask != 0 {
		return 0, unix.EINVAL
	}
	end, ok := mm.CheckRange(start, pageUp(a[1]))
	if !ok || !t.proc.as.Covered(start, end) {
		return 0, unix.ENOMEM
	}
	at := a[2] // the vector, a byte per page
	for from := start; from < end; {
		to := min(end, from+maxMincore*pageSize)
		vec := make([]byte, (to-from)/pageSize)
		for i := range vec {
			if _, ok := t.proc.as.Frame(from + uint64(i)*pageSize); ok {
				vec[i] = 1
			}
		}
		if err := t.proc.as.Write(at, vec); err != nil {
			return 0, memErr(err)
		}
		at, from = at+uint64(len(vec)), to
	}
	return 0, nil
}
