package tape

import (
	"crypto/sha256"
	"fmt"
	"io"
	"path/filepath"

	"github.com/reprise-vm/reprise/host/userfile"
)

// DescribeDisk identifies a base image for a tape header: its absolute
// path, size and SHA-256, which a replay checks before trusting it.
func DescribeDisk(path string) (*Disk, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("tape: disk base image: %w", err)
	}
	f, _, err := userfile.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("tape: disk base image: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("tape: hashing the disk base image: %w", err)
	}
	d := &Disk{Path: abs, Bytes: uint64(n)}
	copy(d.SHA256[:], h.Sum(nil))
	return d, nil
}
