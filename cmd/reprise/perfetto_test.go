package main

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// textField is one field of a protobuf message as protoc --decode prints
// it: a name and either a scalar's text or a message's fields.
type textField struct {
	name   string
	value  string // a scalar; a string unquoted
	fields []*textField
}

func (f *textField) get(name string) []*textField {
	var out []*textField
	for _, c := range f.fields {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

func (f *textField) one(t *testing.T, name string) *textField {
	t.Helper()
	fs := f.get(name)
	require.Len(t, fs, 1, "field %s of %s", name, f.name)
	return fs[0]
}

func (f *textField) uint(t *testing.T, name string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(f.one(t, name).value, 10, 64)
	require.NoError(t, err)
	return v
}

// perfettoTrace is what a Perfetto trace holds.
type perfettoTrace struct {
	tracks map[string]uint64 // track name → uuid
	slices map[string]int    // slice name → count
}

// decodePerfetto decodes the trace at path with protoc, an independent
// decoder, against Perfetto's messages (testdata/perfetto_subset.proto:
// their names and field numbers), and checks what Perfetto needs: no field
// it does not know, one packet sequence whose first packet clears the
// incremental state, every name_iid interned before it is used, a begin
// and an end for every slice, on a track a descriptor declares.
func decodePerfetto(t *testing.T, path string) perfettoTrace {
	t.Helper()
	kvmtest.RequireTools(t, "protoc")
	in, err := os.Open(path)
	require.NoError(t, err)
	defer in.Close()
	cmd := exec.Command("protoc", "--proto_path=testdata", "--decode=subset.Trace", "perfetto_subset.proto")
	cmd.Stdin = in
	out, err := cmd.Output()
	require.NoError(t, err, "protoc --decode")
	root := parseText(t, string(out))
	pt := perfettoTrace{tracks: map[string]uint64{}, slices: map[string]int{}}
	known := map[uint64]bool{}
	names := map[uint64]string{}
	open := map[uint64]int{}
	packets := root.get("packet")
	require.NotEmpty(t, packets)
	require.Equal(t, uint64(1), packets[0].uint(t, "sequence_flags")&1, "the first packet clears the incremental state")
	for _, p := range packets {
		require.Equal(t, uint64(1), p.uint(t, "trusted_packet_sequence_id"), "one sequence")
		for _, d := range p.get("track_descriptor") {
			uuid := d.uint(t, "uuid")
			known[uuid] = true
			if n := d.get("name"); len(n) == 1 {
				pt.tracks[n[0].value] = uuid
			}
		}
		for _, id := range p.get("interned_data") {
			for _, en := range id.get("event_names") {
				names[en.uint(t, "iid")] = en.one(t, "name").value
			}
		}
		for _, ev := range p.get("track_event") {
			track := ev.uint(t, "track_uuid")
			require.True(t, known[track], "an event on track %d, which no descriptor declared", track)
			require.NotEmpty(t, p.get("timestamp"), "an event without a timestamp")
			switch ev.one(t, "type").value {
			case "TYPE_SLICE_BEGIN":
				name, ok := names[ev.uint(t, "name_iid")]
				require.True(t, ok, "name_iid %d used before it was interned", ev.uint(t, "name_iid"))
				pt.slices[name]++
				open[track]++
			case "TYPE_SLICE_END":
				open[track]--
				require.GreaterOrEqual(t, open[track], 0, "an end without a begin on track %d", track)
			default:
				t.Fatalf("event type %s", ev.one(t, "type").value)
			}
		}
	}
	for track, n := range open {
		require.Zero(t, n, "slices left open on track %d", track)
	}
	return pt
}

// parseText parses protoc --decode's text: "name: value" for a scalar,
// "name {" ... "}" for a message. A field protoc does not know prints as
// its number, which fails the test: the trace holds nothing Perfetto's
// messages do not name.
func parseText(t *testing.T, text string) *textField {
	t.Helper()
	root := &textField{}
	stack := []*textField{root}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		top := stack[len(stack)-1]
		switch {
		case line == "":
		case line == "}":
			stack = stack[:len(stack)-1]
		case strings.HasSuffix(line, " {"):
			f := &textField{name: strings.TrimSuffix(line, " {")}
			require.NotRegexp(t, `^\d`, f.name, "a field Perfetto's messages do not name")
			top.fields = append(top.fields, f)
			stack = append(stack, f)
		default:
			k, v, ok := strings.Cut(line, ": ")
			require.True(t, ok, "protoc line %q", line)
			require.NotRegexp(t, `^\d`, k, "a field Perfetto's messages do not name")
			if strings.HasPrefix(v, `"`) {
				u, err := strconv.Unquote(v)
				if err == nil {
					v = u
				}
			}
			top.fields = append(top.fields, &textField{name: k, value: v})
		}
	}
	require.NoError(t, sc.Err())
	require.Len(t, stack, 1, "unbalanced protoc output")
	return root
}
