package tape

import (
	"errors"
	"fmt"
	"io"
)

// Pack copies the tape r reads into w with its Linux program's files
// inside (File.Data), as rr pack does: read gives a file's contents, which
// must still be the recorded ones. Events and host frames are copied as
// they are; damage in r stops the copy with its error.
func Pack(r *Reader, w io.Writer, read func(f *File) ([]byte, error)) error {
	h := *r.Header()
	if h.Linux == nil {
		return errors.New("tape: only a Linux program's tape has files to pack")
	}
	l := *h.Linux
	l.Files = append([]File(nil), l.Files...)
	for i := range l.Files {
		f := &l.Files[i]
		if f.Data != nil {
			continue
		}
		data, err := read(f)
		if err != nil {
			return fmt.Errorf("tape: packing %s: %w", f.Guest, err)
		}
		f.Data = data
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
