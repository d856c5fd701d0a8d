package vmm

import "github.com/reprise-vm/reprise/kvm"

// hiddenFeature is a CPUID feature bit the guest must not see because it
// is a nondeterministic input reprise cannot intercept or log.
type hiddenFeature struct {
	function, index uint32
	reg             byte // 'b', 'c' or 'd'
	bit             uint
	name            string
}

var hiddenFeatures = []hiddenFeature{
	{1, 0, 'd', 4, "TSC"},
	{1, 0, 'c', 30, "RDRAND"},
	{7, 0, 'b', 18, "RDSEED"},
	{0x80000001, 0, 'd', 27, "RDTSCP"},
}

// FilterCPUID returns a copy of entries with the timestamp-counter and
// hardware-random-number features hidden: on the test machines rdtsc at
// CPL3 cannot be trapped, so a guest must be told not to use it.
func FilterCPUID(entries []kvm.CPUIDEntry) []kvm.CPUIDEntry {
	out := append([]kvm.CPUIDEntry(nil), entries...)
	for i := range out {
		e := &out[i]
		for _, h := range hiddenFeatures {
			if e.Function != h.function || e.Index != h.index {
				continue
			}
			switch h.reg {
			case 'b':
				e.EBX &^= 1 << h.bit
			case 'c':
				e.ECX &^= 1 << h.bit
			case 'd':
				e.EDX &^= 1 << h.bit
			}
		}
	}
	return out
}
