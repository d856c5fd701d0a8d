package devices

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"

	"github.com/reprise-vm/reprise/host/userfile"
)

// SectorSize is the disk's sector size.
const SectorSize = 512

// DiskStore holds a disk's contents: a base image opened read-only and a
// copy-on-write overlay that takes every write, so the base is never
// modified and every run starting from it starts from the same disk.
type DiskStore struct {
	base    *os.File
	overlay *os.File
	sectors uint64
	written []uint64 // bitmap: sectors whose current contents are in the overlay
}

// OpenDiskStore opens base read-only and creates (or truncates) the
// overlay file at overlayPath. A base whose size is not a multiple of the
// sector size has its tail ignored.
func OpenDiskStore(basePath, overlayPath string) (*DiskStore, error) {
	base, st, err := userfile.Open(basePath)
	if err != nil {
		return nil, fmt.Errorf("disk: base image: %w", err)
	}
	sectors := uint64(st.Size()) / SectorSize
	if sectors == 0 {
		base.Close()
		return nil, fmt.Errorf("disk: base image %s is smaller than one %d-byte sector", basePath, SectorSize)
	}
	overlay, err := os.OpenFile(overlayPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		base.Close()
		return nil, fmt.Errorf("disk: overlay: %w", err)
	}
	return &DiskStore{base: base, overlay: overlay, sectors: sectors, written: make([]uint64, (sectors+63)/64)}, nil
}

// Sectors is the capacity.
func (s *DiskStore) Sectors() uint64 { return s.sectors }

// Close closes both files; the overlay stays on disk.
func (s *DiskStore) Close() error {
	return errors.Join(s.base.Close(), s.overlay.Close())
}

func (s *DiskStore) isWritten(sec uint64) bool { return s.written[sec/64]&(1<<(sec%64)) != 0 }

// writtenSectors counts the sectors whose contents are in the overlay.
func (s *DiskStore) writtenSectors() uint64 {
	var n int
	for _, w := range s.written {
		n += bits.OnesCount64(w)
	}
	return uint64(n)
}

// checkRange rejects a request outside the disk.
func (s *DiskStore) checkRange(sector uint64, n int) error {
	if n%SectorSize != 0 || sector > s.sectors || uint64(n/SectorSize) > s.sectors-sector {
		return fmt.Errorf("disk: %d bytes at sector %d are outside the %d-sector disk", n, sector, s.sectors)
	}
	return nil
}

// ReadSectors fills buf (a multiple of the sector size) from sector on,
// taking each sector from the overlay if it was written, else the base.
func (s *DiskStore) ReadSectors(sector uint64, buf []byte) error {
	if err := s.checkRange(sector, len(buf)); err != nil {
		return err
	}
	for i := 0; i < len(buf); {
		sec := sector + uint64(i/SectorSize)
		src, over := s.base, s.isWritten(sec)
		if over {
			src = s.overlay
		}
		// Extend the run while the source stays the same.
		j := i + SectorSize
		for j < len(buf) && s.isWritten(sector+uint64(j/SectorSize)) == over {
			j += SectorSize
		}
		if _, err := src.ReadAt(buf[i:j], int64(sec*SectorSize)); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("disk: reading sector %d: %w", sec, err)
		}
		i = j
	}
	return nil
}

// WriteSectors writes buf to the overlay from sector on.
func (s *DiskStore) WriteSectors(sector uint64, buf []byte) error {
	if err := s.checkRange(sector, len(buf)); err != nil {
		return err
	}
	if _, err := s.overlay.WriteAt(buf, int64(sector*SectorSize)); err != nil {
		return fmt.Errorf("disk: writing the overlay at sector %d: %w", sector, err)
	}
	for i := uint64(0); i < uint64(len(buf)/SectorSize); i++ {
		sec := sector + i
		s.written[sec/64] |= 1 << (sec % 64)
	}
	return nil
}

// ChunkSize is the piece of the disk a snapshot of the overlay saves
// (SaveOverlay): a 4 KiB page, eight sectors.
const ChunkSize = 4096

// SaveOverlay returns what the guest has written to the disk: the bitmap
// of written sectors and, for each ChunkSize piece holding any, its
// contents (sectors past the disk's end read as zeros).
func (s *DiskStore) SaveOverlay() (written []uint64, chunks map[uint64][]byte, err error) {
	const perChunk = ChunkSize / SectorSize
	chunks = map[uint64][]byte{}
	for w, word := range s.written {
		for word != 0 {
			sec := uint64(w)*64 + uint64(bits.TrailingZeros64(word))
			chunk := sec / perChunk
			word &^= 1 << (sec % 64)
			if _, ok := chunks[chunk]; ok {
				continue
			}
			buf := make([]byte, ChunkSize)
			first := chunk * perChunk
			n := min(perChunk, s.sectors-first)
			if err := s.ReadSectors(first, buf[:n*SectorSize]); err != nil {
				return nil, nil, err
			}
			chunks[chunk] = buf
		}
	}
	return append([]uint64(nil), s.written...), chunks, nil
}

// RestoreOverlay writes back what SaveOverlay returned, into a store whose
// overlay is still empty: the written sectors' contents into the overlay,
// and the bitmap. Both come from a checkpoint file and are checked first:
// the bitmap against the disk's size, every written sector's chunk given.
func (s *DiskStore) RestoreOverlay(written []uint64, chunks map[uint64][]byte) error {
	const perChunk = ChunkSize / SectorSize
	if len(written) != len(s.written) {
		return fmt.Errorf("disk: a bitmap of %d words for a disk of %d sectors (%d words)", len(written), s.sectors, len(s.written))
	}
	if s.writtenSectors() != 0 {
		return errors.New("disk: restoring the overlay of a disk the guest has written")
	}
	if tail := s.sectors % 64; tail != 0 && written[len(written)-1]>>tail != 0 {
		return fmt.Errorf("disk: sectors past the disk's %d marked written", s.sectors)
	}
	for w, word := range written {
		for word != 0 {
			sec := uint64(w)*64 + uint64(bits.TrailingZeros64(word))
			word &^= 1 << (sec % 64)
			data, ok := chunks[sec/perChunk]
			if !ok || len(data) != ChunkSize {
				return fmt.Errorf("disk: sector %d is marked written, and its chunk is missing", sec)
			}
			at := (sec % perChunk) * SectorSize
			if _, err := s.overlay.WriteAt(data[at:at+SectorSize], int64(sec*SectorSize)); err != nil {
				return fmt.Errorf("disk: restoring the overlay at sector %d: %w", sec, err)
			}
		}
	}
	copy(s.written, written)
	return nil
}
