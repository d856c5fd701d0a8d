package tape

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	data, evs, bounds := smallTape(t, 4, 5, 3)
	dir := t.TempDir()
	path := writeFile(t, dir, data)

	s, err := Summarize(path)
	require.NoError(t, err)
	require.NoError(t, s.Damage)
	require.Equal(t, smallHeader(), s.Header)
	require.Equal(t, int64(len(data)), s.Size)
	require.Equal(t, 3, s.Chunks)
	require.Equal(t, uint64(12), s.Events)
	var byKind = map[Kind]uint64{}
	for _, e := range evs {
		byKind[e.Kind]++
	}
	require.Equal(t, byKind, s.ByKind)
	require.Equal(t, evs[11].HostTime, s.Duration)
	require.Equal(t, evs[11].Pos.Exit, s.Exits)
	require.Equal(t, evs[11].End, s.End)

	var out strings.Builder
	s.Print(&out)
	t.Logf("\n%s", out.String())
	for _, kv := range [][2]string{
		{"source", "swbc"}, {"memory", "64 MiB"}, {"timer", "250 Hz"}, {"cmdline", `"syn_cont threads=16`},
		{"image", "kernel.elf, 15 B, sha256 " + hex6(s.Header.Image.SHA256)}, {"created", "2025-11-21 23:27:05 UTC"},
		{"host", "testhost 6.8.0-test"}, {"recorder", "reprise v0.0.0-test"}, {"device", "serial: 16550@0x3f8"},
		{"size", fmt.Sprintf("1 KiB (%d bytes): header %d B, 3 chunks", len(data), bounds[0])}, {"cpuid", "1 entry"}, {"events", "12"}, {"  interrupt", "7"}, {"  end", "1"},
		{"end", "exited, status 3"}, {"damage", "none"}, {"duration", evs[11].HostTime.String()},
		{"rate", fmt.Sprintf("514 events/s, %s/s of events", fmtBytes(int64(float64(len(data)-int(bounds[0]))/evs[11].HostTime.Seconds())))}, {"exits", "185"}, {"console", "1.2 KiB, sha256 "},
	} {
		requireLine(t, out.String(), kv[0], kv[1])
	}

	// Cut inside chunk 2: the summary covers chunks 0 and 1.
	cut := writeFile(t, dir, data[:bounds[2]+30])
	s, err = Summarize(cut)
	require.NoError(t, err)
	var te *TruncatedError
	require.ErrorAs(t, s.Damage, &te)
	require.Equal(t, 2, te.Chunk)
	require.Equal(t, 2, s.Chunks)
	require.Equal(t, uint64(9), s.Events)
	require.Equal(t, evs[8].HostTime, s.Duration)
	require.Nil(t, s.End)
	out.Reset()
	s.Print(&out)
	requireLine(t, out.String(), "end", "none: the recording was cut short")
	requireLine(t, out.String(), "damage", fmt.Sprintf("tape: truncated at byte %d: the file ends inside chunk 2", bounds[2]))

	// A damaged header is an error; a missing file too.
	_, err = Summarize(writeFile(t, dir, data[:40]))
	require.True(t, errors.As(err, &te))
	_, err = Summarize(filepath.Join(dir, "missing"))
	require.ErrorContains(t, err, "no such file")
}

func TestPrintFault(t *testing.T) {
	s := &Summary{Header: fullHeader(), Events: 1, ByKind: map[Kind]uint64{KindEnd: 1}, Duration: time.Second,
		End: &End{Reason: EndFault, Fault: "#PF at rip=0x4028cf\nregisters..."}}
	var out strings.Builder
	s.Print(&out)
	requireLine(t, out.String(), "end", "fault: #PF at rip=0x4028cf\n")
	requireLine(t, out.String(), "note", "no PMU: swbc positions")
	require.Equal(t, "fault: #PF at rip=0x4028cf\nregisters...", s.End.Summary())
	require.Equal(t, "exited, status 3", (&End{Reason: EndExited, Status: 3}).Summary())
	require.Equal(t, "interrupted", (&End{Reason: EndInterrupted}).Summary())
}

// requireLine checks that out has a line with key, aligned blanks, then value.
func requireLine(t *testing.T, out, key, value string) {
	t.Helper()
	require.Regexp(t, "(?m)^"+regexp.QuoteMeta(key)+" +"+regexp.QuoteMeta(value), out)
}

func hex6(b [32]byte) string {
	const digits = "0123456789abcdef"
	var s []byte
	for _, c := range b[:6] {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}

// A Linux program's summary says who it ran as, where it saw the host's
// files (root, mounts), which are packed, and how often it looked.
func TestSummarizeLinux(t *testing.T) {
	data, evs, _ := hostTapeOf(t, factHeader(), factEvents())
	s, err := Summarize(writeFile(t, t.TempDir(), data))
	require.NoError(t, err)
	require.NoError(t, s.Damage)
	require.Equal(t, uint64(len(sampleFacts())), s.ByKind[KindFile])
	require.Equal(t, uint64(len(evs)), s.Events)
	var out strings.Builder
	s.Print(&out)
	t.Logf("\n%s", out.String())
	for _, kv := range [][2]string{
		{"format", "reprise tape, version 9"},
		{"user", "uid 1001, gid 1002"},
		{"root", "/srv/roots/debian"},
		{"mount", "/home/u/data at /data"},
		{"mount", "/home/u/app.conf at /etc/app.conf"},
		{"files", "2 files packed, 15 B"},
		{"observed", "10 observations of the host's files"},
		{"stdin", "/data/in.txt"},
		{"  file", "10"},
	} {
		requireLine(t, out.String(), kv[0], kv[1])
	}

	h := linuxHeader()
	data, _, _ = hostTapeWith(t, h)
	s, err = Summarize(writeFile(t, t.TempDir(), data))
	require.NoError(t, err)
	out.Reset()
	s.Print(&out)
	requireLine(t, out.String(), "files", "none packed: a replay reads the files the program read from the host again")
	requireLine(t, out.String(), "observed", "0 observations")
}
