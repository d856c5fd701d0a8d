package tape

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Pack copies the tape r reads into w with its Linux program's files
// inside (File.Data), as rr pack does. open opens a file's host copy (f.Host)
// and stats it; each must still be the recorded file. Nothing is read
// unless all the files fit in a tape together (MaxPackedBytes), and then
// one file at a time: its size is checked before it is read, no byte past
// it is read, and its hash is checked before the next is opened; a
// content named twice is read once. (A forged tape naming a 31 MB file 200
// times had every copy read, 6 GB, before any was checked.) A file's mode
// is kept from the tape, or taken from the host copy for a tape from
// before modes were kept (a content named twice: the first's). Events and host frames are copied as they are;
// damage in r stops the copy with its error.
func Pack(r *Reader, w io.Writer, open func(f *File) (io.ReadCloser, fs.FileInfo, error)) error {
	h := *r.Header()
	if h.Linux == nil {
		return errors.New("tape: only a Linux program's tape has files to pack")
	}
	l := *h.Linux
	l.Files = append([]File(nil), l.Files...)
	var total int64
	for _, f := range l.Files {
		if f.Size > MaxPackedBytes-total {
			return fmt.Errorf("tape: packing: the files take more than the %d bytes a tape holds", MaxPackedBytes)
		}
		total += f.Size
	}
	type content struct {
		data []byte
		mode uint32
	}
	held := map[[32]byte]content{} // the files read, by hash
	for i := range l.Files {
		f := &l.Files[i]
		if f.Data != nil {
			continue // packed already
		}
		if c, ok := held[f.SHA256]; ok && int64(len(c.data)) == f.Size {
			f.Data = c.data
			if f.Mode == 0 {
				f.Mode = c.mode
			}
			continue
		}
		if err := packFile(f, open); err != nil {
			return fmt.Errorf("tape: packing %s: %w", f.Guest, err)
		}
		held[f.SHA256] = content{f.Data, f.Mode}
	}
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
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
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

// packFile reads f's host copy into f.Data if it is the recorded file,
// and fills in a mode the tape lacks (as linux gives a host file: 0o755
// if its owner may execute it, else 0o644).
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
	if f.Mode == 0 {
		f.Mode = 0o644
		if st.Mode()&0o111 != 0 {
			f.Mode = 0o755
		}
	}
	return nil
}
