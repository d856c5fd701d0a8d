package replayer

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// ProbeHit is one hit of a probe site: where, in which state, and when the
// recorded run was there.
type ProbeHit struct {
	Addr uint64
	Regs *kvm.Regs // the interrupted user-mode registers (RIP = Addr); valid during the call
	Pos  vmm.Position
	Time time.Duration // record-time host time of the last event before it
}

// ProbeHandler is called at every probe hit with the guest's memory. It
// must not change guest state.
type ProbeHandler func(h *ProbeHit, mem vmm.GuestMemory) error

// A hit reaches the VMM one of two ways, as each site's patch says
// (probes.Patch). An int3 traps to the guest kernel, whose #BP handler
// (on its own IST stack) forwards the trap frame with
// REPRISE_HC_BREAKPOINT: two transitions and the kernel's emulated code
// before the exit. A 2-byte `out %al, $abi.PortProbe` over the site's
// first instructions exits straight from CPL3, reading al and changing no
// register or flag: one exit. Either way the engine reports the hit and
// resumes the code at the out-of-line copy of the instructions the patch
// overwrote, in the probe area — followed by a jump back. Afterwards the
// guest's registers and memory are exactly what executing them in place
// gives; only the patched bytes, the copies and the kernel's #BP stack
// differ, and the engine restores all three before the machine hashes RAM
// at the end (docs/architecture.md, "Probes and sampling"). The recorded run
// never had them: probes cost only the replays that use them.
const trampolineSlot = 32

// patches are the probe sites of one replay, patched into guest memory.
type patches struct {
	sites []probes.Site
	onHit ProbeHandler
	// int3Only patches every site with int3, as sites an exit cannot
	// take are: to compare the two.
	int3Only bool
	// resumed says the guest ran before the patches went in (the replay
	// started at a checkpoint), so its threads may stand anywhere.
	resumed bool
	placed  map[uint64]*patch // by site address; decided by the first install
}

type patch struct {
	site  *probes.Site
	tramp uint64       // the out-of-line copy
	how   probes.Patch // the site's patch as placed
	why   string       // why a site probes.ChoosePatches gave an exit has int3
	hits  uint64
}

// ProbeSite is how a replay patched one probe site, and how often the
// site was hit.
type ProbeSite struct {
	Addr  uint64
	Where string // SYMBOL+OFF
	Patch probes.Patch
	// Why says why a site has int3 rather than the cheaper exit ("" for
	// an exit).
	Why  string
	Hits uint64
}

// placement says how each site was patched, by address.
func (ps *patches) placement(img *elffile.Image) []ProbeSite {
	out := make([]ProbeSite, 0, len(ps.placed))
	for _, p := range ps.placed {
		s := ProbeSite{Addr: p.site.Addr, Where: img.Describe(p.site.Addr), Patch: p.how, Hits: p.hits}
		if p.how == probes.PatchInt3 {
			s.Why = cmp.Or(p.why, p.site.NoExit)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ProbeSite) int { return cmp.Compare(a.Addr, b.Addr) })
	return out
}

// install decides how each site is patched, the first time, and patches
// them; after remove, install patches them the same way again.
func (ps *patches) install(m *vmm.Machine) error {
	ram, img := m.RAM(), m.Image()
	if ps.placed == nil {
		if err := ps.decide(m); err != nil {
			return err
		}
	}
	for _, p := range ps.placed {
		for _, d := range p.overwritten() {
			if orig, err := ram.Slice(d.Addr, uint64(d.Len)); err != nil || string(orig) != string(d.Orig) {
				return fmt.Errorf("replayer: probe site %#x (%s): guest memory does not hold the expected instruction %x at %#x", p.site.Addr, img.Describe(p.site.Addr), d.Orig, d.Addr)
			}
		}
		code, err := p.outOfLine()
		if err != nil {
			return fmt.Errorf("replayer: probe site %#x (%s): %w", p.site.Addr, img.Describe(p.site.Addr), err)
		}
		if err := ram.Write(p.tramp, code); err != nil {
			return err
		}
		patch := []byte{0xCC} // int3
		if p.how == probes.PatchExit {
			patch = []byte{0xE6, abi.PortProbe} // out %al, $PortProbe
		}
		if err := ram.Write(p.site.Addr, patch); err != nil {
			return err
		}
	}
	return nil
}

// decide gives each site its slot and its patch: the one
// probes.ChoosePatches chose, but int3 where a thread stands inside the
// bytes an exit would overwrite (only a replay resumed from a checkpoint
// can have one there: at boot no user code has run) or the copy does not
// fit its slot.
func (ps *patches) decide(m *vmm.Machine) error {
	img := m.Image()
	if len(ps.sites)*trampolineSlot > abi.ProbeAreaSize {
		return fmt.Errorf("replayer: %d probe sites do not fit the probe area (at most %d)", len(ps.sites), abi.ProbeAreaSize/trampolineSlot)
	}
	placed := make(map[uint64]*patch, len(ps.sites))
	for i := range ps.sites {
		s := &ps.sites[i]
		if _, dup := placed[s.Addr]; dup {
			return fmt.Errorf("replayer: two probe sites at %#x", s.Addr)
		}
		if s.Addr < abi.UserBase {
			return fmt.Errorf("replayer: probe site %#x (%s) is in the guest kernel: only user code can be probed (the kernel's #BP path would recurse)", s.Addr, img.Describe(s.Addr))
		}
		if len(s.Orig) == 0 || len(s.Orig) != s.Len {
			return fmt.Errorf("replayer: probe site %#x (%s) has no instruction", s.Addr, img.Describe(s.Addr))
		}
		p := &patch{site: s, tramp: abi.ProbeArea + uint64(i)*trampolineSlot, how: s.Patch}
		if ps.int3Only {
			p.how, p.why = probes.PatchInt3, "int3 asked for"
		}
		if p.how == probes.PatchExit {
			if _, err := p.outOfLine(); err != nil {
				p.how, p.why = probes.PatchInt3, err.Error()
			}
		}
		placed[s.Addr] = p
	}
	var inside []*patch
	if ps.resumed {
		var err error
		if inside, err = threadsInside(m, placed); err != nil {
			return err
		}
	}
	for _, p := range inside {
		p.how, p.why = probes.PatchInt3, "a thread stands inside the instructions its exit would overwrite"
	}
	ps.placed = placed
	return nil
}

// threadsInside are the exit patches a thread could resume inside of,
// past their first byte: the vCPU's RIP, or a word in RAM (where the
// guest kernel keeps every other thread's saved RIP and every return
// address is), equal to such an address. A word that only looks like one
// makes the site an int3 needlessly, never wrongly.
func threadsInside(m *vmm.Machine, placed map[uint64]*patch) ([]*patch, error) {
	inside := map[uint64]*patch{} // by address past a patch's first byte
	lo, hi := ^uint64(0), uint64(0)
	for _, p := range placed {
		if p.how != probes.PatchExit {
			continue
		}
		end := p.end()
		for a := p.site.Addr + 1; a < end; a++ {
			inside[a] = p
		}
		lo, hi = min(lo, p.site.Addr+1), max(hi, end)
	}
	if len(inside) == 0 {
		return nil, nil
	}
	regs, err := m.VCPU().Regs()
	if err != nil {
		return nil, fmt.Errorf("replayer: placing probes: %w", err)
	}
	found := map[*patch]bool{}
	if p, ok := inside[regs.RIP]; ok {
		found[p] = true
	}
	ram := m.RAM().Populated() // zero above
	for i := 0; i+8 <= len(ram); i += 8 {
		if w := binary.LittleEndian.Uint64(ram[i:]); w >= lo && w < hi {
			if p, ok := inside[w]; ok {
				found[p] = true
			}
		}
	}
	return slices.Collect(maps.Keys(found)), nil
}

// overwritten are the instructions p's patch overwrites: the site's, and
// for an exit those it displaces.
func (p *patch) overwritten() []probes.Site {
	if p.how != probes.PatchExit {
		return []probes.Site{*p.site}
	}
	return append([]probes.Site{*p.site}, p.site.Displaced...)
}

// end is where the instructions p's patch overwrites end.
func (p *patch) end() uint64 {
	o := p.overwritten()
	return o[len(o)-1].Next()
}

// outOfLine is the code that stands for the instructions p's patch
// overwrote, at p.tramp: each in turn, then a jump back after the last.
func (p *patch) outOfLine() ([]byte, error) {
	insts := p.overwritten()
	var code []byte
	for i := range insts {
		last := i == len(insts)-1
		if !last && insts[i].Branch != probes.BranchNone {
			return nil, fmt.Errorf("%s branches, and is not the last instruction its exit overwrites", insts[i].String())
		}
		c, err := p.copyOf(&insts[i], uint64(len(code)), last)
		if err != nil {
			return nil, err
		}
		code = append(code, c...)
	}
	if len(code) > trampolineSlot {
		return nil, fmt.Errorf("the out-of-line copy of %d bytes does not fit a %d-byte slot", len(code), trampolineSlot)
	}
	return code, nil
}

// copyOf is the code that stands for instruction s at p.tramp+at: the
// instruction itself with its RIP-relative displacement adjusted, then
// (if last) a jump back; relative calls and jumps are rewritten into
// equivalents that reach the same targets with the same return address.
// It relies on the decoder's classification (Branch, Indirect, Target,
// Cond), never on opcode bytes, so prefixed forms are handled too.
func (p *patch) copyOf(s *probes.Site, at uint64, last bool) ([]byte, error) {
	tramp := p.tramp + at
	o, n := s.Orig, uint64(len(s.Orig))
	next := s.Addr + n // where execution continues in place
	var code []byte
	jmp := func(off, to uint64) ([]byte, error) { // jmp rel32 from code offset off
		d := int64(to) - int64(tramp+off+5)
		if d != int64(int32(d)) {
			return nil, fmt.Errorf("target %#x out of rel32 reach", to)
		}
		b := []byte{0xE9, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(b[1:], uint32(int32(d)))
		return b, nil
	}
	switch {
	case s.Branch == probes.BranchCall && s.Indirect:
		return nil, fmt.Errorf("an indirect call cannot be probed yet (its return address would be the out-of-line copy's)")
	case s.Branch == probes.BranchCall: // push the in-place return address, jump to the target
		if next >= 1<<31 {
			return nil, fmt.Errorf("return address %#x does not fit push imm32", next)
		}
		code = []byte{0x68, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(code[1:], uint32(next))
		j, err := jmp(5, s.Target)
		if err != nil {
			return nil, err
		}
		code = append(code, j...)
	case s.Branch == probes.BranchJmp && !s.Indirect:
		j, err := jmp(0, s.Target)
		if err != nil {
			return nil, err
		}
		code = j
	case s.Branch == probes.BranchJcc: // jcc.rel32 to the taken jump (offset 11); fall through: back
		cc, ok := s.Cond()
		if !ok {
			return nil, fmt.Errorf("conditional jump %x with no condition code", o)
		}
		code = []byte{0x0F, 0x80 | cc&0x0F, 5, 0, 0, 0}
		back, err := jmp(6, next)
		if err != nil {
			return nil, err
		}
		taken, err := jmp(11, s.Target)
		if err != nil {
			return nil, err
		}
		code = append(append(code, back...), taken...)
	case s.Branch == probes.BranchOther: // loop*/jrcxz: the instruction itself, its rel8 skipping the jump back
		code = append([]byte(nil), o...)
		code[n-1] = 5
		back, err := jmp(n, next)
		if err != nil {
			return nil, err
		}
		taken, err := jmp(n+5, s.Target)
		if err != nil {
			return nil, err
		}
		code = append(append(code, back...), taken...)
	default: // none, ret, indirect jmp: the instruction itself, then back
		code = append([]byte(nil), o...)
		if off := s.RIPRelDispOff; off >= 0 {
			if off+4 > len(o) {
				return nil, fmt.Errorf("RIP-relative displacement at offset %d is outside the instruction", off)
			}
			target := int64(next) + int64(int32(binary.LittleEndian.Uint32(o[off:])))
			d := target - int64(tramp+n)
			if d != int64(int32(d)) {
				return nil, fmt.Errorf("RIP-relative operand %#x out of reach of the probe area", target)
			}
			binary.LittleEndian.PutUint32(code[off:], uint32(int32(d)))
		}
		if last { // else the next instruction's copy follows
			j, err := jmp(n, next)
			if err != nil {
				return nil, err
			}
			code = append(code, j...)
		}
	}
	return code, nil
}

// hit reports a probe hit at the int3 the guest kernel forwarded, with
// the trapped registers regs (RIP past the int3), and returns where the
// trapped code resumes: the out-of-line copy. An int3 at no int3 site is
// the guest's own.
func (ps *patches) hit(m *vmm.Machine, regs *kvm.Regs, recordTime func(vmm.Position) time.Duration) (uint64, bool, error) {
	p, ok := ps.placed[regs.RIP-1]
	if !ok || p.how != probes.PatchInt3 {
		return 0, false, nil
	}
	return p.report(ps.onHit, m, regs, recordTime)
}

// exit reports a probe hit at an exit patch, with the vCPU's registers
// (RIP at the out, or past it when KVM emulated it: ChoosePatches keeps
// exit sites from starting 2 bytes apart, so only one of the two can be a
// site), and returns where the code resumes. An out at no exit site is
// the guest's own.
func (ps *patches) exit(m *vmm.Machine, regs *kvm.Regs, recordTime func(vmm.Position) time.Duration) (uint64, bool, error) {
	for _, at := range []uint64{regs.RIP, regs.RIP - probes.ExitPatchLen} {
		if p, ok := ps.placed[at]; ok && p.how == probes.PatchExit {
			return p.report(ps.onHit, m, regs, recordTime)
		}
	}
	return 0, false, nil
}

// report tells onHit of a hit of p, with regs' RIP set to the site, and
// returns the out-of-line copy to resume at.
func (p *patch) report(onHit ProbeHandler, m *vmm.Machine, regs *kvm.Regs, recordTime func(vmm.Position) time.Duration) (uint64, bool, error) {
	m.Stats().ProbeHits++
	p.hits++
	if onHit != nil {
		regs.RIP = p.site.Addr
		pos := m.Position()
		h := &ProbeHit{Addr: p.site.Addr, Regs: regs, Pos: pos, Time: recordTime(pos)}
		if err := onHit(h, m); err != nil {
			return 0, true, err
		}
	}
	return p.tramp, true, nil
}

// remove puts back every byte probes changed: the patched instructions,
// the out-of-line copies, the kernel's #BP stack, which the recorded run
// never used, and the accessed/dirty bits the CPU set in the page-table
// entries of those two areas.
func (ps *patches) remove(ram *memory.RAM) error {
	if len(ps.placed) == 0 {
		return nil
	}
	for _, p := range ps.placed {
		for _, d := range p.overwritten() {
			if err := ram.Write(d.Addr, d.Orig); err != nil {
				return err
			}
		}
	}
	return clearProbeAreas(ram)
}

// clearProbeAreas zeroes the out-of-line copies and the kernel's #BP
// stack, which the recorded run never used, and clears the
// accessed/dirty bits the CPU set in their page-table entries.
func clearProbeAreas(ram *memory.RAM) error {
	for _, r := range [][2]uint64{{abi.ProbeArea, abi.ProbeAreaSize}, {abi.IST2Top - ist2Size, ist2Size}} {
		b, err := ram.Slice(r[0], r[1])
		if err != nil {
			return err
		}
		clear(b)
		// The CPU marked their page-table entries accessed (and dirty).
		if err := x86.ClearAccessed(ram, r[0], r[0]+r[1]); err != nil {
			return err
		}
	}
	return nil
}

// ist2Size is the #BP stack below abi.IST2Top (abi.h: IST2 sits above IST1).
const ist2Size = abi.IST2Top - abi.IST1Top
