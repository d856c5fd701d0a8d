package tape

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
)

// Pack copies a Linux program's tape into w with the files its run read
// inside (File.Data), as rr pack does, so that it replays where they are
// not. It reads the tape twice, each time through a Reader open returns
// (Pack closes it): the first pass collects the files — each read the
// host answered (a KindFile event, Op FileRead, no Errno) names one by
// path, size and SHA-256, in the order they were first read — and the
// second writes the new header and copies the events and host frames as
// they are. Files the tape packs already are kept. openHost opens a
// file's host copy (f.Host) and stats it; each must still be the file the
// run read.
//
// Nothing is read unless all the files fit in a tape together (MaxFiles,
// MaxPackedBytes), and then one file at a time: its size is checked
// before it is read, no byte past it is read, and its hash is checked
// before the next is opened; a content named twice is read once. (A
// forged tape naming a 31 MB file 200 times had every copy read, 6 GB,
// before any was checked.) Damage in either pass stops the copy with its
// error.
func Pack(open func() (*Reader, error), w io.Writer, openHost func(f *File) (io.ReadCloser, fs.FileInfo, error)) error {
	r, err := open()
	if err != nil {
		return err
	}
	h := *r.Header()
	files, listed, err := filesRead(r)
	r.Close()
	if err != nil {
		return err
	}
	held := map[[32]byte][]byte{} // the contents at hand, by hash
	for _, f := range files {
		if f.Data != nil {
			held[f.SHA256] = f.Data
		}
	}
	for i := range files {
		f := &files[i]
		if f.Data != nil {
			continue // packed already
		}
		if data, ok := held[f.SHA256]; ok && int64(len(data)) == f.Size {
			f.Data = data
			continue
		}
		if err := packFile(f, openHost); err != nil {
			return fmt.Errorf("tape: packing %s: %w", f.Host, err)
		}
		held[f.SHA256] = f.Data
	}

	r, err = open()
	if err != nil {
		return err
	}
	defer r.Close()
	if again := r.Header(); !again.Created.Equal(h.Created) || again.Image.SHA256 != h.Image.SHA256 ||
		again.Linux == nil || again.Linux.Random != h.Linux.Random {
		return errors.New("tape: packing: the tape read the second time is not the one read the first")
	}
	l := *h.Linux
	l.Files = files
	h.Linux = &l
	out, err := NewWriter(w, &h)
	if err != nil {
		return err
	}
	var hostErr error
	r.OnHost(func(count uint32, body []byte) error {
		hostErr = errors.Join(hostErr, out.AppendHost(count, body))
		return nil
	})
	for i := 0; ; i++ {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		// A read the first pass did not see would replay without its
		// file: the tape changed in between.
		if k, ok := readKey(e); ok && !listed[k] {
			return fmt.Errorf("tape: packing: event %d reads %s, which the first reading of the tape did not", i, e.Fact.Path)
		}
		if err := out.Append(e); err != nil {
			return err
		}
	}
	if hostErr != nil {
		return hostErr
	}
	return out.Close()
}

// fileKey names a file by content: where it is, its size and hash.
type fileKey struct {
	host string
	size int64
	sum  [32]byte
}

// readKey names the file e read, if e is a read the host answered.
func readKey(e *Event) (fileKey, bool) {
	f := e.Fact
	if e.Kind != KindFile || f.Op != FileRead || f.Errno != 0 {
		return fileKey{}, false
	}
	return fileKey{f.Path, f.Size, f.SHA256}, true
}

// EachFileRead reads r's remaining events and calls fn with each file
// the program read (a file event: a read the host answered), once each,
// in the order it was first read, with the index of the event that read
// it; an error from fn or from the tape stops it.
func EachFileRead(r *Reader, fn func(event int, f File) error) error {
	seen := map[fileKey]bool{}
	for i := 0; ; i++ {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		k, ok := readKey(e)
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		if err := fn(i, File{Host: k.host, Size: k.size, SHA256: k.sum}); err != nil {
			return err
		}
	}
}

// filesRead reads r's events and returns the files to pack: those the
// tape packs already, then each file the run read, once, in the order it
// was first read; and the set of them all. It fails as soon as they
// cannot fit a tape, before any is read.
func filesRead(r *Reader) ([]File, map[fileKey]bool, error) {
	h := r.Header()
	switch {
	case h.Linux == nil:
		return nil, nil, errors.New("tape: only a Linux program's tape has files to pack")
	case h.Version < 5:
		return nil, nil, fmt.Errorf("tape: packing: a version %d tape names the files its program saw in its header, not as it read them; record the program again", h.Version)
	case h.Version != FormatVersion:
		// The copy is written in this format, which would read an older
		// tape's hashes and digests as meaning something else
		// (HashesRAMPages, DigestsExitRegs).
		return nil, nil, fmt.Errorf("tape: packing a format version %d tape: packing writes version %d, in which its RAM hash and register digests would mean something else; pack it with the reprise that recorded it", h.Version, FormatVersion)
	}
	files := slices.Clone(h.Linux.Files)
	listed := make(map[fileKey]bool, len(files))
	var total int64
	for _, f := range files {
		listed[fileKey{f.Host, f.Size, f.SHA256}] = true
		total += f.Size // the header's: within MaxPackedBytes together
	}
	err := EachFileRead(r, func(i int, f File) error {
		k := fileKey{f.Host, f.Size, f.SHA256}
		if listed[k] {
			return nil
		}
		switch {
		case len(files) == MaxFiles:
			return fmt.Errorf("tape: packing: the run read more than the %d files a tape holds (event %d reads %s)", MaxFiles, i, k.host)
		case k.size > MaxPackedBytes-total:
			return fmt.Errorf("tape: packing: the files take more than the %d bytes a tape holds (event %d reads %s, %d bytes)", MaxPackedBytes, i, k.host, k.size)
		}
		total += k.size
		listed[k] = true
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return files, listed, nil
}

// packFile reads f's host copy into f.Data if it is the file the run read.
func packFile(f *File, open func(f *File) (io.ReadCloser, fs.FileInfo, error)) error {
	rc, st, err := open(f)
	if err != nil {
		return err
	}
	defer rc.Close()
	if st.Size() != f.Size {
		return fmt.Errorf("%s is %d bytes, not the %d recorded", f.Host, st.Size(), f.Size)
	}
	data := make([]byte, f.Size)
	if _, err := io.ReadFull(rc, data); err != nil {
		return fmt.Errorf("%s: %w", f.Host, err)
	}
	if n, _ := rc.Read(make([]byte, 1)); n != 0 {
		return fmt.Errorf("%s grew while it was read", f.Host)
	}
	if sha256.Sum256(data) != f.SHA256 {
		return fmt.Errorf("%s is not the file recorded (%d bytes of other contents; recorded sha256 %x…)", f.Host, f.Size, f.SHA256[:6])
	}
	f.Data = data
	return nil
}
