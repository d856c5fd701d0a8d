package mm

import "maps"

// Breakpoints replace a byte of code with int3 in the frame that holds
// it, wherever that frame is mapped. The frames keep the bytes they
// replaced: a frame freed, copied or cleared keeps its breakpoints'
// bookkeeping right, and the end puts every byte back, so RAM ends as the
// recording left it.

// Int3 is the breakpoint instruction.
const Int3 = 0xCC

// patchedByte is the byte an int3 replaced, and whether the int3 is a
// breakpoint site (else it is there for returns watched).
type patchedByte struct {
	orig byte
	site bool
}

// Patch puts an int3 at pa, keeping the byte it replaces; site marks it
// a site. An int3 already there stays (and becomes a site if site).
func (f *Frames) Patch(pa uint64, site bool) error {
	frame, off := pa&^PageMask, uint16(pa&PageMask)
	if p, ok := f.patched[frame][off]; ok {
		p.site = p.site || site
		f.patched[frame][off] = p
		return nil
	}
	b, err := f.ram.Slice(pa, 1)
	if err != nil {
		return err
	}
	if f.patched[frame] == nil {
		f.patched[frame] = map[uint16]patchedByte{}
	}
	f.patched[frame][off] = patchedByte{orig: b[0], site: site}
	b[0] = Int3
	return nil
}

// PatchedAt says whether pa holds one of the int3s, and whether it is a
// site.
func (f *Frames) PatchedAt(pa uint64) (patched, site bool) {
	p, ok := f.patched[pa&^PageMask][uint16(pa&PageMask)]
	return ok, p.site
}

// Patched reports whether any int3 is in RAM (none is while
// ShowOriginals shows the bytes they replaced).
func (f *Frames) Patched() bool { return len(f.patched) > 0 && !f.shown }

// Unpatch puts back the byte the int3 at pa replaced.
func (f *Frames) Unpatch(pa uint64) error {
	frame, off := pa&^PageMask, uint16(pa&PageMask)
	p, ok := f.patched[frame][off]
	if !ok {
		return nil
	}
	delete(f.patched[frame], off)
	if len(f.patched[frame]) == 0 {
		delete(f.patched, frame)
	}
	return f.ram.Write(pa, []byte{p.orig})
}

// unpatchFrame puts back every byte replaced in frame.
func (f *Frames) unpatchFrame(frame uint64) error {
	for off := range f.patched[frame] {
		if err := f.Unpatch(frame + uint64(off)); err != nil {
			return err
		}
	}
	return nil
}

// UnpatchAll puts back every byte an int3 replaced.
func (f *Frames) UnpatchAll() error {
	for frame := range f.patched {
		if err := f.unpatchFrame(frame); err != nil {
			return err
		}
	}
	return nil
}

// ShowOriginals writes back, at every patched byte, the byte the int3
// replaced, keeping the bookkeeping: RAM as the recording has it, until
// ShowPatches.
func (f *Frames) ShowOriginals() error {
	f.shown = true
	return f.writePatched(func(p patchedByte) byte { return p.orig })
}

// ShowPatches puts the int3s back after ShowOriginals.
func (f *Frames) ShowPatches() error {
	f.shown = false
	return f.writePatched(func(patchedByte) byte { return Int3 })
}

// writePatched writes, at every patched byte, what b says.
func (f *Frames) writePatched(b func(patchedByte) byte) error {
	for frame, offs := range f.patched {
		for off, p := range offs {
			if err := f.ram.Write(frame+uint64(off), []byte{b(p)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// copied records that frame to holds a copy of frame from, int3s
// included.
func (f *Frames) copied(from, to uint64) {
	if p := f.patched[from]; p != nil {
		f.patched[to] = maps.Clone(p)
	}
}

// cleared forgets the int3s of a frame whose contents are gone.
func (f *Frames) cleared(frame uint64) { delete(f.patched, frame) }

// Originals puts back, in b — bytes read from RAM at pa, within one
// frame — the bytes the int3s among them replaced: memory as the program
// has it.
func (f *Frames) Originals(pa uint64, b []byte) {
	frame, off := pa&^PageMask, pa&PageMask
	for o, p := range f.patched[frame] {
		if i := uint64(o); i >= off && i-off < uint64(len(b)) {
			b[i-off] = p.orig
		}
	}
}
