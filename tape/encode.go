package tape

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/reprise-vm/reprise/abi"
)

// Event encoding inside a chunk payload (see doc.go). The flags byte:
//
//	bit 0-1  Where
//	bit 2    RIP (u64) and RCX (uvarint) follow
//	bit 3    Port (u16) follows
//	bit 4    Value (svarint, relative to HostTime) follows
//	bit 5    Data (length, bytes) follows: u8 length, or uvarint for frames
//	bit 6-7  reserved, zero
const (
	flagWhere    = 0x03
	flagRIP      = 1 << 2
	flagPort     = 1 << 3
	flagValue    = 1 << 4
	flagData     = 1 << 5
	flagReserved = 0xc0
)

// minEventBytes is the smallest encoded event: kind, flags, three one-byte
// varints, exit reason, digest. A chunk's event count is checked against it.
const minEventBytes = 1 + 1 + 3 + 1 + 8

// deltas is the coding state of one chunk: the previous event's position
// and host time. It starts at zero in every chunk, so each chunk decodes on
// its own.
type deltas struct {
	exit, branch uint64
	host         time.Duration
}

// appendEvent encodes e, which has passed check, after b.
func appendEvent(b []byte, e *Event, d *deltas) []byte {
	flags := byte(e.Where)
	if e.Pos.RIP != 0 || e.Pos.RCX != 0 {
		flags |= flagRIP
	}
	if e.Port != 0 {
		flags |= flagPort
	}
	if e.Value != 0 {
		flags |= flagValue
	}
	if len(e.Data) != 0 {
		flags |= flagData
	}
	b = append(b, byte(e.Kind), flags)
	b = binary.AppendVarint(b, int64(e.Pos.Exit-d.exit))
	b = binary.AppendVarint(b, int64(e.Pos.Branch-d.branch))
	b = binary.AppendVarint(b, int64(e.HostTime-d.host))
	b = append(b, e.ExitReason)
	b = binary.LittleEndian.AppendUint64(b, e.Digest)
	d.exit, d.branch, d.host = e.Pos.Exit, e.Pos.Branch, e.HostTime
	if flags&flagRIP != 0 {
		b = binary.LittleEndian.AppendUint64(b, e.Pos.RIP)
		b = binary.AppendUvarint(b, e.Pos.RCX)
	}
	if flags&flagPort != 0 {
		b = binary.LittleEndian.AppendUint16(b, e.Port)
	}
	if e.Kind == KindInterrupt {
		b = append(b, e.Vector)
	}
	if flags&flagValue != 0 {
		// Values are clock readings taken with the event: close to HostTime.
		b = binary.AppendVarint(b, int64(e.Value-uint64(e.HostTime)))
	}
	if flags&flagData != 0 {
		if e.Kind.isFrame() {
			b = binary.AppendUvarint(b, uint64(len(e.Data)))
		} else {
			b = append(b, byte(len(e.Data)))
		}
		b = append(b, e.Data...)
	}
	if e.Kind == KindEnd {
		x := e.End
		b = binary.AppendUvarint(b, uint64(len(x.Reason)))
		b = append(b, x.Reason...)
		b = binary.AppendUvarint(b, uint64(x.Status))
		b = binary.AppendUvarint(b, uint64(len(x.Fault)))
		b = append(b, x.Fault...)
		b = append(b, x.RAMHash[:]...)
		b = append(b, x.ConsoleHash[:]...)
		b = binary.AppendUvarint(b, x.ConsoleBytes)
	}
	if e.Kind == KindFile {
		b = appendFact(b, e.Fact)
	}
	return b
}

// appendFact encodes f, which has passed check, after b: op, path, errno,
// then, only when the host answered (errno 0), the op's answer.
func appendFact(b []byte, f *FileFact) []byte {
	b = append(b, byte(f.Op))
	b = appendStr(b, f.Path)
	b = binary.AppendUvarint(b, uint64(f.Errno))
	if f.Errno != 0 {
		return b
	}
	switch f.Op {
	case FileStat:
		b = appendStat(b, &f.Stat)
	case FileList:
		b = binary.AppendUvarint(b, uint64(len(f.Entries)))
		for i := range f.Entries {
			b = appendStr(b, f.Entries[i].Name)
			b = appendStat(b, &f.Entries[i].Stat)
		}
		b = binary.AppendUvarint(b, uint64(len(f.Order)))
		for _, i := range f.Order {
			b = binary.AppendUvarint(b, uint64(i))
		}
	case FileRead:
		b = binary.AppendUvarint(b, uint64(f.Size))
		b = append(b, f.SHA256[:]...)
	}
	return b
}

func appendStat(b []byte, s *Stat) []byte {
	b = binary.AppendUvarint(b, uint64(s.Mode))
	b = binary.AppendUvarint(b, uint64(s.UID))
	b = binary.AppendUvarint(b, uint64(s.GID))
	b = binary.AppendUvarint(b, uint64(s.Nlink))
	b = binary.AppendUvarint(b, uint64(s.Size))
	b = binary.AppendVarint(b, s.Atime)
	b = binary.AppendVarint(b, s.Mtime)
	b = binary.AppendVarint(b, s.Ctime)
	return appendStr(b, s.Link)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads one chunk payload. The first failure sticks in bad; later
// reads return zeros, so decodeEvent checks once at the end.
type decoder struct {
	b       []byte
	i       int
	bad     string
	version int // the tape's format version: which kinds it may hold
}

func (d *decoder) fail(format string, args ...any) {
	if d.bad == "" {
		d.bad = fmt.Sprintf(format, args...)
	}
}

func (d *decoder) take(n int, what string) []byte {
	if d.bad != "" {
		return nil
	}
	if n < 0 || n > len(d.b)-d.i {
		d.fail("%s runs past the end of the chunk", what)
		return nil
	}
	p := d.b[d.i : d.i+n]
	d.i += n
	return p
}

func (d *decoder) u8(what string) byte {
	if p := d.take(1, what); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u16(what string) uint16 {
	if p := d.take(2, what); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (d *decoder) u64(what string) uint64 {
	if p := d.take(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// varint reads a zig-zag signed varint (encoding/binary's).
func (d *decoder) varint(what string) int64 {
	u := d.uvarint(what)
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) uvarint(what string) uint64 {
	if d.bad != "" {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 {
		d.fail("bad varint in %s", what)
		return 0
	}
	d.i += n
	return v
}

// u32 reads a uvarint that must fit 32 bits.
func (d *decoder) u32(what string) uint32 {
	v := d.uvarint(what)
	if v > math.MaxUint32 {
		d.fail("%s %d does not fit 32 bits", what, v)
		return 0
	}
	return uint32(v)
}

// size reads a uvarint that must fit an int64.
func (d *decoder) size(what string) int64 {
	v := d.uvarint(what)
	if v > math.MaxInt64 {
		d.fail("%s %d does not fit 63 bits", what, v)
		return 0
	}
	return int64(v)
}

// str reads a uvarint length and that many bytes, at most max.
func (d *decoder) str(max int, what string) string {
	n := d.uvarint(what + " length")
	if n > uint64(max) {
		d.fail("%s of %d bytes (at most %d)", what, n, max)
		return ""
	}
	return string(d.take(int(n), what))
}

// decodeEvent decodes the next event, or says why it cannot.
func decodeEvent(d *decoder, s *deltas) (*Event, string) {
	e := &Event{Kind: Kind(d.u8("kind"))}
	if d.bad == "" && !e.Kind.known() {
		return nil, fmt.Sprintf("unknown event kind %d", uint8(e.Kind))
	}
	if d.bad == "" && e.Kind.since() > d.version {
		return nil, fmt.Sprintf("%v event (kind %d) in a version %d tape: the kind is since version %d", e.Kind, uint8(e.Kind), d.version, e.Kind.since())
	}
	flags := d.u8("flags")
	if flags&flagReserved != 0 {
		d.fail("reserved flag bits set (%#02x)", flags)
	}
	e.Where = Where(flags & flagWhere)
	e.Pos.Exit = s.exit + uint64(d.varint("exit delta"))
	e.Pos.Branch = s.branch + uint64(d.varint("branch delta"))
	e.HostTime = s.host + time.Duration(d.varint("host time delta"))
	e.ExitReason = d.u8("exit reason")
	e.Digest = d.u64("digest")
	if flags&flagRIP != 0 {
		e.Pos.RIP = d.u64("rip")
		e.Pos.RCX = d.uvarint("rcx")
	}
	if flags&flagPort != 0 {
		e.Port = d.u16("port")
	}
	if e.Kind == KindInterrupt {
		e.Vector = d.u8("vector")
	}
	if flags&flagValue != 0 {
		e.Value = uint64(e.HostTime) + uint64(d.varint("value"))
	}
	if flags&flagData != 0 {
		limit, n := MaxEntropy, 0
		if e.Kind.isFrame() {
			limit, n = MaxFrame, int(min(d.uvarint("frame length"), MaxFrame+1))
		} else {
			n = int(d.u8("data length"))
		}
		if n > limit {
			d.fail("%d data bytes (at most %d)", n, limit)
		}
		if p := d.take(n, "data"); p != nil {
			e.Data = append([]byte(nil), p...)
		}
	}
	if e.Kind == KindEnd {
		x := &End{}
		x.Reason = d.str(maxReasonBytes, "end reason")
		status := d.uvarint("exit status")
		if status > 1<<32-1 {
			d.fail("exit status %d does not fit 32 bits", status)
		}
		x.Status = uint32(status)
		x.Fault = d.str(maxFaultBytes, "fault report")
		copy(x.RAMHash[:], d.take(32, "ram hash"))
		copy(x.ConsoleHash[:], d.take(32, "console hash"))
		x.ConsoleBytes = d.uvarint("console bytes")
		e.End = x
	}
	if e.Kind == KindFile {
		e.Fact = decodeFact(d)
	}
	if d.bad != "" {
		return nil, d.bad
	}
	// A flag for a zero field would make two encodings of one event.
	switch {
	case flags&flagRIP != 0 && e.Pos.RIP == 0 && e.Pos.RCX == 0,
		flags&flagPort != 0 && e.Port == 0,
		flags&flagValue != 0 && e.Value == 0,
		flags&flagData != 0 && len(e.Data) == 0:
		return nil, fmt.Sprintf("flags %#02x mark a field that is zero", flags)
	}
	if why := e.check(); why != "" {
		return nil, why
	}
	s.exit, s.branch, s.host = e.Pos.Exit, e.Pos.Branch, e.HostTime
	return e, ""
}

// decodeFact decodes a file event's fact. Every length is checked before
// anything is allocated for it: a listing's count against MaxDirEntries
// and against the bytes left to hold its entries (of the chunk, and of
// MaxFactBytes), so a forged count costs nothing.
func decodeFact(d *decoder) *FileFact {
	start := d.i
	f := &FileFact{Op: FileOp(d.u8("file op"))}
	if d.bad == "" && !f.Op.known() {
		d.fail("unknown file op %d", uint8(f.Op))
	}
	f.Path = d.str(abi.LinuxMaxPath, "file path")
	errno := d.uvarint("errno")
	if errno > maxErrno {
		d.fail("errno %d (at most %d)", errno, maxErrno)
	}
	f.Errno = uint16(errno)
	if d.bad != "" || f.Errno != 0 {
		return f
	}
	switch f.Op {
	case FileStat:
		f.Stat = decodeStat(d)
	case FileList:
		n := d.uvarint("entry count")
		left := max(0, min(len(d.b)-d.i, MaxFactBytes-(d.i-start)))
		switch {
		case n > MaxDirEntries:
			d.fail("%d directory entries (at most %d)", n, MaxDirEntries)
		case n > uint64(left/minEntryBytes):
			d.fail("%d directory entries cannot fit the %d bytes left for them", n, left)
		case n > 0:
			f.Entries = make([]DirEntry, 0, n)
			for range n {
				name := d.str(MaxNameBytes, "entry name")
				st := decodeStat(d)
				if d.bad != "" {
					break
				}
				f.Entries = append(f.Entries, DirEntry{Name: name, Stat: st})
			}
		}
		if d.version >= 7 {
			f.Order = decodeOrder(d, len(f.Entries))
		}
	case FileRead:
		f.Size = d.size("file size")
		copy(f.SHA256[:], d.take(32, "file sha256"))
	}
	if d.bad == "" && d.i-start > MaxFactBytes {
		d.fail("a file fact of %d bytes (at most %d)", d.i-start, MaxFactBytes)
	}
	return f
}

// decodeOrder decodes a listing's order of n entries: none, or n
// indices (each at least a byte, so a count is checked against what is
// left before anything is allocated).
func decodeOrder(d *decoder, n int) []uint32 {
	count := d.uvarint("order count")
	switch {
	case d.bad != "" || count == 0:
		return nil
	case count != uint64(n) || count > uint64(len(d.b)-d.i):
		d.fail("an order of %d entries for %d", count, n)
		return nil
	}
	order := make([]uint32, 0, count)
	for range count {
		i := d.uvarint("order index")
		if i >= uint64(n) {
			d.fail("order index %d of %d entries", i, n)
			return nil
		}
		order = append(order, uint32(i))
	}
	return order
}

func decodeStat(d *decoder) Stat {
	var s Stat
	s.Mode = d.u32("mode")
	s.UID = d.u32("uid")
	s.GID = d.u32("gid")
	s.Nlink = d.u32("nlink")
	s.Size = d.size("size")
	s.Atime = d.varint("atime")
	s.Mtime = d.varint("mtime")
	s.Ctime = d.varint("ctime")
	s.Link = d.str(MaxLinkBytes, "link target")
	return s
}
