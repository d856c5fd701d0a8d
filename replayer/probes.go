package replayer

import (
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/vmm"
)

// Hit is one probe hit during a replay.
type Hit struct {
	Probe  *probes.Probe
	Site   uint64 // the address hit: the probe's, or for a return probe the return address
	Thread uint32 // guest thread id (0 if the image does not say)
	Pos    vmm.Position
	Time   time.Duration // record-time host time (of the last event before it)
	Regs   kvm.Regs
	Args   []probes.Value
}

// planSites turns a plan into its sites and the handler that
// reports their hits. Entry probes are at their sites; a %return probe of
// function F is at the return addresses of the direct calls to F
// (returnSites), where retval (rax) is F's return value.
func planSites(plan *probes.Plan, img *elffile.Image, onHit func(Hit) error) ([]probes.Site, ProbeHandler, error) {
	entry := map[uint64][]*probes.Probe{}   // entry probes by site
	returns := map[uint64][]*probes.Probe{} // return probes by return site
	var sites []probes.Site
	seen := map[uint64]bool{}
	add := func(s probes.Site) {
		if !seen[s.Addr] {
			seen[s.Addr] = true
			sites = append(sites, s)
		}
	}
	for _, s := range plan.Sites {
		for _, id := range s.Probes {
			p, _ := plan.Probe(id)
			if p.Return {
				continue
			}
			entry[s.Addr] = append(entry[s.Addr], p)
			add(s)
		}
	}
	for i := range plan.Probes {
		p := &plan.Probes[i]
		if !p.Return {
			continue
		}
		rets := returnSites(img, p.Addr)
		if len(rets) == 0 {
			return nil, nil, fmt.Errorf("replayer: probe %s: no direct call to %s in the image, so no return to probe", p.Name, p.Symbol)
		}
		for _, r := range rets {
			s, err := probes.DecodeSite(img, r)
			if err != nil {
				return nil, nil, fmt.Errorf("replayer: probe %s: return site %s: %w", p.Name, img.Describe(r), err)
			}
			returns[r] = append(returns[r], p)
			add(s)
		}
	}
	tidSym, haveTID := img.Lookup(abi.CurrentTIDSymbol)
	handler := func(ph *ProbeHit, mem vmm.GuestMemory) error {
		tid := currentThread(mem, tidSym, haveTID)
		for _, p := range append(entry[ph.Addr], returns[ph.Addr]...) {
			if !p.WantsThread(tid) {
				continue
			}
			h := Hit{Probe: p, Site: ph.Addr, Thread: tid, Pos: ph.Pos, Time: ph.Time, Regs: *ph.Regs, Args: p.EvalArgs(regView{ph.Regs}, mem)}
			if err := onHit(h); err != nil {
				return err
			}
		}
		return nil
	}
	return sites, handler, nil
}

// currentThread reads the running guest thread's id (0 if unknown).
func currentThread(mem vmm.GuestMemory, sym elffile.Symbol, ok bool) uint32 {
	var b [4]byte
	if !ok || mem.ReadVirt(sym.Addr, b[:]) != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b[:])
}

// regView shows kvm.Regs to the probes' expression evaluator.
type regView struct{ r *kvm.Regs }

func (v regView) Reg(x x86asm.Reg) uint64 {
	r := v.r
	switch x {
	case x86asm.RAX:
		return r.RAX
	case x86asm.RBX:
		return r.RBX
	case x86asm.RCX:
		return r.RCX
	case x86asm.RDX:
		return r.RDX
	case x86asm.RSI:
		return r.RSI
	case x86asm.RDI:
		return r.RDI
	case x86asm.RSP:
		return r.RSP
	case x86asm.RBP:
		return r.RBP
	case x86asm.R8:
		return r.R8
	case x86asm.R9:
		return r.R9
	case x86asm.R10:
		return r.R10
	case x86asm.R11:
		return r.R11
	case x86asm.R12:
		return r.R12
	case x86asm.R13:
		return r.R13
	case x86asm.R14:
		return r.R14
	case x86asm.R15:
		return r.R15
	case x86asm.RIP:
		return r.RIP
	}
	return 0
}
