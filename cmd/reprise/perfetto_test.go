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

// rawField is one field of a protobuf message as protoc --decode_raw
// prints it: a number and either a scalar's text or a message's fields.
type rawField struct {
	num    int
	value  string // a scalar; a string unquoted
	fields []*rawField
}

func (f *rawField) get(num int) []*rawField {
	var out []*rawField
	for _, c := range f.fields {
		if c.num == num {
			out = append(out, c)
		}
	}
	return out
}

func (f *rawField) one(t *testing.T, num int) *rawField {
	t.Helper()
	fs := f.get(num)
	require.Len(t, fs, 1, "field %d of %d", num, f.num)
	return fs[0]
}

func (f *rawField) uint(t *testing.T, num int) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(f.one(t, num).value, 10, 64)
	require.NoError(t, err)
	return v
}

// perfettoTrace is what a Perfetto trace holds, by the field numbers of
// Perfetto's protos (protos/perfetto/trace: Trace.packet = 1; in a
// TracePacket, timestamp = 8, trusted_packet_sequence_id = 10,
// track_event = 11, interned_data = 12, sequence_flags = 13,
// track_descriptor = 60; TrackDescriptor uuid = 1, name = 2, process = 3;
// TrackEvent type = 9 (1 begin, 2 end), name_iid = 10, track_uuid = 11;
// InternedData.event_names = 2 of EventName iid = 1, name = 2).
type perfettoTrace struct {
	tracks map[string]uint64 // track name → uuid
	slices map[string]int    // slice name → count
}

// decodePerfetto decodes the trace at path with protoc --decode_raw, an
// independent decoder of the wire format, and checks what Perfetto needs:
// one packet sequence whose first packet clears the incremental state,
// every name_iid interned before it is used, a begin and an end for
// every slice, on a track a descriptor declares.
func decodePerfetto(t *testing.T, path string) perfettoTrace {
	t.Helper()
	kvmtest.RequireTools(t, "protoc")
	in, err := os.Open(path)
	require.NoError(t, err)
	defer in.Close()
	cmd := exec.Command("protoc", "--decode_raw")
	cmd.Stdin = in
	out, err := cmd.Output()
	require.NoError(t, err, "protoc --decode_raw")
	root := parseRaw(t, string(out))
	pt := perfettoTrace{tracks: map[string]uint64{}, slices: map[string]int{}}
	known := map[uint64]bool{}
	names := map[uint64]string{}
	open := map[uint64]int{}
	packets := root.get(1)
	require.NotEmpty(t, packets)
	require.Equal(t, uint64(1), packets[0].uint(t, 13)&1, "the first packet clears the incremental state")
	for _, p := range packets {
		require.Equal(t, uint64(1), p.uint(t, 10), "one sequence")
		for _, d := range p.get(60) {
			uuid := d.uint(t, 1)
			known[uuid] = true
			if n := d.get(2); len(n) == 1 {
				pt.tracks[n[0].value] = uuid
			}
		}
		for _, id := range p.get(12) {
			for _, en := range id.get(2) {
				names[en.uint(t, 1)] = en.one(t, 2).value
			}
		}
		for _, ev := range p.get(11) {
			track := ev.uint(t, 11)
			require.True(t, known[track], "an event on track %d, which no descriptor declared", track)
			require.NotEmpty(t, p.get(8), "an event without a timestamp")
			switch ev.uint(t, 9) {
			case 1:
				name, ok := names[ev.uint(t, 10)]
				require.True(t, ok, "name_iid %d used before it was interned", ev.uint(t, 10))
				pt.slices[name]++
				open[track]++
			case 2:
				open[track]--
				require.GreaterOrEqual(t, open[track], 0, "an end without a begin on track %d", track)
			default:
				t.Fatalf("event type %s", ev.one(t, 9).value)
			}
		}
	}
	for track, n := range open {
		require.Zero(t, n, "slices left open on track %d", track)
	}
	return pt
}

// parseRaw parses protoc --decode_raw's text: "N: value" for a scalar,
// "N {" ... "}" for a message.
func parseRaw(t *testing.T, text string) *rawField {
	t.Helper()
	root := &rawField{}
	stack := []*rawField{root}
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
			num, err := strconv.Atoi(strings.TrimSuffix(line, " {"))
			require.NoError(t, err, line)
			f := &rawField{num: num}
			top.fields = append(top.fields, f)
			stack = append(stack, f)
		default:
			k, v, ok := strings.Cut(line, ": ")
			require.True(t, ok, "protoc line %q", line)
			num, err := strconv.Atoi(k)
			require.NoError(t, err, line)
			if strings.HasPrefix(v, `"`) {
				u, err := strconv.Unquote(v)
				if err == nil {
					v = u
				}
			}
			top.fields = append(top.fields, &rawField{num: num, value: v})
		}
	}
	require.NoError(t, sc.Err())
	require.Len(t, stack, 1, "unbalanced protoc output")
	return root
}
