package tape

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"time"

	"github.com/reprise-vm/reprise/abi"
)

// FormatVersion is the tape format this package writes. The reader accepts
// it and every older version; a newer tape is reported as corrupt.
//
//	1  the first format
//	2  adds the network frame kinds (KindNetRX, KindNetTX), whose Data
//	   length is a uvarint
//	3  adds host frames ("HOST"): the recording host's trace of the VM
//	4  adds Linux programs (header "linux"): the image is a Linux
//	   executable run by the Linux personality
//	5  adds file observations (KindFile): a Linux program sees the host's
//	   files lazily, each look a logged input; the header's "linux" gains
//	   root and mounts, and its files are only those packed in the tape
//	   (host path, size, hash), each followed by its FILE frame
//	6  the header's "linux" gains the user the program ran as (uid,
//	   gid); a tape before ran it as LegacyID
//	7  a listing (FileList) gains the order the host listed its entries
//	   in (FileFact.Order); before, name order; the header's "linux.user"
//	   gains the user's supplementary groups
//	8  an event's register digest at a stop where a checkpoint settled
//	   the vCPU is of the registers as the exit left them
//	   (vmm.Machine.EventDigest); before, of the settled ones
//	9  the end's RAM hash (and a checkpoint file's) is of RAM's nonzero
//	   pages with their addresses, then RAM's size (memory.HashPages);
//	   before, of every byte of RAM
const FormatVersion = 9

// DigestsExitRegs reports whether a tape of version v sums an event's
// registers as the exit left them (vmm.Machine.EventDigest).
func DigestsExitRegs(v int) bool { return v >= 8 }

// HashesRAMPages reports whether a tape of version v hashes RAM by its
// nonzero pages (memory.HashPages) rather than every byte.
func HashesRAMPages(v int) bool { return v >= 9 }

// PositionSource names how asynchronous events are positioned
// (docs/architecture.md, "Position sources").
type PositionSource string

const (
	SourceSWBC     PositionSource = "swbc"      // software branch counter in the guest
	SourceExitSync PositionSource = "exit-sync" // only at guest-initiated exits
	SourcePMU      PositionSource = "pmu"       // retired conditional branches + RIP, RCX
)

func (s PositionSource) known() bool {
	return s == SourceSWBC || s == SourceExitSync || s == SourcePMU
}

// MaxGroups is the most supplementary groups a program runs with:
// Linux's NGROUPS_MAX.
const MaxGroups = 65536

// MaxCPUIDEntries is the most CPUID entries a tape holds: KVM's own limit
// (KVM_MAX_CPUID_ENTRIES).
const MaxCPUIDEntries = 256

// CPUIDEntry is one entry of the fixed CPUID table the guest sees.
type CPUIDEntry struct {
	Function, Index, Flags, EAX, EBX, ECX, EDX uint32
}

// Image is the guest ELF, embedded so that a tape replays on its own.
type Image struct {
	Name   string
	SHA256 [32]byte
	Bytes  []byte
}

// Header describes the recorded machine.
//
// A zero MemBytes or TimerHz means the VMM's default (recorders before
// format 3 wrote the flags as given); a negative TimerHz means no timer.
// Created is stored with nanosecond precision and read back in UTC,
// without a monotonic clock reading. Nil and empty Devices and Notes are
// kept apart; CPUID is never empty.
type Header struct {
	Version        int // written by the writer (FormatVersion, whatever is here), checked by the reader
	Created        time.Time
	PositionSource PositionSource
	MemBytes       uint64
	TimerHz        int
	Cmdline        string
	CPUID          []CPUIDEntry
	Image          Image             // SHA256 is computed by the writer if zero, and checked against Bytes
	Devices        map[string]string // device config, e.g. "serial": "16550@0x3f8"
	Host           string            // e.g. hostname and kernel release
	Reprise        string            // recorder version
	Notes          []string          // e.g. what the recorder could not capture
	Disk           *Disk             // the disk's base image, nil without a disk
	Linux          *Linux            // a Linux program (Image is its executable); nil for a kit image
}

// maxHostCPUs is CPU_SETSIZE.
const maxHostCPUs = 1024

// Linux says how a recorded Linux program was started (package linux);
// its executable is the header's Image.
type Linux struct {
	Path   string   // the executable's path in the guest
	Argv   []string // at most abi.LinuxMaxArgs, with Env at most abi.LinuxMaxArgBytes
	Env    []string
	Random [16]byte  // AT_RANDOM
	Epoch  time.Time // the program's wall clock at its start
	// HostCPU is the host CPU the vCPU was pinned to: where CPUID runs
	// natively in user mode (PVM), its answers name it.
	HostCPU int
	// Root is the host directory the program saw as its root ("/" by
	// default): absolute. What it found there is in the tape's file
	// events (KindFile), not here. "" in a tape before version 5.
	Root string
	// Mounts are the host files and directories the user placed at guest
	// paths (--file HOST:GUEST), at most MaxMounts, no guest path twice
	// ("/a" and "/a/" are one). Empty reads back as nil, as Files does.
	Mounts []Mount
	// Files are the host files whose contents are packed in the tape
	// (Data), so that it replays where they are not; see Packed. In a
	// tape before version 5 they are the files the program saw, packed
	// or not (Data nil).
	Files []File
	// Stdin is the guest path of the file that was its standard input,
	// or "" for none.
	Stdin string
	// Cwd is the directory the program started in (since version 5;
	// "" for the root).
	Cwd string
	// UID and GID are the identity the program ran as: the recording
	// user's (since version 6; before, every program ran as LegacyID).
	UID, GID uint32
	// Groups are its supplementary groups, the recording user's (since
	// version 7, at most MaxGroups; before, none).
	Groups []uint32
	// Personality is the version of the Linux personality that recorded
	// the program (linux.Version; 0 before versions were kept). Which
	// frame backs which page is the personality's choice, so a replay by
	// another would diverge: it is refused by name instead.
	Personality int
	// FastCalls says the program's system calls were exception-less
	// where they could be (since personality 11): a replay lays out the
	// same stub and call page.
	FastCalls bool
}

// LegacyID is the uid and gid of a program whose tape does not say them.
const LegacyID = 1000

// Mount is a host file or directory the user placed at a guest path.
type Mount struct {
	Guest string // absolute, at most abi.LinuxMaxPath bytes
	Host  string // the same
}

// File is a host file whose contents a Linux program read, named by
// content like Disk. A packed file's contents are in the tape (Data; FILE
// frames after the image), so the tape replays where the host file is
// not. The writer needs Data for every file it lists (an empty file's is
// empty, not nil).
type File struct {
	Host   string // where it is on the host (absolute)
	Size   int64
	SHA256 [32]byte // never zero: a replay checks every file against it
	Data   []byte   // the contents; nil only for an unpacked file of a tape before version 5
}

// Bounds on a Linux program's header.
const (
	MaxFiles  = 65536 // files it lists
	MaxMounts = 256   // mounts it lists
)

// Packed returns the packed contents of the host file host with that
// size and SHA-256, if the tape holds them. It looks through Files in
// order: a caller asking for every file read should index them once.
func (l *Linux) Packed(host string, size int64, sum [32]byte) ([]byte, bool) {
	return Packed(l.Files, host, size, sum)
}

// Packed is the contents files hold of the file at host of that size and
// hash, if one of them is packed.
func Packed(files []File, host string, size int64, sum [32]byte) ([]byte, bool) {
	for i := range files {
		f := &files[i]
		if f.Data != nil && f.SHA256 == sum && f.Size == size && f.Host == host {
			return f.Data, true
		}
	}
	return nil, false
}

// Disk identifies the read-only base image a recording's disk started from.
// Its contents are not on the tape: a replay reads them from the same file
// and checks the hash, so disk reads need not be logged.
type Disk struct {
	Path   string // as the recorder opened it (absolute)
	Bytes  uint64
	SHA256 [32]byte
}

// headerJSON is the on-disk header body. Its field names are part of the
// format: new fields may be added (older readers ignore them), none renamed.
type headerJSON struct {
	Created  time.Time         `json:"created"`
	Source   string            `json:"source"`
	MemBytes uint64            `json:"mem_bytes"`
	TimerHz  int               `json:"timer_hz"`
	Cmdline  string            `json:"cmdline"`
	CPUID    []cpuidJSON       `json:"cpuid"`
	Image    imageJSON         `json:"image"`
	Devices  map[string]string `json:"devices"`
	Host     string            `json:"host"`
	Reprise  string            `json:"reprise"`
	Notes    []string          `json:"notes"`
	Disk     *diskJSON         `json:"disk,omitempty"`
	Linux    *linuxJSON        `json:"linux,omitempty"`
}

type linuxJSON struct {
	Path    string      `json:"path"`
	Argv    []string    `json:"argv"`
	Env     []string    `json:"env"`
	Random  string      `json:"random"` // hex
	Epoch   time.Time   `json:"epoch"`
	HostCPU int         `json:"host_cpu"`
	Root    string      `json:"root,omitempty"`   // since version 5
	Mounts  []mountJSON `json:"mounts,omitempty"` // since version 5
	Files   []fileJSON  `json:"files,omitempty"`
	Stdin   string      `json:"stdin,omitempty"`
	Cwd     string      `json:"cwd,omitempty"` // since version 5
	User    *userJSON   `json:"user,omitempty"`
	// Personality is absent in tapes from before it was kept (0).
	Personality int  `json:"personality,omitempty"`
	FastCalls   bool `json:"fast_calls,omitempty"`
}

type userJSON struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"` // since version 7
}

type mountJSON struct {
	Guest string `json:"guest"`
	Host  string `json:"host"`
}

// fileJSON is a file of the header. Version 5 writes host, size and
// sha256 only: every file it lists is packed. The others are version 4's,
// read and checked as it wrote them, then dropped.
type fileJSON struct {
	Guest  string `json:"guest,omitempty"` // version 4: its path in the guest
	Host   string `json:"host"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`           // hex
	Mode   uint32 `json:"mode,omitempty"`   // version 4: permission bits; absent before modes were kept
	Packed bool   `json:"packed,omitempty"` // version 4: its contents follow the image, in a FILE frame
}

type diskJSON struct {
	Path   string `json:"path"`
	Bytes  uint64 `json:"bytes"`
	SHA256 string `json:"sha256"` // hex
}

type cpuidJSON struct {
	Function uint32 `json:"function"`
	Index    uint32 `json:"index"`
	Flags    uint32 `json:"flags"`
	EAX      uint32 `json:"eax"`
	EBX      uint32 `json:"ebx"`
	ECX      uint32 `json:"ecx"`
	EDX      uint32 `json:"edx"`
}

// imageJSON describes the image block that follows the header block.
type imageJSON struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"` // hex
	Size   uint64 `json:"size"`
}

// check says what makes h, in a tape of format version, a header no
// machine can be built from, or "". The writer refuses such a header and
// the reader reports it as damage, so a replay never starts from one: a
// forged tape is as untrusted as a guest.
func (h *Header) check(version int) string {
	switch {
	case !h.PositionSource.known():
		return fmt.Sprintf("unknown position source %q (want %q, %q or %q)", h.PositionSource, SourceSWBC, SourceExitSync, SourcePMU)
	case len(h.CPUID) == 0:
		return "empty CPUID table"
	case len(h.CPUID) > MaxCPUIDEntries:
		return fmt.Sprintf("%d CPUID entries, more than the %d KVM takes", len(h.CPUID), MaxCPUIDEntries)
	case len(h.Cmdline) >= abi.CmdlineMax:
		return fmt.Sprintf("command line of %d bytes, more than the %d the guest takes", len(h.Cmdline), abi.CmdlineMax-1)
	case h.Disk != nil && (h.Disk.Path == "" || !filepath.IsAbs(h.Disk.Path)):
		return fmt.Sprintf("disk base image path %q is not absolute", h.Disk.Path)
	case h.Linux != nil && (h.Linux.Path == "" || len(h.Linux.Path) > abi.LinuxMaxPath):
		return fmt.Sprintf("Linux program path of %d bytes (want 1 to %d)", len(h.Linux.Path), abi.LinuxMaxPath)
	}
	if h.Linux != nil {
		if err := abi.CheckLinuxArgs(h.Linux.Argv, h.Linux.Env); err != nil {
			return "Linux program: " + err.Error()
		}
		if h.Linux.HostCPU < 0 || h.Linux.HostCPU >= maxHostCPUs {
			return fmt.Sprintf("Linux program: host CPU %d (want 0 to %d)", h.Linux.HostCPU, maxHostCPUs-1)
		}
		if why := h.Linux.check(version); why != "" {
			return "Linux program " + why
		}
	}
	if h.MemBytes != 0 {
		if err := abi.CheckRAMSize(h.MemBytes); err != nil {
			return err.Error()
		}
	}
	if err := abi.CheckTimerHz(h.TimerHz); err != nil {
		return err.Error()
	}
	return ""
}

// check says what is wrong with l's files, root and mounts, or "". In a
// tape before version 5 root and mounts are absent, and what only
// version 4 said of its files (guest paths, modes, stdin among them) was
// checked as it was read (checkV4Files).
func (l *Linux) check(version int) string {
	if len(l.Files) > MaxFiles {
		return fmt.Sprintf("lists %d files, more than %d", len(l.Files), MaxFiles)
	}
	if len(l.Groups) > MaxGroups {
		return fmt.Sprintf("lists %d supplementary groups, more than %d", len(l.Groups), MaxGroups)
	}
	if version >= 5 {
		if why := checkPath(l.Root); why != "" {
			return "root: " + why
		}
		if len(l.Mounts) > MaxMounts {
			return fmt.Sprintf("lists %d mounts, more than %d", len(l.Mounts), MaxMounts)
		}
		guests := make(map[string]bool, len(l.Mounts))
		for _, m := range l.Mounts {
			why := checkPath(m.Guest)
			if why == "" {
				why = checkPath(m.Host)
			}
			if why != "" {
				return fmt.Sprintf("mount of %q at %q: %s", m.Host, m.Guest, why)
			}
			// "/a" and "/a/" are one guest path: two mounts there would
			// leave which one the program saw to the order.
			g := path.Clean(m.Guest)
			if guests[g] {
				return fmt.Sprintf("has two mounts at %q", g)
			}
			guests[g] = true
		}
		if l.Stdin != "" {
			if why := checkPath(l.Stdin); why != "" {
				return "standard input: " + why
			}
		}
		if l.Cwd != "" {
			if why := checkPath(l.Cwd); why != "" {
				return "working directory: " + why
			}
		}
	}
	seen := make(map[fileKey]bool, len(l.Files))
	var total int64
	for _, f := range l.Files {
		if why := checkPath(f.Host); why != "" {
			return fmt.Sprintf("file %q: %s", f.Host, why)
		}
		if f.Size < 0 {
			return fmt.Sprintf("file %q: size %d", f.Host, f.Size)
		}
		// A zero hash once meant "not recorded" and skipped the
		// check: a tape naming /proc/self/environ printed the
		// replaying user's environment.
		if f.SHA256 == ([32]byte{}) {
			return fmt.Sprintf("file %q has no SHA-256 recorded", f.Host)
		}
		if version < 5 {
			continue // a file at two guest paths was listed twice
		}
		c := fileKey{f.Host, f.Size, f.SHA256}
		if seen[c] {
			return fmt.Sprintf("lists file %q (%d bytes, sha256 %x…) twice", f.Host, f.Size, f.SHA256[:6])
		}
		seen[c] = true
		// Every file listed is packed: together they fit a tape.
		if f.Size > MaxPackedBytes-total {
			return fmt.Sprintf("packed files take more than the %d bytes a tape holds", MaxPackedBytes)
		}
		total += f.Size
	}
	return ""
}

// checkV4Files says what is wrong with a version 4 header's files and
// stdin, by version 4's rules, or "": guest paths absolute, modes of
// permission bits only, stdin one of the guest paths. Guest paths and
// modes are dropped once read; a replay refuses such a tape anyway (by
// its personality), but it still reads and is damaged as it was.
func checkV4Files(files []fileJSON, stdin string) string {
	stdinListed := stdin == ""
	for _, f := range files {
		stdinListed = stdinListed || f.Guest == stdin
		if !filepath.IsAbs(f.Guest) || len(f.Guest) > abi.LinuxMaxPath {
			return fmt.Sprintf("Linux program file %q (host %q): paths must be absolute", f.Guest, f.Host)
		}
		if f.Mode&^0o777 != 0 {
			return fmt.Sprintf("Linux program file %q: mode %#o is not permission bits", f.Guest, f.Mode)
		}
	}
	if !stdinListed {
		return fmt.Sprintf("Linux program standard input %q is not one of its files", stdin)
	}
	return ""
}

// encodeHeader validates h and returns the file's first bytes, to be
// written in order: prefix, header block and image block, then each
// packed file's frame header and its contents, which are not copied (a
// packed tape's files take up to MaxPackedBytes).
func encodeHeader(h *Header) ([][]byte, error) {
	if h == nil {
		return nil, errors.New("tape: nil header")
	}
	if why := h.check(FormatVersion); why != "" {
		return nil, fmt.Errorf("tape: header: %s", why)
	}
	if len(h.Image.Bytes) > maxImageBytes {
		return nil, fmt.Errorf("tape: header: image %q is %d bytes, more than the %d a tape holds",
			h.Image.Name, len(h.Image.Bytes), maxImageBytes)
	}
	sum := h.Image.SHA256
	if len(h.Image.Bytes) > 0 {
		got := sha256.Sum256(h.Image.Bytes)
		if sum == ([32]byte{}) {
			sum = got
		} else if sum != got {
			return nil, fmt.Errorf("tape: header: image %q: SHA256 %x does not match its bytes (%x)",
				h.Image.Name, sum[:6], got[:6])
		}
	}
	j := headerJSON{
		Created:  h.Created.UTC(),
		Source:   string(h.PositionSource),
		MemBytes: h.MemBytes,
		TimerHz:  h.TimerHz,
		Cmdline:  h.Cmdline,
		Image:    imageJSON{Name: h.Image.Name, SHA256: hex.EncodeToString(sum[:]), Size: uint64(len(h.Image.Bytes))},
		Devices:  h.Devices,
		Host:     h.Host,
		Reprise:  h.Reprise,
		Notes:    h.Notes,
	}
	if l := h.Linux; l != nil {
		j.Linux = &linuxJSON{Path: l.Path, Argv: l.Argv, Env: l.Env, Random: hex.EncodeToString(l.Random[:]), Epoch: l.Epoch.UTC(), HostCPU: l.HostCPU,
			Root: l.Root, Stdin: l.Stdin, Cwd: l.Cwd, User: &userJSON{l.UID, l.GID, l.Groups}, Personality: l.Personality, FastCalls: l.FastCalls}
		for _, m := range l.Mounts {
			j.Linux.Mounts = append(j.Linux.Mounts, mountJSON(m))
		}
		for _, f := range l.Files {
			if f.Data == nil {
				return nil, fmt.Errorf("tape: header: file %q is listed without its contents (a header lists only the files packed in the tape)", f.Host)
			}
			j.Linux.Files = append(j.Linux.Files, fileJSON{Host: f.Host, Size: f.Size, SHA256: hex.EncodeToString(f.SHA256[:])})
		}
	}
	if h.Disk != nil {
		j.Disk = &diskJSON{Path: h.Disk.Path, Bytes: h.Disk.Bytes, SHA256: hex.EncodeToString(h.Disk.SHA256[:])}
	}
	if h.CPUID != nil {
		j.CPUID = make([]cpuidJSON, len(h.CPUID))
		for i, c := range h.CPUID {
			j.CPUID[i] = cpuidJSON(c)
		}
	}
	body, err := json.Marshal(&j)
	if err != nil {
		return nil, fmt.Errorf("tape: header: %w", err)
	}
	if len(body) > maxHeaderBytes {
		return nil, fmt.Errorf("tape: header: %d bytes of JSON, more than the %d a tape holds", len(body), maxHeaderBytes)
	}
	b := make([]byte, 0, prefixSize+2*frameSize+len(body)+len(h.Image.Bytes))
	b = appendPrefix(b, FormatVersion)
	b = appendFrame(b, tagHeader, 0, body)
	b = appendFrame(b, tagImage, 0, h.Image.Bytes)
	out := [][]byte{b}
	if h.Linux == nil {
		return out, nil
	}
	var packed int64
	for i, f := range h.Linux.Files {
		packed += int64(len(f.Data))
		switch {
		case int64(len(f.Data)) != f.Size || sha256.Sum256(f.Data) != f.SHA256:
			return nil, fmt.Errorf("tape: header: packed file %q: its %d bytes are not the %d bytes its size and hash name", f.Host, len(f.Data), f.Size)
		case packed > MaxPackedBytes:
			return nil, fmt.Errorf("tape: header: packed files take more than the %d bytes a tape holds", MaxPackedBytes)
		}
		hdr := make([]byte, frameSize)
		putFrame(hdr, tagFile, uint32(i), f.Data)
		out = append(out, hdr, f.Data)
	}
	return out, nil
}

// decodeHeader parses a header block's body. It returns the header, the
// image size the image block must have, and a reason if the body is bad.
func decodeHeader(body []byte, version uint32) (*Header, uint64, string) {
	var j headerJSON
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&j); err != nil {
		return nil, 0, "undecodable header JSON: " + err.Error()
	}
	if d.More() {
		return nil, 0, "trailing data after the header JSON"
	}
	h := &Header{
		Version:        int(version),
		Created:        j.Created.UTC(),
		PositionSource: PositionSource(j.Source),
		MemBytes:       j.MemBytes,
		TimerHz:        j.TimerHz,
		Cmdline:        j.Cmdline,
		Image:          Image{Name: j.Image.Name},
		Devices:        j.Devices,
		Host:           j.Host,
		Reprise:        j.Reprise,
		Notes:          j.Notes,
	}
	if j.CPUID != nil {
		h.CPUID = make([]CPUIDEntry, len(j.CPUID))
		for i, c := range j.CPUID {
			h.CPUID[i] = CPUIDEntry(c)
		}
	}
	if j.Disk != nil {
		h.Disk = &Disk{Path: j.Disk.Path, Bytes: j.Disk.Bytes}
		if len(j.Disk.SHA256) != 2*len(h.Disk.SHA256) {
			return nil, 0, fmt.Sprintf("disk sha256 %q is not 64 hex digits", j.Disk.SHA256)
		}
		if _, err := hex.Decode(h.Disk.SHA256[:], []byte(j.Disk.SHA256)); err != nil {
			return nil, 0, fmt.Sprintf("disk sha256 %q is not 64 hex digits", j.Disk.SHA256)
		}
	}
	if l := j.Linux; l != nil {
		h.Linux = &Linux{Path: l.Path, Argv: l.Argv, Env: l.Env, Epoch: l.Epoch.UTC(), HostCPU: l.HostCPU, Stdin: l.Stdin, Personality: l.Personality, FastCalls: l.FastCalls,
			UID: LegacyID, GID: LegacyID}
		if l.User != nil && version >= 6 {
			h.Linux.UID, h.Linux.GID = l.User.UID, l.User.GID
		}
		if l.User != nil && version >= 7 {
			h.Linux.Groups = l.User.Groups
		}
		if len(l.Random) != 2*len(h.Linux.Random) {
			return nil, 0, fmt.Sprintf("Linux program random %q is not 32 hex digits", l.Random)
		}
		if _, err := hex.Decode(h.Linux.Random[:], []byte(l.Random)); err != nil {
			return nil, 0, fmt.Sprintf("Linux program random %q is not 32 hex digits", l.Random)
		}
		if len(l.Files) > MaxFiles {
			return nil, 0, fmt.Sprintf("Linux program lists %d files, more than %d", len(l.Files), MaxFiles)
		}
		if version >= 5 {
			if len(l.Mounts) > MaxMounts {
				return nil, 0, fmt.Sprintf("Linux program lists %d mounts, more than %d", len(l.Mounts), MaxMounts)
			}
			h.Linux.Root, h.Linux.Cwd = l.Root, l.Cwd
			for _, m := range l.Mounts {
				h.Linux.Mounts = append(h.Linux.Mounts, Mount(m))
			}
		} else if why := checkV4Files(l.Files, l.Stdin); why != "" {
			return nil, 0, why
		}
		for _, f := range l.Files {
			file := File{Host: f.Host, Size: f.Size}
			if version >= 5 || f.Packed {
				file.Data = []byte{} // its frame fills it in
			}
			if len(f.SHA256) != 2*len(file.SHA256) {
				return nil, 0, fmt.Sprintf("file %q: sha256 %q is not 64 hex digits", f.Host, f.SHA256)
			}
			if _, err := hex.Decode(file.SHA256[:], []byte(f.SHA256)); err != nil {
				return nil, 0, fmt.Sprintf("file %q: sha256 %q is not 64 hex digits", f.Host, f.SHA256)
			}
			h.Linux.Files = append(h.Linux.Files, file)
		}
	}
	if len(j.Image.SHA256) != 2*len(h.Image.SHA256) {
		return nil, 0, fmt.Sprintf("image sha256 %q is not 64 hex digits", j.Image.SHA256)
	}
	if _, err := hex.Decode(h.Image.SHA256[:], []byte(j.Image.SHA256)); err != nil {
		return nil, 0, fmt.Sprintf("image sha256 %q is not 64 hex digits", j.Image.SHA256)
	}
	if j.Image.Size > maxImageBytes {
		return nil, 0, fmt.Sprintf("image size %d is more than the %d a tape holds", j.Image.Size, maxImageBytes)
	}
	if why := h.check(int(version)); why != "" {
		return nil, 0, why
	}
	return h, j.Image.Size, ""
}
