package linux

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
)

// Programs read the time-stamp counter: glibc's dynamic loader as it
// starts (rtld timing, kept in its memory whether or not anyone asks),
// Go's runtime for its tick rate and its profiles. RDTSC and RDTSCP run
// natively in user mode on the hosts reprise is tested on and cannot be
// trapped there, so each in an executable's and its loader's .text is
// replaced, as they are loaded, with UD2: it traps, and the kernel
// answers from the machine's recorded clock and resumes after it. The
// code is decoded instruction by instruction, starting again at every
// function the symbol table names, so only real RDTSCs are touched.

// ud2 replaces the first two bytes of an RDTSC (two bytes) or RDTSCP
// (three).
var ud2 = [2]byte{0x0F, 0x0B}

const (
	rdtscLen  = 2
	rdtscpLen = 3
)

// tscSite is an RDTSC or RDTSCP: its offset from the start of .text, and
// its length.
type tscSite struct {
	offset uint64
	len    uint8
}

// patchTSC replaces the RDTSCs and RDTSCPs in x's .text, loaded in as
// from file.
func (k *Kernel) patchTSC(as *mm.Space, x *executable, file *node) error {
	start, end := x.text[0], x.text[1]
	switch {
	case start == 0 && end == 0:
		return nil // no section headers: nothing known to be code
	case end <= start || end-start > 64<<20:
		return fmt.Errorf(".text section [%#x, %#x) of %d bytes", start, end, end-start)
	}
	sites, ok := k.tscSites[file]
	if !ok || file.Written {
		code := x.textBytes // as loaded: no copy (fresh host memory costs a fault a page)
		if code == nil {
			code = make([]byte, end-start)
			if err := as.Read(start, code); err != nil {
				return err
			}
		}
		sites = findTSC(code, start, x.funcs)
		if !file.Written {
			if k.tscSites == nil {
				k.tscSites = map[*node][]tscSite{}
			}
			k.tscSites[file] = sites
		}
	}
	for _, s := range sites {
		if err := as.Load(start+s.offset, ud2[:]); err != nil {
			return err
		}
		as.AddSite(start+s.offset, s.len)
	}
	return nil
}

// findTSC finds the RDTSCs and RDTSCPs in code, a .text section loaded at
// start whose functions begin at funcs (sorted; none without a symbol
// table). With symbols, each function is decoded from its start, and
// decoding stops at an instruction the decoder does not know (AVX-512's
// EVEX forms) until the next function: a sweep that lost its place could
// take bytes inside another instruction for an RDTSC. Only functions
// whose bytes hold an opcode's (0F 31, 0F 01 F9) can hold one, so only
// they are decoded: node's 60 MiB of code took seconds to decode whole.
// Without symbols, the sweep steps over what it cannot decode byte by
// byte (sweepTSC: decoding only near an opcode's bytes).
func findTSC(code []byte, start uint64, funcs []uint64) []tscSite {
	end := start + uint64(len(code))
	if len(funcs) == 0 {
		return sweepTSC(code, start)
	}
	ranges := make([][2]uint64, len(funcs))
	for i, f := range funcs {
		next := end
		if i+1 < len(funcs) {
			next = funcs[i+1]
		}
		ranges[i] = [2]uint64{f, next}
	}
	candidates := map[int]bool{}
	for _, op := range [][]byte{{0x0F, 0x31}, {0x0F, 0x01, 0xF9}} {
		for off := 0; ; off++ {
			i := bytes.Index(code[off:], op)
			if i < 0 {
				break
			}
			off += i
			pc := start + uint64(off)
			r := sort.Search(len(ranges), func(j int) bool { return ranges[j][0] > pc }) - 1
			if r >= 0 && pc < ranges[r][1] {
				candidates[r] = true
			}
		}
	}
	var sites []tscSite
	for _, r := range slices.Sorted(maps.Keys(candidates)) {
		sites = decodeTSC(code, start, ranges[r], true, sites)
	}
	return sites
}

// maxInstLen is the longest an x86 instruction can be: a sweep has an
// instruction start in every maxInstLen bytes it passes.
const maxInstLen = 15

// sweepTSC is decodeTSC's sweep of all of code (loaded at start), stepping
// a byte over what it cannot decode, with the same result, but decoding
// only near the bytes that could be an RDTSC's or RDTSCP's: a whole sweep
// of libc's 1.3 MiB of code took 74 ms, of busybox's 1.5 MiB 92 ms, at
// every start of a program.
//
// It keeps a place the whole sweep passes (at first, code's start). To go
// on to an opcode's bytes far ahead, it sweeps from each of the
// maxInstLen bytes some way before them; the whole sweep passes one of
// these (it has an instruction start in any maxInstLen bytes), and a
// sweep depends only on where it starts, so where all of them meet, the
// whole sweep passes too. On x86 they meet within a few instructions;
// where they do not before the opcode, it starts further back, and at
// worst sweeps on from the place it keeps.
func sweepTSC(code []byte, start uint64) []tscSite {
	var sites []tscSite
	end := start + uint64(len(code))
	at := start // the whole sweep passes here; it was decoded up to here
	for _, c := range opcodeBytes(code) {
		pc := start + uint64(c)
		if pc < at {
			continue // decoded already
		}
		from := at
		for back := uint64(64); pc-at > back+maxInstLen; back *= 4 {
			if meet, ok := sweepsMeet(code, start, pc-back-maxInstLen, pc); ok {
				from = meet
				break
			}
		}
		// From there to past every instruction that could hold the
		// opcode's bytes.
		for from <= pc && from < end {
			sites, from = decodeOne(code, start, from, end, sites)
		}
		at = from
	}
	return sites
}

// opcodeBytes are the offsets in code of an RDTSC's or RDTSCP's opcode
// bytes (0F 31, 0F 01 F9), in order.
func opcodeBytes(code []byte) []int {
	var at []int
	for off := 0; ; off++ {
		i := bytes.IndexByte(code[off:], 0x0F)
		if i < 0 {
			return at
		}
		off += i
		if next := code[off+1:]; len(next) > 0 && (next[0] == 0x31 || len(next) > 1 && next[0] == 0x01 && next[1] == 0xF9) {
			at = append(at, off)
		}
	}
}

// sweepsMeet sweeps from each of the maxInstLen addresses from s up to
// before pc and reports the first address before pc every one of them
// passes, if any. A sweep that lands where the first passed goes on as
// the first did, so it stops there.
func sweepsMeet(code []byte, start, s, pc uint64) (uint64, bool) {
	end := start + uint64(len(code))
	first := make([]bool, pc-s) // by address from s: the first sweep passed it
	for at := s; at < pc; {
		first[at-s] = true
		_, at = decodeOne(code, start, at, end, nil)
	}
	meet := s
	for from := s + 1; from < s+maxInstLen; from++ {
		at := from
		for at < pc && !first[at-s] {
			_, at = decodeOne(code, start, at, end, nil)
		}
		if at >= pc {
			return 0, false
		}
		meet = max(meet, at)
	}
	return meet, true
}

// decodeOne decodes the instruction at pc (code loaded at start, its
// bytes up to end), adds it to sites if it is an RDTSC or RDTSCP, and
// returns where the sweep goes next: past it, or a byte on if it cannot
// be decoded.
func decodeOne(code []byte, start, pc, end uint64, sites []tscSite) ([]tscSite, uint64) {
	inst, err := x86asm.Decode(code[pc-start:end-start], 64)
	switch {
	case err != nil:
		return sites, pc + 1
	case inst.Op == x86asm.RDTSC || inst.Op == x86asm.RDTSCP:
		sites = append(sites, tscSite{offset: pc - start, len: uint8(inst.Len)})
	}
	return sites, pc + uint64(inst.Len)
}

// decodeTSC decodes code's instructions in r (addresses; code is loaded
// at start) and adds its RDTSCs and RDTSCPs to sites. At what it cannot
// decode it stops if stop, and steps a byte otherwise.
func decodeTSC(code []byte, start uint64, r [2]uint64, stop bool, sites []tscSite) []tscSite {
	for pc := r[0]; pc < r[1]; {
		inst, err := x86asm.Decode(code[pc-start:r[1]-start], 64)
		switch {
		case err != nil && stop:
			return sites
		case err != nil:
			pc++
			continue
		case inst.Op == x86asm.RDTSC || inst.Op == x86asm.RDTSCP:
			sites = append(sites, tscSite{offset: pc - start, len: uint8(inst.Len)})
		}
		pc += uint64(inst.Len)
	}
	return sites
}

// emulateTSC answers a patched RDTSC or RDTSCP (n bytes) that trapped at
// rip with the clock, in EDX:EAX (RDTSCP: processor 0 in ECX), and
// resumes after it (the trap frame's RIP, past the vector and error code
// at the stub's RSP). A debugger's single step of it ends there.
func (k *Kernel) emulateTSC(regs *kvm.Regs, rip uint64, n uint8) error {
	clock, err := k.m.Clock()
	if err != nil {
		return err
	}
	regs.RAX, regs.RDX = uint64(clock)&0xffffffff, uint64(clock)>>32
	if n == rdtscpLen {
		regs.RCX = 0
	}
	k.m.VCPU().MarkRegsDirty()
	t := k.current()
	t.emulated = emulation{exit: k.m.Position().Exit, at: rip}
	if err := k.m.RAM().PutUint64(regs.RSP+frameRIP, rip+uint64(n)); err != nil {
		return err
	}
	return k.bp.emulatedStep(k, t, regs)
}
