package vmm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// diskConfig is a 1 MiB base image of known bytes and a scratch overlay.
func diskConfig(t *testing.T) (*DiskConfig, []byte) {
	dir := t.TempDir()
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i / 512 * 7)
	}
	base := filepath.Join(dir, "base.img")
	require.NoError(t, os.WriteFile(base, data, 0o444))
	return &DiskConfig{Base: base, Overlay: filepath.Join(dir, "overlay")}, data
}

// Eight requests in flight all complete: the VMM used to re-raise the disk
// line for the next completion and clear it at once, so 7 of 8 were lost
// and the guest waited for ever.
func TestDiskRequestsInFlightAllComplete(t *testing.T) {
	disk, data := diskConfig(t)
	m := asmMachine(t, kvmtest.DiskInFlightAsm, Config{TimerHz: -1, Disk: disk})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := m.Run(ctx)
	require.NoError(t, err, "the guest waits for ever when a completion is lost")
	require.Equal(t, uint32(8), res.Status, "requests completed OK")
	got := make([]byte, 8*512)
	require.NoError(t, m.RAM().Read(0x800000, got))
	require.True(t, bytes.Equal(data[:8*512], got), "each request read its own sector")
}

// A guest that submits requests with interrupts off, so none completes,
// cannot grow host memory: beyond abi.DiskMaxQueued in flight, each
// submission is refused at once with REPRISE_DISK_ERROR. Unbounded, the
// 1000 requests of 128 KiB below kept 125 MiB on the host.
func TestDiskFloodIsBounded(t *testing.T) {
	disk, _ := diskConfig(t)
	m := asmMachine(t, kvmtest.DiskFloodAsm, Config{TimerHz: -1, Disk: disk})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := m.Run(context.Background())
	require.NoError(t, err)
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Equal(t, uint32(1000-abi.DiskMaxQueued), res.Status, "submissions refused at once")
	require.Equal(t, uint64(1000-abi.DiskMaxQueued), res.Stats.DiskRefused)
	held := int64(after.HeapInuse) - int64(before.HeapInuse)
	require.Less(t, held, int64(abi.DiskMaxQueued*128<<10+16<<20), "host memory held for the guest's requests: %d bytes", held)
}

// HC_MARK keeps the latest mark of each id, for at most MaxMarkIDs ids: a
// million marks used to keep a million entries. Marks of ids beyond the
// bound are refused with -1 in rax; repeating an id costs nothing.
func TestMarksAreBounded(t *testing.T) {
	res, _, err := bootAsm(t, `
.globl _start
_start:
	xor %ebx, %ebx           /* marks refused */
	xor %ecx, %ecx           /* id */
1:	mov %rcx, %rdi
	mov $0x510, %dx
	mov $2, %eax             /* HC_MARK */
	out %eax, %dx
	cmp $-1, %rax
	jne 2f
	inc %ebx
2:	inc %ecx
	cmp $1000, %ecx
	jb 1b
	mov $5000, %ecx          /* one id over and over */
3:	mov $7, %edi
	mov $0x510, %dx
	mov $2, %eax
	out %eax, %dx
	dec %ecx
	jnz 3b
	mov %ebx, %eax
	mov $0x501, %dx
	out %eax, %dx
`, Config{TimerHz: -1})
	require.NoError(t, err)
	require.Equal(t, uint32(1000-MaxMarkIDs), res.Status)
	require.Equal(t, uint64(1000-MaxMarkIDs), res.Stats.MarksDropped)
	require.Len(t, res.Marks, MaxMarkIDs)
	_, ok := res.Between(0, MaxMarkIDs-1)
	require.True(t, ok)
	_, ok = res.Between(0, MaxMarkIDs)
	require.False(t, ok, "a refused mark is not kept")
}
