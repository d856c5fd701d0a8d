package checkpoint_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/memory"
)

var rec = checkpoint.Recording{ImageSHA256: [32]byte{1, 2, 3}, Created: time.Unix(1700000000, 0).UTC(), MemBytes: 64 * checkpoint.PageSize}

// write makes a file of three checkpoints of a 64-page RAM (16 pages of
// zeros) that changes a little between them, and returns its path and
// the RAM of each.
func write(t *testing.T) (string, [][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.ckpt")
	w, err := checkpoint.Create(path, rec)
	require.NoError(t, err)
	ram := make([]byte, rec.MemBytes)
	var rams [][]byte
	var sizes []int64
	for p := 0; p < 48; p++ { // 48 distinct pages, then two change each time
		copy(ram[p*checkpoint.PageSize:], bytes.Repeat([]byte{byte(p), 0x5A, byte(p * 7)}, 100))
	}
	for i := 0; i < 3; i++ {
		ram[(2*i)*checkpoint.PageSize+1000] = byte(0x10 + i)
		ram[(2*i+1)*checkpoint.PageSize+2000] = byte(0x20 + i)
		n, err := w.Add(&checkpoint.Checkpoint{Time: time.Duration(i) * time.Second, Events: uint64(10 * i),
			Pos: vmm.Position{Exit: uint64(100 * i)}, Machine: &vmm.Snapshot{Exits: uint64(100 * i)}, Engine: checkpoint.EngineState{Applied: uint64(10 * i)}}, ram, diskAt(i))
		require.NoError(t, err)
		sizes = append(sizes, n)
		rams = append(rams, bytes.Clone(ram))
	}
	require.NoError(t, w.Close())
	require.Less(t, sizes[1], sizes[0], "a later checkpoint writes only the pages that changed")
	return path, rams
}

// diskAt is the disk's writes at checkpoint i of write: none at the first,
// then a chunk that changes and one that does not.
func diskAt(i int) *checkpoint.Disk {
	if i == 0 {
		return nil
	}
	return &checkpoint.Disk{Written: []uint64{0xFF << i, 0, 1}, Chunks: map[uint64][]byte{
		0:   bytes.Repeat([]byte{byte(i), 0xD1}, checkpoint.PageSize/2),
		130: bytes.Repeat([]byte{0xD2}, checkpoint.PageSize),
	}}
}

// flat is RAM as a plain slice, populated whole.
type flat []byte

func (f flat) Size() uint64                        { return uint64(len(f)) }
func (f flat) Reached() uint64                     { return uint64(len(f)) }
func (f flat) Slice(gpa, n uint64) ([]byte, error) { return f[gpa : gpa+n], nil }

// Each checkpoint loads back with its RAM, its disk's writes and its
// state.
func TestRoundTrip(t *testing.T) {
	path, rams := write(t)
	f, err := checkpoint.Open(path, rec)
	require.NoError(t, err)
	defer f.Close()
	require.Len(t, f.Checkpoints(), 3)
	for i, want := range rams {
		ram := bytes.Repeat([]byte{0xFF}, len(want)) // Load must clear zero pages too
		c, disk, err := f.Load(i, flat(ram))
		require.NoError(t, err)
		require.Equal(t, want, ram, "checkpoint %d's RAM", i)
		require.Equal(t, diskAt(i), disk, "checkpoint %d's disk", i)
		require.Equal(t, uint64(100*i), c.Machine.Exits)
		require.Equal(t, uint64(10*i), f.Checkpoints()[i].Events)
	}
	_, _, err = f.Load(3, flat(make([]byte, rec.MemBytes)))
	require.Error(t, err)
}

// A file read while its writer adds to it (a debugging session's own)
// lists what was added after a Refresh, and loads it; the pages the new
// checkpoint shares with earlier ones are not written again.
func TestRefreshSeesWhatTheWriterAdded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.ckpt")
	w, err := checkpoint.Create(path, rec)
	require.NoError(t, err)
	defer w.Close()
	f, err := checkpoint.Open(path, rec)
	require.NoError(t, err)
	defer f.Close()
	require.Empty(t, f.Checkpoints())
	ram := make([]byte, rec.MemBytes)
	var rams [][]byte
	for i := range 2 {
		for p := range 32 {
			ram[p*checkpoint.PageSize] = byte(p + 1)
		}
		ram[5*checkpoint.PageSize+9] = byte(i + 1)
		_, err := w.Add(&checkpoint.Checkpoint{Events: uint64(i), Pos: vmm.Position{Exit: uint64(7 * i)}, Machine: &vmm.Snapshot{}}, ram, nil)
		require.NoError(t, err)
		rams = append(rams, bytes.Clone(ram))
		require.NoError(t, f.Refresh())
		require.Len(t, f.Checkpoints(), i+1)
		require.NoError(t, f.Refresh(), "nothing new")
		require.Len(t, f.Checkpoints(), i+1)
	}
	sums := f.Checkpoints()
	require.Equal(t, uint64(7), sums[1].Pos.Exit)
	require.Less(t, sums[1].Bytes, sums[0].Bytes, "the second writes one new page, not 32")
	for i, want := range rams {
		got := make([]byte, rec.MemBytes)
		_, _, err := f.Load(i, flat(got))
		require.NoError(t, err)
		require.Equal(t, want, got, "checkpoint %d", i)
	}
}

// A file of another recording is refused; a damaged file is never used:
// damage in its magic line or HEAD frame is refused with its offset;
// damage after it, whatever byte was hit, and a cut, end the file there —
// Damage names it with its offset, and the checkpoints before it load.
func TestDamageIsRefused(t *testing.T) {
	path, rams := write(t)
	other := rec
	other.Created = other.Created.Add(time.Second)
	_, err := checkpoint.Open(path, other)
	require.ErrorContains(t, err, "another recording")

	good, err := os.ReadFile(path)
	require.NoError(t, err)
	damaged := func(what string, bad []byte) {
		p := filepath.Join(t.TempDir(), "bad.ckpt")
		require.NoError(t, os.WriteFile(p, bad, 0o644))
		f, err := checkpoint.Open(p, rec)
		var ce *checkpoint.CorruptError
		if err != nil {
			require.True(t, errors.As(err, &ce), "%s: %v", what, err)
			return
		}
		defer f.Close()
		require.True(t, errors.As(f.Damage(), &ce), "%s: %v", what, f.Damage())
		require.Less(t, len(f.Checkpoints()), len(rams), what)
		for i := range f.Checkpoints() {
			ram := make([]byte, len(rams[i]))
			_, _, err := f.Load(i, flat(ram))
			require.NoError(t, err, "%s: checkpoint %d", what, i)
			require.Equal(t, rams[i], ram, "%s: checkpoint %d", what, i)
		}
	}
	for _, at := range []int{0, 25, 40, len(good) / 3, len(good) / 2, len(good) - 5} {
		bad := bytes.Clone(good)
		bad[at] ^= 0x55
		damaged(fmt.Sprintf("byte %d", at), bad)
	}
	for _, n := range []int{10, len(good) / 2, len(good) - 1} {
		damaged(fmt.Sprintf("cut at %d", n), good[:n])
	}
}

// A checkpoint's size is never a reason to lose a recording: 72 MiB of
// new pages zstd cannot compress (which it stores a little larger) go in
// frames a file holds, and a machine state too large for a checkpoint is
// skipped with a SkipError, the writer left usable for the next one.
func TestLargeCheckpoints(t *testing.T) {
	big := checkpoint.Recording{ImageSHA256: rec.ImageSHA256, Created: rec.Created, MemBytes: 72 << 20}
	path := filepath.Join(t.TempDir(), "big.ckpt")
	w, err := checkpoint.Create(path, big)
	require.NoError(t, err)
	ram := make([]byte, big.MemBytes)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(ram); i += 8 {
		binary.LittleEndian.PutUint64(ram[i:], r.Uint64())
	}
	cp := func(i int, kernel []byte) *checkpoint.Checkpoint {
		return &checkpoint.Checkpoint{Time: time.Duration(i) * time.Second, Events: uint64(i), Pos: vmm.Position{Exit: uint64(i)},
			Machine: &vmm.Snapshot{Exits: uint64(i), Kernel: kernel}, Engine: checkpoint.EngineState{Applied: uint64(i)}}
	}
	_, err = w.Add(cp(1, nil), ram, nil)
	require.NoError(t, err, "72 MiB of new pages")

	state := make([]byte, 70<<20) // base64 in the JSON: ~93 MiB that compress to more than a frame
	for i := 0; i+8 <= len(state); i += 8 {
		binary.LittleEndian.PutUint64(state[i:], r.Uint64())
	}
	_, err = w.Add(cp(2, state), ram, nil)
	var skip *checkpoint.SkipError
	require.True(t, errors.As(err, &skip), "%v", err)
	_, err = w.Add(cp(3, nil), ram, nil)
	require.NoError(t, err, "the checkpoint after a skipped one")
	require.NoError(t, w.Close())

	f, err := checkpoint.Open(path, big)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Damage())
	require.Len(t, f.Checkpoints(), 2)
	got := make([]byte, big.MemBytes)
	for i := range 2 {
		_, _, err := f.Load(i, flat(got))
		require.NoError(t, err)
		require.True(t, bytes.Equal(ram, got), "checkpoint %d's RAM", i)
	}
}

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// appendFrame appends a frame, its checksum right, to the file at path.
func appendFrame(t *testing.T, path, tag string, body []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	h := append([]byte(tag), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...)
	h = binary.LittleEndian.AppendUint32(h, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	_, err = f.Write(append(h, body...))
	require.NoError(t, err)
}

// Opening a file costs its frames' headers and checksums, not what its
// checkpoints hold: forged frames of a few KiB that decompress to 32 MiB
// each (at 127 MiB, 40 of them took 888 MB and 51 s to open) are not
// decompressed; one that declares more than a checkpoint holds is
// refused before it is decompressed; and a checkpoint with 80 000 disk
// chunks is indexed and read in linear time (quadratic, it took 14.7 s).
func TestIndexCostIsBounded(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	path := filepath.Join(t.TempDir(), "forged.ckpt")
	w, err := checkpoint.Create(path, rec)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	pages := strings.TrimSuffix(strings.Repeat("0,", int(rec.MemBytes/checkpoint.PageSize)), ",")
	meta := []byte(`{"Time":0,"Events":0,"Pos":{"Exit":0,"Branch":0},"Stop":0,"Machine":{"Kernel":"` +
		strings.Repeat("A", 32<<20) + `"},"Pages":[` + pages + `]}`)
	body := enc.EncodeAll(meta, nil)
	require.Less(t, len(body), 64<<10)
	const frames = 8
	for range frames {
		appendFrame(t, path, "CKPT", body)
	}
	// A zstd frame that declares 129 MiB and holds nothing: magic, a
	// single-segment header with an 8-byte size, an empty last raw block.
	huge := binary.LittleEndian.AppendUint64([]byte{0x28, 0xB5, 0x2F, 0xFD, 0xE0}, 129<<20)
	appendFrame(t, path, "CKPT", append(huge, 1, 0, 0))
	n := allocated(func() {
		f, err := checkpoint.Open(path, rec)
		require.NoError(t, err)
		require.Len(t, f.Checkpoints(), frames)
		require.ErrorContains(t, f.Damage(), "decompresses to 135266304 bytes (at most")
		require.NoError(t, f.Close())
	})
	require.Less(t, n, uint64(len(meta)), "bytes allocated to open %d frames of %d bytes", frames, len(meta))

	// 80 000 disk chunks (one page's contents: the file holds it once).
	chunks := filepath.Join(t.TempDir(), "chunks.ckpt")
	w, err = checkpoint.Create(chunks, rec)
	require.NoError(t, err)
	disk := &checkpoint.Disk{Written: []uint64{1}, Chunks: map[uint64][]byte{}}
	page := bytes.Repeat([]byte{7}, checkpoint.PageSize)
	for i := range uint64(80_000) {
		disk.Chunks[i] = page
	}
	_, err = w.Add(&checkpoint.Checkpoint{Machine: &vmm.Snapshot{}}, make([]byte, rec.MemBytes), disk)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	n = allocated(func() {
		f, err := checkpoint.Open(chunks, rec)
		require.NoError(t, err)
		require.NoError(t, f.Damage())
		_, err = f.Meta(0)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	})
	require.Less(t, n, uint64(64<<20), "bytes allocated to index and read 80 000 chunks")
}

// A machine's RAM is captured up to where it is populated and restored
// only where the checkpoint has data or the machine has populated RAM: a
// fresh 64 MiB machine given a checkpoint of a program that used a page
// at 1 MiB and one at 37 MiB is populated to 38 MiB, and holds exactly
// the captured RAM; one populated beyond has its zero pages cleared.
func TestLazyRAM(t *testing.T) {
	const mem = 64 << 20
	lazy := checkpoint.Recording{ImageSHA256: rec.ImageSHA256, Created: rec.Created, MemBytes: mem}
	src, err := memory.New(mem)
	require.NoError(t, err)
	defer src.Close()
	require.NoError(t, src.Write(1<<20, []byte("low")))
	require.NoError(t, src.Write(37<<20+5, []byte("high")))
	require.Equal(t, uint64(38<<20), src.Reached())

	path := filepath.Join(t.TempDir(), "lazy.ckpt")
	w, err := checkpoint.Create(path, lazy)
	require.NoError(t, err)
	_, err = w.Add(&checkpoint.Checkpoint{Machine: &vmm.Snapshot{}}, src.Populated(), nil)
	require.NoError(t, err)
	_, err = w.Add(&checkpoint.Checkpoint{Machine: &vmm.Snapshot{}}, make([]byte, mem+checkpoint.PageSize), nil)
	require.ErrorContains(t, err, "not whole pages of the recording's")
	require.NoError(t, w.Close())

	f, err := checkpoint.Open(path, lazy)
	require.NoError(t, err)
	defer f.Close()
	fresh, err := memory.New(mem)
	require.NoError(t, err)
	defer fresh.Close()
	_, _, err = f.Load(0, fresh)
	require.NoError(t, err)
	require.Equal(t, uint64(38<<20), fresh.Reached(), "populated up to the checkpoint's last data")
	require.True(t, bytes.Equal(src.Mapping(), fresh.Mapping()))

	used, err := memory.New(mem)
	require.NoError(t, err)
	defer used.Close()
	require.NoError(t, used.Write(50<<20, []byte("stale")))
	_, _, err = f.Load(0, used)
	require.NoError(t, err)
	require.True(t, bytes.Equal(src.Mapping(), used.Mapping()), "a page the checkpoint has as zero is cleared")
}
