package symtab_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/symtab"
)

func TestTable(t *testing.T) {
	tab := symtab.New([]symtab.Symbol{
		{Name: "data", Addr: 0x5000, Size: 0x10},
		{Name: "f", Addr: 0x1000, Size: 0x20, Func: true},
		{Name: "label", Addr: 0x2000}, // unsized: up to the next symbol
		{Name: "f", Addr: 0x3000, Size: 0x8, Func: true},
	})
	require.Equal(t, []uint64{0x1000, 0x2000, 0x3000, 0x5000}, []uint64{tab.All()[0].Addr, tab.All()[1].Addr, tab.All()[2].Addr, tab.All()[3].Addr})
	f, ok := tab.Lookup("f")
	require.True(t, ok)
	require.Equal(t, uint64(0x1000), f.Addr, "the lowest-addressed of a name")
	_, ok = tab.Lookup("nosuch")
	require.False(t, ok)

	for addr, want := range map[uint64]string{
		0x0fff: "0xfff", 0x1000: "f", 0x101f: "f+0x1f", 0x1020: "0x1020",
		0x2fff: "label+0xfff", 0x3004: "f+0x4", 0x5010: "0x5010",
	} {
		require.Equal(t, want, tab.Describe(addr), "%#x", addr)
	}
	require.Equal(t, "f", tab.Function(0x3004))
	require.Equal(t, "0x5004", tab.Function(0x5004), "data is no function")
}
