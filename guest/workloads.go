package guest

import (
	"bufio"
	"bytes"
	"regexp"
)

// Workload is one bundled workload, selected by the first word of the
// guest command line.
type Workload struct {
	Name        string
	Description string
}

// workloadsDef is the X-macro list the C side includes; one W(name, "text")
// per line.
const workloadsDef = "workloads/workloads.def"

var workloadLine = regexp.MustCompile(`^\s*W\(\s*(\w+)\s*,\s*"((?:[^"\\]|\\.)*)"\s*\)`)

// Workloads lists the bundled workloads in definition order.
func Workloads() []Workload {
	raw, err := sources.ReadFile(workloadsDef)
	if err != nil {
		panic("guest: embedded " + workloadsDef + " missing: " + err.Error())
	}
	var ws []Workload
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if m := workloadLine.FindStringSubmatch(sc.Text()); m != nil {
			ws = append(ws, Workload{Name: m[1], Description: m[2]})
		}
	}
	return ws
}

// LookupWorkload finds a bundled workload by name.
func LookupWorkload(name string) (Workload, bool) {
	for _, w := range Workloads() {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}
