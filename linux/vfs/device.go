package vfs

import (
	"maps"
	"path"
	"slices"
)

// Device is what a device file does on read and write.
type Device interface {
	Read(b []byte) (int, error)
	Write(b []byte) (int, error)
}

// Entropy is where /dev/urandom's bytes come from: the engine's, recorded
// and replayed.
type Entropy interface {
	Entropy(b []byte) error
}

// deviceFile is an open device file. Its offset stays 0 (null_lseek).
type deviceFile struct{ nodeFile }

func (d *deviceFile) Read(_ *OpenFile, b []byte, _ int64) (int, error)  { return d.n.dev.Read(b) }
func (d *deviceFile) Write(_ *OpenFile, b []byte, _ int64) (int, error) { return d.n.dev.Write(b) }
func (*deviceFile) Seek(*OpenFile, int64, uint64) (uint64, error)       { return 0, nil }

// Device files every program sees: what a small, fixed Linux machine
// has, the same on every host.
type devNull struct{}

func (devNull) Read([]byte) (int, error)    { return 0, nil }
func (devNull) Write(b []byte) (int, error) { return len(b), nil }

type devZero struct{}

func (devZero) Read(b []byte) (int, error)  { clear(b); return len(b), nil }
func (devZero) Write(b []byte) (int, error) { return len(b), nil }

// devRandom gives the engine's entropy, at most max bytes a read.
type devRandom struct {
	src Entropy
	max int
}

func (d devRandom) Read(b []byte) (int, error) {
	b = b[:min(len(b), d.max)]
	if err := d.src.Entropy(b); err != nil {
		return 0, err
	}
	return len(b), nil
}
func (devRandom) Write(b []byte) (int, error) { return len(b), nil }

// systemDirs are the kernel's own directories: the program sees what the
// kernel puts there, never the host's.
var systemDirs = []string{"dev", "proc", "sys"}

// AddSystem adds the kernel's directories, the device files (random ones
// read at most maxRandom bytes of src at a time) and the generated files,
// in name order: inode numbers are the order files are added in, and a
// program sees them (stat), so every run numbers them alike.
func (fs *FileSystem) AddSystem(src Entropy, maxRandom int, generated map[string]string) error {
	for _, name := range systemDirs {
		d, err := fs.NewNode(true, 0o555)
		if err != nil {
			return err
		}
		if err := fs.Place(fs.root, name, d); err != nil {
			return err
		}
	}
	random := devRandom{src, maxRandom}
	devices := map[string]Device{"/dev/null": devNull{}, "/dev/zero": devZero{}, "/dev/urandom": random, "/dev/random": random}
	for _, name := range slices.Sorted(maps.Keys(devices)) {
		n, err := fs.Add(name, nil, 0o666)
		if err != nil {
			return err
		}
		n.dev, n.devName = devices[name], path.Base(name)
	}
	for _, name := range slices.Sorted(maps.Keys(generated)) {
		if _, err := fs.Add(name, []byte(generated[name]), 0o444); err != nil {
			return err
		}
	}
	return nil
}
