package kvm

import "encoding/binary"

// XSaveBytes is the size of struct kvm_xsave's region.
const XSaveBytes = len(XSave{}.Region) * 4

// Bytes is the XSAVE image as the CPU lays it out in memory.
func (x *XSave) Bytes() []byte {
	b := make([]byte, XSaveBytes)
	for i, w := range x.Region {
		binary.LittleEndian.PutUint32(b[i*4:], w)
	}
	return b
}

// XSaveOf is the image whose memory layout starts with b (at most
// XSaveBytes of it; the rest is zero).
func XSaveOf(b []byte) XSave {
	var x XSave
	var w [4]byte
	for i := range x.Region {
		if i*4 >= len(b) {
			break
		}
		clear(w[:])
		copy(w[:], b[i*4:])
		x.Region[i] = binary.LittleEndian.Uint32(w[:])
	}
	return x
}
