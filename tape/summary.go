package tape

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary is what `reprise info` prints: the header, and what a full read
// of the events found.
type Summary struct {
	Header   *Header
	Size     int64 // file size in bytes
	Chunks   int   // chunks whose checksums verified
	Events   uint64
	ByKind   map[Kind]uint64
	Duration time.Duration // HostTime of the last event
	Exits    uint64        // Pos.Exit of the last event
	End      *End          // nil if the tape has no end event
	Damage   error         // *TruncatedError or *CorruptError if the tape is damaged (the rest of the summary covers what came before)

	headerBytes int64 // prefix, header and image
}

// Summarize reads the whole tape at path. Its error is only for a file
// that cannot be opened or whose header cannot be read; damage after the
// header is reported in Summary.Damage.
func Summarize(path string) (*Summary, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s := &Summary{Header: r.Header(), ByKind: make(map[Kind]uint64), headerBytes: r.start, Size: r.Size()}
	var last *Event
	for {
		e, err := r.Next()
		if err != nil {
			if err != io.EOF {
				s.Damage = err
			}
			break
		}
		s.Events++
		s.ByKind[e.Kind]++
		if e.End != nil {
			s.End = e.End
		}
		last = e
	}
	s.Chunks = r.chunks
	if last != nil {
		s.Duration, s.Exits = last.HostTime, last.Pos.Exit
	}
	return s, nil
}

// Print writes the summary in aligned, human-readable lines.
func (s *Summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	if h := s.Header; h != nil {
		line("format", "reprise tape, version %d", h.Version)
		line("created", "%s", h.Created.Format("2006-01-02 15:04:05 MST"))
		line("host", "%s", orNone(h.Host))
		line("recorder", "%s", orNone(h.Reprise))
		line("source", "%s", h.PositionSource)
		line("memory", "%s", fmtBytes(int64(h.MemBytes)))
		line("timer", "%d Hz", h.TimerHz)
		if l := h.Linux; l != nil {
			line("program", "%s (Linux, %s, sha256 %x)", l.Path, fmtBytes(int64(len(h.Image.Bytes))), h.Image.SHA256[:6])
			line("argv", "%q", l.Argv)
			line("env", "%q", l.Env)
			line("started", "%s, pinned to host CPU %d", l.Epoch.Format("2006-01-02 15:04:05 MST"), l.HostCPU)
			if h.Version >= 5 {
				line("root", "%s", l.Root)
			}
			for _, m := range l.Mounts {
				line("mount", "%s at %s", m.Host, m.Guest)
			}
			var bytes int64
			packed := 0
			for _, f := range l.Files {
				bytes += f.Size
				if f.Data != nil {
					packed++
				}
			}
			switch {
			case h.Version >= 5 && packed == 0:
				line("files", "none packed: a replay reads the files the program read from the host again, and checks each (size and SHA-256)")
			case h.Version >= 5:
				line("files", "%s packed, %s", plural(packed, "file", "files"), fmtBytes(bytes))
			case packed == len(l.Files) && packed > 0:
				line("files", "%s, %s, packed in the tape", plural(len(l.Files), "file", "files"), fmtBytes(bytes))
			default:
				line("files", "%s, %s (%d packed; the others named by SHA-256: a replay reads them again and checks them)",
					plural(len(l.Files), "file", "files"), fmtBytes(bytes), packed)
			}
			if h.Version >= 5 {
				line("observed", "%s of the host's files (file events), replayed from the tape",
					plural(int(s.ByKind[KindFile]), "observation", "observations"))
			}
			line("user", "uid %d, gid %d", l.UID, l.GID)
			if l.Cwd != "" {
				line("cwd", "%s", l.Cwd)
			}
			if l.Stdin != "" {
				line("stdin", "%s", l.Stdin)
			}
			if h.PositionSource == SourceExitSync {
				line("positions", "at the program's own exits (system calls, faults): preemption between its threads is syscall-granular")
			}
		} else {
			line("cmdline", "%q", h.Cmdline)
			line("image", "%s, %s, sha256 %x", orNone(h.Image.Name), fmtBytes(int64(len(h.Image.Bytes))), h.Image.SHA256[:6])
		}
		line("cpuid", "%s", plural(len(h.CPUID), "entry", "entries"))
		if h.Disk != nil {
			line("disk", "%s, %s, sha256 %x (base image, read-only; not on the tape)", h.Disk.Path, fmtBytes(int64(h.Disk.Bytes)), h.Disk.SHA256[:6])
		}
		keys := make([]string, 0, len(h.Devices))
		for k := range h.Devices {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			line("device", "%s: %s", k, h.Devices[k])
		}
		for _, n := range h.Notes {
			line("note", "%s", n)
		}
	}
	line("size", "%s (%d bytes): header %s, %s", fmtBytes(s.Size), s.Size, fmtBytes(s.headerBytes), plural(s.Chunks, "chunk", "chunks"))
	line("events", "%d", s.Events)
	for k := KindInterrupt; k.known(); k++ {
		if n := s.ByKind[k]; n > 0 {
			line("  "+k.String(), "%d", n)
		}
	}
	line("duration", "%v (host time of the last event)", s.Duration)
	if secs := s.Duration.Seconds(); secs > 0 {
		line("rate", "%.0f events/s, %s/s of events (per second of the recorded run)",
			float64(s.Events)/secs, fmtBytes(int64(float64(s.Size-s.headerBytes)/secs)))
	}
	line("exits", "%d", s.Exits)
	switch e := s.End; {
	case e == nil:
		line("end", "none: the recording was cut short (or is still being written)")
	default:
		first, _, _ := strings.Cut(e.Summary(), "\n")
		line("end", "%s", first)
	}
	if e := s.End; e != nil {
		line("ram", "sha256 %x", e.RAMHash)
		line("console", "%s, sha256 %x", fmtBytes(int64(e.ConsoleBytes)), e.ConsoleHash)
	}
	if s.Damage != nil {
		line("damage", "%v", s.Damage)
	} else {
		line("damage", "none")
	}
	tw.Flush()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fmtBytes renders n in the largest binary unit that keeps it ≥ 1.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0") + " " + string("KMGT"[i-1]) + "iB"
}

// EventBytes is the size of the events alone: the file without its prefix,
// header and embedded image.
func (s *Summary) EventBytes() int64 { return s.Size - s.headerBytes }
