package replayer

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/tape"
)

// Recording is a tape opened once for everything a command does with it:
// the host files it names reported, its checkpoints opened, probes
// resolved against its image or its program's files, the replay itself —
// each a step that once opened the tape by its path again, and read its
// header and embedded image (up to 256 MiB) again each time. Its image
// and a Linux program's files are parsed at most once, and the host files
// the tape names are read and hashed once, into a kernel that never runs:
// every replay of the Recording (a split replay's segments) runs a fresh
// copy of it, whose files share its contents until written.
type Recording struct {
	Path   string
	Header *tape.Header
	tape   *tape.Reader // its header read; the replays' events come from Events

	mu     sync.Mutex // a split replay's segments start at once
	image  *elffile.Image
	kernel *linux.Kernel // never run: replays run fresh copies of it
	files  []parsedFile  // a Linux program's ELF files, once parsed
	parsed bool
}

// parsedFile is one ELF file of a Linux program and the contents it was
// parsed from.
type parsedFile struct {
	file *elffile.File
	data []byte
}

// OpenRecording opens the tape at path and reads its header.
func OpenRecording(path string) (*Recording, error) {
	r, err := tape.Open(path)
	if err != nil {
		return nil, err
	}
	return &Recording{Path: path, Header: r.Header(), tape: r}, nil
}

// Close closes the tape: the replays that read it must have ended.
func (r *Recording) Close() error { return r.tape.Close() }

// events reads the tape's events from the first, for one replay.
func (r *Recording) events() (*tape.Reader, error) { return r.tape.Events() }

// Image is the guest image the tape embeds, checked against the recorded
// hash (probe specs are resolved against it).
func (r *Recording) Image() (*elffile.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.image != nil {
		return r.image, nil
	}
	h := r.Header
	img, err := elffile.ParseImage(r.Path+":"+h.Image.Name, h.Image.Bytes)
	if err != nil {
		return nil, fmt.Errorf("replayer: the image embedded in %s: %w", r.Path, err)
	}
	if img.SHA256 != h.Image.SHA256 {
		return nil, fmt.Errorf("replayer: the image embedded in %s does not match its recorded SHA-256", r.Path)
	}
	r.image = img
	return img, nil
}

// Objects are the ELF files of the Linux program the tape recorded: its
// executable and the files it was given that are ELF files (its loader
// and libraries), what probes are checked against before a replay. A kit
// tape has none.
func (r *Recording) Objects() ([]*elffile.File, error) {
	if r.Header.Linux == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.parseLocked(); err != nil {
		return nil, err
	}
	objs := make([]*elffile.File, len(r.files))
	for i, p := range r.files {
		objs[i] = p.file
	}
	return objs, nil
}

// parseLocked parses the program's ELF files, once: the executable the
// tape embeds and the files of its kernel.
func (r *Recording) parseLocked() error {
	if r.parsed {
		return nil
	}
	h := r.Header
	if err := r.kernelLocked(); err != nil {
		return err
	}
	exe, err := elffile.Parse(h.Linux.Path, h.Image.Bytes)
	if err != nil {
		return fmt.Errorf("replayer: %w", err)
	}
	r.files = []parsedFile{{exe, h.Image.Bytes}}
	read, err := r.FilesRead()
	if err != nil {
		return err
	}
	for _, f := range read {
		data, ok := h.Linux.Packed(f.Host, f.Size, f.SHA256)
		if !ok {
			if !linux.IsELF(f.Host) {
				continue
			}
			if data, err = linux.ReadRecorded(&f); err != nil {
				return fmt.Errorf("replayer: %w", err)
			}
		}
		if len(data) < 4 || string(data[:4]) != "\x7fELF" {
			continue
		}
		if o, err := elffile.Parse(f.Host, data); err == nil {
			r.files = append(r.files, parsedFile{o, data})
		}
	}
	r.parsed = true
	return nil
}

// FilesRead are the host files the program read when recorded (the file
// events of the tape), each once, by path, size and SHA-256: among them
// are its loader and libraries, whatever loaded them.
func (r *Recording) FilesRead() ([]tape.File, error) {
	events, err := r.events()
	if err != nil {
		return nil, err
	}
	defer events.Close()
	var out []tape.File
	err = tape.EachFileRead(events, func(_ int, f tape.File) error {
		out = append(out, f)
		return nil
	})
	return out, err
}

// parsedAs is the file at path parsed already, if it was parsed from
// data: a program's files are parsed once, when probes are checked
// against them, not again when the replay maps them.
func (r *Recording) parsedAs(path string, data []byte) *elffile.File {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.files {
		if p.file.Path == path && bytes.Equal(p.data, data) {
			return p.file
		}
	}
	return nil
}

// kernelLocked builds the program's kernel, once: its host files read
// and checked against their recorded hashes.
func (r *Recording) kernelLocked() error {
	if r.kernel != nil {
		return nil
	}
	k, err := linuxKernel(r.Path, r.Header)
	if err != nil {
		return err
	}
	r.kernel = k
	return nil
}

// takeKernel is the Linux personality for a replay of the program: a
// fresh copy of the Recording's kernel (a kernel runs once).
func (r *Recording) takeKernel() (*linux.Kernel, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.kernelLocked(); err != nil {
		return nil, err
	}
	k, err := r.kernel.Fresh()
	if err != nil {
		return nil, fmt.Errorf("replayer: %s: %w", r.Path, err)
	}
	return k, nil
}
