package replayer

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/vmm"
)

// MappingHandler is told of every file a Linux program maps, in order,
// with the file's symbols (nil when the file is no ELF file), where and
// when (record time) the program mapped it.
type MappingHandler func(m linux.Mapping, f *elffile.File, pos vmm.Position, at time.Duration) error

// linuxProbes places a probe set in a Linux program (linux.Breakpoints):
// in every file the program maps that defines a probe's symbol, when it
// is mapped — the executable and loader at the start, a library when the
// loader maps it, in a replay exactly where the recording mapped it.
type linuxProbes struct {
	k     *linux.Kernel
	set   *probes.Set // nil: no probes, only mappings are reported
	onHit func(Hit) error
	onMap MappingHandler
	// resuming: the replay starts at a checkpoint, which replaces what the
	// program mapped as it booted.
	resuming bool
	m        *vmm.Machine
	// recordTime maps a branch count to the recorded run's host time.
	recordTime func(vmm.Position) time.Duration

	files map[string]*objectProbes // by path
	// parsed is a file parsed already from the same contents (its
	// recording's: Recording.parsedAs), or nil.
	parsed func(path string, data []byte) *elffile.File
	// returns are the probe lists a return watch stands for (the
	// cookie of linux.Break.WatchReturn indexes it).
	returns [][]*probes.Probe
}

// objectProbes is one file and where the set's probes are in it.
type objectProbes struct {
	file  *elffile.File
	size  int
	sites map[uint64]*objectSite // by the file's virtual address
}

type objectSite struct {
	entry  []*probes.Probe
	cookie uint64 // into linuxProbes.returns; valid if the site has return probes
	ret    bool
}

func newLinuxProbes(k *linux.Kernel, set *probes.Set, onHit func(Hit) error, onMap MappingHandler, parsed func(path string, data []byte) *elffile.File) *linuxProbes {
	return &linuxProbes{k: k, set: set, onHit: onHit, onMap: onMap, files: map[string]*objectProbes{}, parsed: parsed}
}

// sample fills in a sample of the running thread: the program's own
// registers (not a stub's), its thread, and its call stack unwound with
// the call-frame information of the files it maps.
func (lp *linuxProbes) sample(s *Sample) {
	regs := lp.k.UserRegs(s.Regs)
	mem := func(addr uint64) (uint64, error) {
		var b [8]byte
		err := lp.m.ReadVirt(addr, b[:])
		return binary.LittleEndian.Uint64(b[:]), err
	}
	// A kick that finds the vCPU in the system-call stub or an exception
	// vector, or the program just after a SYSCALL, came while a call or
	// fault was served — by the VMM, or in the exit and entry that frame
	// it, which KVM_RUN spends — however InGuest read: perf's kernel time.
	// One that finds it on a SYSCALL found a thread blocked in the call
	// (to be restarted there) or about to enter it: idle or kernel time.
	var code [syscallSkid*15 + 4]byte
	at := regs.RIP - uint64(len(code)) + 2
	s.System = s.System || regs.RIP != s.Regs.RIP ||
		lp.m.ReadVirt(at, code[:]) == nil && nearSyscall(code[:])
	s.RIP, s.Thread = regs.RIP, uint32(lp.k.CurrentThread())
	s.Stack = elffile.Unwind(elffile.Regs{RIP: regs.RIP, RSP: regs.RSP, RBP: regs.RBP}, mem, lp.locator(lp.k.FileAt), maxStackDepth)
	s.Files = make([]LoadedFile, 0, 1+len(s.Stack))
	for i, pc := range append([]uint64{s.RIP}, s.Stack...) {
		if i > 0 {
			pc-- // a return address: the call is the byte before
		}
		_, lf, _ := lp.loadedAt(lp.k.FileAt, pc)
		s.Files = append(s.Files, lf)
	}
}

// loadedAt finds the parsed file mapped executable at a pc, through the
// mappings fileAt names, and where it is loaded.
func (lp *linuxProbes) loadedAt(fileAt func(va uint64) *linux.Mapping, pc uint64) (*elffile.File, LoadedFile, bool) {
	m := fileAt(pc)
	if m == nil || !m.Exec {
		return nil, LoadedFile{}, false
	}
	o := lp.files[m.Path]
	if o == nil || o.file == nil {
		return nil, LoadedFile{}, false
	}
	base, ok := o.file.Base(m.Start, m.Offset)
	if !ok {
		return nil, LoadedFile{}, false
	}
	return o.file, LoadedFile{Path: m.Path, Base: base}, true
}

// locator is loadedAt for the unwinder.
func (lp *linuxProbes) locator(fileAt func(va uint64) *linux.Mapping) elffile.Locate {
	return func(pc uint64) (*elffile.File, uint64, bool) {
		f, lf, ok := lp.loadedAt(fileAt, pc)
		return f, lf.Base, ok
	}
}

// hasReturns reports whether any probe placed so far is a return probe.
func (lp *linuxProbes) hasReturns() bool { return len(lp.returns) > 0 }

// Resumed watches the returns of the calls a restored thread is in whose
// functions have return probes, as their entries would have, outermost
// first so the watches stack as they would have. A call in progress is
// found two ways: a frame of the unwound stack in a probed function; and,
// scanning the stack (as Breakpad does where code has no call-frame
// information, musl's C library for one), a return address after a
// direct call to a probed function — which also finds a probed function
// that tail-called another. A watch matches its return address and stack
// pointer both, so a stale word the scan takes for one never fires.
func (lp *linuxProbes) Resumed(b *linux.Break) error {
	if !lp.hasReturns() {
		return nil
	}
	type call struct {
		site     *objectSite
		ret, rsp uint64
	}
	calls := map[[2]uint64]call{}
	locate := lp.locator(b.FileAt)
	for i, f := range elffile.Frames(elffile.Regs{RIP: b.Regs.RIP, RSP: b.Regs.RSP, RBP: b.Regs.RBP}, b.ReadUint64, locate, maxStackDepth) {
		pc := f.PC
		if i > 0 {
			pc-- // a return address: the call is the byte before
		}
		if s := lp.returnSite(b, pc, true); s != nil {
			calls[[2]uint64{f.Return, f.CFA}] = call{s, f.Return, f.CFA}
		}
	}
	for slot := b.Regs.RSP &^ 7; slot < b.Regs.RSP+maxStackScan; slot += 8 {
		w, err := b.ReadUint64(slot)
		if err != nil {
			break // the stack's end
		}
		if s := lp.returnSite(b, callTarget(b, w), false); s != nil {
			calls[[2]uint64{w, slot + 8}] = call{s, w, slot + 8}
		}
	}
	found := slices.SortedFunc(maps.Values(calls), func(a, b call) int { return cmp.Compare(b.rsp, a.rsp) })
	for _, c := range found {
		if err := b.WatchReturnAt(c.site.cookie, c.ret, c.rsp); err != nil {
			return err
		}
	}
	return nil
}

// maxStackScan bounds how far up a restored thread's stack Resumed looks
// for return addresses.
const maxStackScan = 256 << 10

// returnSite is the site with return probes at va — or, with within, at
// the start of the function holding va — nil if none.
func (lp *linuxProbes) returnSite(b *linux.Break, va uint64, within bool) *objectSite {
	m := b.FileAt(va)
	if m == nil || !m.Exec || va == 0 {
		return nil
	}
	o := lp.files[m.Path]
	if o == nil || o.file == nil {
		return nil
	}
	base, ok := o.file.Base(m.Start, m.Offset)
	if !ok {
		return nil
	}
	at := va - base
	if within {
		if at, ok = o.file.FunctionStart(at); !ok {
			return nil
		}
	}
	if s := o.sites[at]; s != nil && s.ret {
		return s
	}
	return nil
}

// callTarget is where the direct call (E8 rel32) returning to ret went, 0
// if the instruction before ret is none.
func callTarget(b *linux.Break, ret uint64) uint64 {
	w, err := b.ReadUint64(ret - 8)
	if err != nil || byte(w>>24) != 0xE8 {
		return 0
	}
	return ret + uint64(int64(int32(uint32(w>>32))))
}

// object parses the file at path (once per path and contents) and
// resolves the probes in it.
func (lp *linuxProbes) object(path string, data []byte) (*objectProbes, error) {
	if o, ok := lp.files[path]; ok && o.size == len(data) {
		return o, nil
	}
	f := lp.parsed(path, data)
	if f == nil {
		var err error
		if f, err = elffile.Parse(path, data); err != nil {
			lp.files[path] = &objectProbes{size: len(data)}
			return lp.files[path], nil // not ELF: nothing to probe or name
		}
	}
	o := &objectProbes{file: f, size: len(data), sites: map[uint64]*objectSite{}}
	if lp.set != nil {
		sites, err := lp.set.In(f)
		if err != nil {
			return nil, err
		}
		for _, s := range sites {
			os := &objectSite{}
			var rets []*probes.Probe
			for _, id := range s.Probes {
				p, _ := lp.set.Probe(id)
				if p.Return {
					rets = append(rets, p)
				} else {
					os.entry = append(os.entry, p)
				}
			}
			if len(rets) > 0 {
				os.ret, os.cookie = true, uint64(len(lp.returns))
				lp.returns = append(lp.returns, rets)
			}
			o.sites[s.Addr] = os
		}
	}
	lp.files[path] = o
	return o, nil
}

// Mapped reports the mapping and places the probes that fall in it.
func (lp *linuxProbes) Mapped(m linux.Mapping, data []byte) ([]uint64, error) {
	o, err := lp.object(m.Path, data)
	if err != nil {
		return nil, err
	}
	booting := lp.m == nil
	if lp.onMap != nil && !(booting && lp.resuming) {
		var pos vmm.Position
		var at time.Duration
		if !booting { // the executable and loader are mapped before the machine runs
			pos, at = lp.m.Position(), lp.recordTime(lp.m.Position())
		}
		if err := lp.onMap(m, o.file, pos, at); err != nil {
			return nil, err
		}
	}
	if !m.Exec || o.file == nil {
		return nil, nil
	}
	var addrs []uint64
	for vaddr := range o.sites {
		off, ok := o.file.Offset(vaddr)
		if ok && off >= m.Offset && off-m.Offset < m.End-m.Start {
			addrs = append(addrs, m.Start+off-m.Offset)
		}
	}
	return addrs, nil
}

// Break reports the probes of a site the program reached, and asks to
// see the function return if it has return probes.
func (lp *linuxProbes) Break(b *linux.Break) error {
	if b.Retry {
		return nil // reported at the attempt that faulted
	}
	var list []*probes.Probe
	if b.Return {
		if b.Cookie >= uint64(len(lp.returns)) {
			return fmt.Errorf("replayer: return watch %d unknown", b.Cookie)
		}
		list = lp.returns[b.Cookie]
	} else {
		s := lp.siteOf(b)
		if s == nil {
			return nil
		}
		list = s.entry
		if s.ret {
			if err := b.WatchReturn(s.cookie); err != nil {
				return err
			}
		}
	}
	if lp.onHit == nil || len(list) == 0 {
		return nil
	}
	pos := lp.m.Position()
	tid := uint32(b.TID)
	for _, p := range list {
		if !p.WantsThread(tid) {
			continue
		}
		h := Hit{Probe: p, Site: b.Regs.RIP, Thread: tid, Pos: pos, Time: lp.recordTime(pos), Regs: *b.Regs,
			Args: p.EvalArgs(regView{b.Regs}, lp.m)}
		if err := lp.onHit(h); err != nil {
			return err
		}
	}
	return nil
}

// siteOf finds the site a break is at, through the file mapped there.
func (lp *linuxProbes) siteOf(b *linux.Break) *objectSite {
	if b.Mapping == nil {
		return nil
	}
	o := lp.files[b.Mapping.Path]
	if o == nil || o.file == nil {
		return nil
	}
	vaddr, ok := o.file.Vaddr(b.Mapping.FileOffset(b.Regs.RIP))
	if !ok {
		return nil
	}
	return o.sites[vaddr]
}

// syscallSkid is how many instructions a kick may find the program past
// the return from a system call: KVM_RUN leaves the guest a little after
// the kick's signal, and the instructions glibc runs after a SYSCALL
// (cmp rax,-4096; ja; ret) take next to no time of their own.
const syscallSkid = 2

// nearSyscall reports whether the instruction at code[len(code)-2:] (the
// sampled RIP's, code holding the bytes before it) is a SYSCALL, or
// follows one by at most syscallSkid instructions decoded straight on.
func nearSyscall(code []byte) bool {
	rip := len(code) - 2
	if code[rip] == 0x0f && code[rip+1] == 0x05 {
		return true
	}
	for i := 0; i+2 <= rip; i++ {
		if code[i] != 0x0f || code[i+1] != 0x05 {
			continue
		}
		at := i + 2
		for range syscallSkid + 1 {
			if at == rip {
				return true
			}
			in, err := x86asm.Decode(code[at:rip], 64)
			if err != nil {
				break
			}
			at += in.Len
		}
	}
	return false
}
