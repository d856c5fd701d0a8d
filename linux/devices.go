package linux

import (
	"maps"
	"slices"

	"golang.org/x/sys/unix"
)

// Device files and generated files every program sees: what a small,
// fixed Linux machine has, the same on every host.
type devNull struct{}

func (devNull) read(*Kernel, []byte) (int, error) { return 0, nil }
func (devNull) write(b []byte) (int, error)       { return len(b), nil }

type devZero struct{}

func (devZero) read(_ *Kernel, b []byte) (int, error) { clear(b); return len(b), nil }
func (devZero) write(b []byte) (int, error)           { return len(b), nil }

// devRandom gives the engine's entropy: recorded, replayed.
type devRandom struct{}

func (devRandom) read(k *Kernel, b []byte) (int, error) {
	b = b[:min(len(b), maxRandom)]
	if err := k.m.Entropy(b); err != nil {
		return 0, err
	}
	return len(b), nil
}
func (devRandom) write(b []byte) (int, error) { return len(b), nil }

// systemFiles are generated files: one CPU online, the program's user.
var systemFiles = map[string]string{
	"/sys/devices/system/cpu/online":   "0\n",
	"/sys/devices/system/cpu/possible": "0\n",
	"/etc/passwd":                      "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/:/bin/sh\n",
	"/etc/group":                       "root:x:0:\nuser:x:1000:\n",
	"/etc/hostname":                    utsname[1] + "\n",
}

// addSystem adds the device and generated files, in name order: inode
// numbers are the order files are added in, and a program sees them
// (stat), so every run numbers them alike.
func (fs *fileSystem) addSystem() error {
	devices := map[string]device{"/dev/null": devNull{}, "/dev/zero": devZero{}, "/dev/urandom": devRandom{}, "/dev/random": devRandom{}}
	for _, name := range slices.Sorted(maps.Keys(devices)) {
		n, err := fs.add(name, nil, 0o666)
		if err != nil {
			return err
		}
		n.dev = devices[name]
	}
	for _, name := range slices.Sorted(maps.Keys(systemFiles)) {
		if _, err := fs.lookup(name); err == nil {
			continue // the user gave one
		} else if err != unix.ENOENT {
			return err
		}
		if _, err := fs.add(name, []byte(systemFiles[name]), 0o644); err != nil {
			return err
		}
	}
	_, err := fs.mkdirAll("/tmp")
	return err
}
