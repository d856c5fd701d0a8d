package recorder

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/reprise-vm/reprise/host/userfile"
	"github.com/reprise-vm/reprise/tape"
)

// Pack writes a copy of the tape at in to out (which must not exist) with
// the files its Linux program read inside (tape.Pack), each read from the
// host again and checked against what the run read. It returns how many
// files the packed tape holds.
func Pack(in, out string) (int, error) {
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	err = tape.Pack(func() (*tape.Reader, error) { return tape.Open(in) }, f, func(file *tape.File) (io.ReadCloser, fs.FileInfo, error) {
		return userfile.Open(file.Host)
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return 0, err
	}
	return filesRead(in)
}

// filesRead counts the files the program of the tape at path read (its
// file events), each content once, and those its header packs already:
// what Pack packs. Opening the packed tape to count them would read them
// all into memory again.
func filesRead(path string) (int, error) {
	r, err := tape.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	l := r.Header().Linux
	n := len(l.Files)
	err = tape.EachFileRead(r, func(_ int, f tape.File) error {
		if _, packed := l.Packed(f.Host, f.Size, f.SHA256); !packed {
			n++
		}
		return nil
	})
	return n, err
}

// PackInPlace packs the tape at path (Pack): a packed copy is written
// beside it and renamed over it, so the tape is never half packed.
func PackInPlace(path string) error {
	tmp := path + ".packing"
	if _, err := Pack(path, tmp); err != nil {
		return fmt.Errorf("recorder: packing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("recorder: packing %s: %w", path, err)
	}
	return nil
}
