package replayer

import (
	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
)

// returnSites finds the return addresses of a function: the instruction
// right after every direct call to fn in the image's user code. A %return
// probe is a probe at each of them — a static, deterministic placement
// that needs no one-shot sites. Calls through pointers are not found (a
// limitation the docs state), and an instruction after a call that is also
// a jump target would report spurious returns.
func returnSites(img *elffile.Image, fn uint64) []uint64 {
	var sites []uint64
	for _, sym := range img.Symbols() {
		if !sym.Func || sym.Size == 0 || sym.Addr < abi.UserBase {
			continue
		}
		code := codeOf(img, sym.Addr, sym.Size)
		for off := 0; off < len(code); {
			inst, err := x86asm.Decode(code[off:], 64)
			if err != nil || inst.Len == 0 {
				break // data or padding: the rest of this function is not code we can follow
			}
			next := sym.Addr + uint64(off+inst.Len)
			if inst.Op == x86asm.CALL {
				if rel, ok := inst.Args[0].(x86asm.Rel); ok && next+uint64(int64(rel)) == fn {
					sites = append(sites, next)
				}
			}
			off += inst.Len
		}
	}
	return sites
}

// codeOf returns the image's bytes of [addr, addr+n) if a segment holds
// them all.
func codeOf(img *elffile.Image, addr, n uint64) []byte {
	for _, s := range img.Segments {
		if addr >= s.Addr && addr+n <= s.Addr+uint64(len(s.Data)) {
			return s.Data[addr-s.Addr : addr-s.Addr+n]
		}
	}
	return nil
}
