package debugger

import (
	"encoding/xml"
	"testing"

	"github.com/stretchr/testify/require"
)

// The target description and the 'g' packet come from one table: the
// description is well-formed XML naming every register once, numbered in
// order, with gdb's amd64 features; the 'g' packet holds each register's
// bytes at the offset its bit sizes give; values land where the XSAVE
// image and the registers say.
func TestRegisters(t *testing.T) {
	var desc struct {
		Arch     string `xml:"architecture"`
		Features []struct {
			Name string `xml:"name,attr"`
			Regs []struct {
				Name    string `xml:"name,attr"`
				Bitsize int    `xml:"bitsize,attr"`
				Regnum  int    `xml:"regnum,attr"`
			} `xml:"reg"`
		} `xml:"feature"`
	}
	require.NoError(t, xml.Unmarshal([]byte(targetXML), &desc))
	require.Equal(t, "i386:x86-64", desc.Arch)
	var names []string
	n, size := 0, 0
	for _, f := range desc.Features {
		for _, r := range f.Regs {
			require.Equal(t, n, r.Regnum, r.Name)
			names = append(names, r.Name)
			size += r.Bitsize / 8
			n++
		}
	}
	require.Len(t, names, len(registers))
	require.Subset(t, names, []string{"rax", "rip", "eflags", "st0", "fop", "xmm15", "mxcsr", "fs_base", "ymm0h"})

	var s ThreadState
	s.Regs.RAX, s.Regs.RIP, s.FSBase = 0x1122334455667788, 0x401000, 0x7f0000001000
	s.XSave.Region[xsaveXMM/4] = 0xdeadbeef // xmm0's low word
	s.XSave.Region[xsaveBV/4] = 4           // AVX state in use
	s.XSave.Region[xsaveYMMHi/4] = 0xfeed   // ymm0h's low word
	g := registerBytes(&s)
	require.Len(t, g, size)
	at := func(name string) []byte {
		off := 0
		for _, r := range registers {
			if r.name == name {
				return g[off : off+r.bits/8]
			}
			off += r.bits / 8
		}
		t.Fatalf("no register %s", name)
		return nil
	}
	require.Equal(t, []byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}, at("rax"))
	require.Equal(t, []byte{0, 0x10, 0x40, 0, 0, 0, 0, 0}, at("rip"))
	require.Equal(t, []byte{0, 0x10, 0, 0, 0, 0x7f, 0, 0}, at("fs_base"))
	require.Equal(t, []byte{0xef, 0xbe, 0xad, 0xde}, at("xmm0")[:4])
	require.Equal(t, []byte{0xed, 0xfe}, at("ymm0h")[:2])
	require.Equal(t, []byte{0xff, 0xff, 0, 0}, at("ftag"), "no x87 register in use: every tag empty")
}
