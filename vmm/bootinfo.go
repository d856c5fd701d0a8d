package vmm

import (
	"encoding/binary"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// writeBootInfo fills struct reprise_bootinfo, the kernel's only input
// besides RAM itself.
func writeBootInfo(ram *memory.RAM, cfg Config) error {
	b := make([]byte, abi.BootInfoCmdlineOff+abi.CmdlineMax)
	binary.LittleEndian.PutUint64(b[abi.BootInfoMagicOff:], abi.BootMagic)
	binary.LittleEndian.PutUint64(b[abi.BootInfoMemOff:], cfg.MemBytes)
	hz := uint32(max(cfg.TimerHz, 0))
	binary.LittleEndian.PutUint32(b[abi.BootInfoTimerHzOff:], hz)
	binary.LittleEndian.PutUint32(b[abi.BootInfoNCPUsOff:], 1)
	copy(b[abi.BootInfoCmdlineOff:abi.BootInfoCmdlineOff+abi.CmdlineMax-1], cfg.Cmdline)
	return ram.Write(abi.BootInfo, b)
}
