package guest

import "strings"

// TruthPrefix starts every ground-truth line a workload prints.
const TruthPrefix = "truth: "

// Truth is one ground-truth line: space-separated key=value pairs.
type Truth map[string]string

// ParseTruth extracts the ground-truth lines from a guest's console output,
// in order. Tests and tools compare their findings against these.
func ParseTruth(console string) []Truth {
	var out []Truth
	for _, line := range strings.Split(console, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), TruthPrefix)
		if !ok {
			continue
		}
		t := Truth{}
		for _, f := range strings.Fields(rest) {
			if k, v, ok := strings.Cut(f, "="); ok {
				t[k] = v
			}
		}
		out = append(out, t)
	}
	return out
}

// Result returns the final truth line (the one with a "result" key), or
// nil if the workload printed none.
func Result(truths []Truth) Truth {
	for i := len(truths) - 1; i >= 0; i-- {
		if _, ok := truths[i]["result"]; ok {
			return truths[i]
		}
	}
	return nil
}

// Select returns the truth lines whose key k equals v.
func Select(truths []Truth, k, v string) []Truth {
	var out []Truth
	for _, t := range truths {
		if t[k] == v {
			out = append(out, t)
		}
	}
	return out
}
