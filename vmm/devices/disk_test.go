package devices_test

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/devices"
	"github.com/reprise-vm/reprise/vmm/memory"
)

func baseImage(t testing.TB, sectors int) (string, []byte) {
	t.Helper()
	b := make([]byte, sectors*devices.SectorSize)
	_, _ = rand.Read(b)
	p := filepath.Join(t.TempDir(), "base.img")
	require.NoError(t, os.WriteFile(p, b, 0o444))
	return p, b
}

func openStore(t testing.TB, sectors int) (*devices.DiskStore, string, []byte) {
	t.Helper()
	p, b := baseImage(t, sectors)
	s, err := devices.OpenDiskStore(p, filepath.Join(t.TempDir(), "overlay"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, p, b
}

func TestDiskStoreCopyOnWrite(t *testing.T) {
	s, basePath, base := openStore(t, 64)
	require.Equal(t, uint64(64), s.Sectors())

	got := make([]byte, 8*devices.SectorSize)
	require.NoError(t, s.ReadSectors(10, got))
	require.Equal(t, base[10*512:18*512], got)

	w := bytes.Repeat([]byte{0xAB}, 2*devices.SectorSize)
	require.NoError(t, s.WriteSectors(12, w))
	require.NoError(t, s.ReadSectors(10, got)) // base, overlay, base runs
	want := append(append(append([]byte{}, base[10*512:12*512]...), w...), base[14*512:18*512]...)
	require.Equal(t, want, got)

	after, err := os.ReadFile(basePath)
	require.NoError(t, err)
	require.Equal(t, base, after, "the base image was modified")

	require.Error(t, s.ReadSectors(63, make([]byte, 2*devices.SectorSize)))
	require.Error(t, s.WriteSectors(64, make([]byte, devices.SectorSize)))
	require.Error(t, s.ReadSectors(0, make([]byte, 100)), "not a whole number of sectors")
	require.Error(t, s.ReadSectors(^uint64(0), make([]byte, devices.SectorSize)))
}

func TestDiskStoreRejects(t *testing.T) {
	dir := t.TempDir()
	_, err := devices.OpenDiskStore(filepath.Join(dir, "missing"), filepath.Join(dir, "o"))
	require.ErrorContains(t, err, "base image")
	_, err = devices.OpenDiskStore(dir, filepath.Join(dir, "o"))
	require.ErrorContains(t, err, "not a regular file")
	tiny := filepath.Join(dir, "tiny")
	require.NoError(t, os.WriteFile(tiny, []byte("x"), 0o644))
	_, err = devices.OpenDiskStore(tiny, filepath.Join(dir, "o"))
	require.ErrorContains(t, err, "smaller than one")
}

// putReq writes a request descriptor into guest RAM.
func putReq(t testing.TB, ram *memory.RAM, gpa uint64, op, count uint32, sector, buf uint64) {
	t.Helper()
	b := make([]byte, abi.DiskReqSize)
	binary.LittleEndian.PutUint32(b[0:], op)
	binary.LittleEndian.PutUint32(b[4:], count)
	binary.LittleEndian.PutUint64(b[8:], sector)
	binary.LittleEndian.PutUint64(b[16:], buf)
	binary.LittleEndian.PutUint32(b[28:], 0x7a6)
	require.NoError(t, ram.Write(gpa, b))
}

func status(t testing.TB, ram *memory.RAM, gpa uint64) uint32 {
	b := make([]byte, 8)
	require.NoError(t, ram.Read(gpa+abi.DiskReqStatus, b))
	require.Equal(t, uint32(0x7a6), binary.LittleEndian.Uint32(b[4:]), "the tag must be left alone")
	return binary.LittleEndian.Uint32(b)
}

func submit(t testing.TB, d *devices.Disk, gpa uint64) {
	t.Helper()
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, uint32(gpa))
	require.NoError(t, d.PortWrite(0, b))
}

func newRAM(t testing.TB) *memory.RAM {
	ram, err := memory.New(8 << 20)
	require.NoError(t, err)
	t.Cleanup(func() { ram.Close() })
	return ram
}

// Asynchronous (live and record): the worker does the I/O and raises the
// line; nothing reaches guest memory before Complete.
func TestDiskAsyncCompletion(t *testing.T) {
	ram := newRAM(t)
	store, _, base := openStore(t, 32)
	var raised atomic.Int32
	d := devices.NewDisk(ram, store, func() { raised.Add(1) })
	defer d.Close()

	capacity := make([]byte, 4)
	d.PortRead(4, capacity)
	require.Equal(t, uint32(32), binary.LittleEndian.Uint32(capacity))

	const desc, buf = 0x10000, 0x20000
	putReq(t, ram, desc, abi.DiskRead, 4, 3, buf)
	submit(t, d, desc)
	require.Eventually(t, func() bool { return raised.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, uint32(abi.DiskPending), status(t, ram, desc), "completion applied before Complete")

	digest, err := d.Complete()
	require.NoError(t, err)
	require.Len(t, digest, 8)
	require.Equal(t, uint32(abi.DiskOK), status(t, ram, desc))
	got := make([]byte, 4*512)
	require.NoError(t, ram.Read(buf, got))
	require.Equal(t, base[3*512:7*512], got)

	_, err = d.Complete()
	require.ErrorIs(t, err, devices.ErrNoCompletion)
}

// Synchronous (replay) gives the same completions, with the same digests,
// for the same requests on the same base.
func TestDiskSyncMatchesAsync(t *testing.T) {
	basePath, _ := baseImage(t, 32)
	run := func(async bool) [][]byte {
		ram := newRAM(t)
		store, err := devices.OpenDiskStore(basePath, filepath.Join(t.TempDir(), "overlay"))
		require.NoError(t, err)
		defer store.Close()
		var raised atomic.Int32
		var raise func()
		if async {
			raise = func() { raised.Add(1) }
		}
		d := devices.NewDisk(ram, store, raise)
		defer d.Close()
		pattern := bytes.Repeat([]byte("reprise!"), 128)
		require.NoError(t, ram.Write(0x30000, pattern))
		reqs := []struct {
			op, count uint32
			sector    uint64
		}{{abi.DiskWrite, 2, 5}, {abi.DiskRead, 4, 4}, {abi.DiskRead, 1, 40}, {7, 1, 0}}
		var digests [][]byte
		for i, r := range reqs {
			desc := uint64(0x10000 + 64*i)
			buf := uint64(0x30000)
			if r.op == abi.DiskRead {
				buf = 0x40000
			}
			putReq(t, ram, desc, r.op, r.count, r.sector, buf)
			submit(t, d, desc)
			if async {
				want := int32(i + 1)
				require.Eventually(t, func() bool { return raised.Load() >= want }, 5*time.Second, time.Millisecond)
			}
			dg, err := d.Complete()
			require.NoError(t, err)
			digests = append(digests, dg)
		}
		require.Equal(t, uint32(abi.DiskError), status(t, ram, 0x10000+64*3), "op 7 must fail")
		require.Equal(t, uint32(abi.DiskError), status(t, ram, 0x10000+64*2), "sector 40 is past the end")
		got := make([]byte, 512)
		require.NoError(t, ram.Read(0x40000+512, got))
		require.Equal(t, pattern[:512], got, "a read must see an earlier write")
		return digests
	}
	require.Equal(t, run(true), run(false))
}

// Completions that finish while one is pending re-raise the line: edges
// coalesce in the interrupt controller.
func TestDiskReraisesForQueuedCompletions(t *testing.T) {
	ram := newRAM(t)
	store, _, _ := openStore(t, 32)
	var raised atomic.Int32
	d := devices.NewDisk(ram, store, func() { raised.Add(1) })
	defer d.Close()
	for i := 0; i < 3; i++ {
		putReq(t, ram, uint64(0x10000+64*i), abi.DiskRead, 1, uint64(i), 0x40000)
		submit(t, d, uint64(0x10000+64*i))
	}
	require.Eventually(t, func() bool { return raised.Load() == 3 }, 5*time.Second, time.Millisecond)
	for i := 0; i < 3; i++ {
		_, err := d.Complete()
		require.NoError(t, err)
	}
	require.Equal(t, int32(5), raised.Load(), "two completions were still queued after the first and second")
}

// Whatever the guest puts in a descriptor, the device neither panics nor
// touches memory outside RAM.
func TestDiskHostileDescriptors(t *testing.T) {
	ram := newRAM(t)
	store, _, _ := openStore(t, 8)
	d := devices.NewDisk(ram, store, nil)
	defer d.Close()
	submit(t, d, ram.Size()-8) // descriptor runs past the end of RAM
	require.Equal(t, uint64(1), d.Dropped)
	for i, r := range []struct {
		count  uint32
		sector uint64
		buf    uint64
	}{
		{0, 0, 0x40000}, {abi.DiskMaxSectors + 1, 0, 0x40000}, {1, 8, 0x40000},
		{1, ^uint64(0), 0x40000}, {1, 0, ram.Size() - 100}, {2, 0, ^uint64(0) - 10},
	} {
		desc := uint64(0x10000 + 64*i)
		putReq(t, ram, desc, abi.DiskRead, r.count, r.sector, r.buf)
		submit(t, d, desc)
		_, err := d.Complete()
		require.NoError(t, err)
		require.Equal(t, uint32(abi.DiskError), status(t, ram, desc), "request %d", i)
	}
	// Without a disk: capacity 0 and every request fails.
	empty := devices.NewDisk(ram, nil, nil)
	c := make([]byte, 4)
	empty.PortRead(4, c)
	require.Equal(t, []byte{0, 0, 0, 0}, c)
	putReq(t, ram, 0x10000, abi.DiskRead, 1, 0, 0x40000)
	submit(t, empty, 0x10000)
	_, err := empty.Complete()
	require.NoError(t, err)
	require.Equal(t, uint32(abi.DiskError), status(t, ram, 0x10000))
}

func FuzzDiskDescriptor(f *testing.F) {
	f.Add(uint32(1), uint32(1), uint64(0), uint64(0x40000), uint32(0x10000))
	f.Add(uint32(2), uint32(256), uint64(7), uint64(0x7ff000), uint32(0x7fffe0))
	f.Fuzz(func(t *testing.T, op, count uint32, sector, buf uint64, gpa uint32) {
		ram, err := memory.New(8 << 20)
		require.NoError(t, err)
		defer ram.Close()
		p, _ := baseImage(t, 8)
		store, err := devices.OpenDiskStore(p, filepath.Join(t.TempDir(), "overlay"))
		require.NoError(t, err)
		defer store.Close()
		d := devices.NewDisk(ram, store, nil)
		defer d.Close()
		if uint64(gpa)+abi.DiskReqSize <= ram.Size() {
			putReq(t, ram, uint64(gpa), op, count, sector, buf)
		}
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, gpa)
		require.NoError(t, d.PortWrite(0, b))
		if d.Dropped == 0 {
			_, err := d.Complete()
			require.NoError(t, err)
		}
	})
}

// The guest's writes, saved from one store, restore into a fresh store
// over the same base: every sector reads back the same. A bitmap or chunk
// set that does not fit the disk is refused.
func TestDiskOverlaySavesAndRestores(t *testing.T) {
	s, basePath, _ := openStore(t, 100) // not a whole number of chunks
	require.NoError(t, s.WriteSectors(3, bytes.Repeat([]byte{0xA1}, 2*devices.SectorSize)))
	require.NoError(t, s.WriteSectors(64, bytes.Repeat([]byte{0xB2}, devices.SectorSize)))
	require.NoError(t, s.WriteSectors(99, bytes.Repeat([]byte{0xC3}, devices.SectorSize)))
	written, chunks, err := s.SaveOverlay()
	require.NoError(t, err)
	require.Len(t, chunks, 3, "the chunks holding sectors 3-4, 64 and 99")

	fresh := func() *devices.DiskStore {
		r, err := devices.OpenDiskStore(basePath, filepath.Join(t.TempDir(), "overlay"))
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		return r
	}
	r := fresh()
	require.NoError(t, r.RestoreOverlay(written, chunks))
	want, got := make([]byte, 100*devices.SectorSize), make([]byte, 100*devices.SectorSize)
	require.NoError(t, s.ReadSectors(0, want))
	require.NoError(t, r.ReadSectors(0, got))
	require.Equal(t, want, got)
	require.Error(t, r.RestoreOverlay(written, chunks), "over a disk already written")

	require.ErrorContains(t, fresh().RestoreOverlay(written[:1], chunks), "bitmap of 1 words")
	past := append([]uint64(nil), written...)
	past[1] |= 1 << 40 // sector 104
	require.ErrorContains(t, fresh().RestoreOverlay(past, chunks), "past the disk")
	delete(chunks, 8) // sector 64's
	require.ErrorContains(t, fresh().RestoreOverlay(written, chunks), "sector 64")
}
