package probes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/reprise-vm/reprise/host/userfile"
)

// maxFileBytes bounds a probe file: thousands of probes fit in far less.
const maxFileBytes = 16 << 20

// ParseFile reads a probe file: YAML (.yaml, .yml) or JSON (.json), by
// extension, else by its content. See the package documentation for the
// schema.
func ParseFile(path string) ([]Spec, error) {
	data, err := userfile.ReadFile(path, maxFileBytes, "probe file")
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	return ParseFileData(path, data)
}

// ParseFileData parses data as the content of the probe file called name
// (used for the format and in messages).
func ParseFileData(name string, data []byte) ([]Spec, error) {
	isJSON := false
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		isJSON = true
	case ".yaml", ".yml":
	default:
		t := bytes.TrimLeft(data, " \t\r\n\ufeff")
		isJSON = len(t) > 0 && (t[0] == '[' || t[0] == '{') && json.Valid(data)
	}
	if isJSON {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line, col := lineCol(data, se.Offset-1) // Offset is past the bad byte
				return nil, fmt.Errorf("probes: %s:%d:%d: invalid JSON: %v", name, line, col, err)
			}
			return nil, fmt.Errorf("probes: %s: invalid JSON: %v", name, err)
		}
	}
	// JSON is also YAML; one walk over yaml.Node keeps the order of args
	// and the line and column of every value for messages.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		if strings.Contains(msg, "unknown anchor") {
			msg += ` (quote expressions that start with '*': count: "*(arg0+8):4")`
		}
		return nil, fmt.Errorf("probes: %s: %s", name, msg)
	}
	f := &fileParser{name: name}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("probes: %s: no probes (want a list of {name, at, return, args, threads})", name)
	}
	root := doc.Content[0]
	if root.Kind != yaml.SequenceNode {
		return nil, f.errAt(root, "the file must be a list of probes, each {name, at, return, args, threads}")
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("probes: %s: no probes in the list", name)
	}
	specs := make([]Spec, 0, len(root.Content))
	for _, n := range root.Content {
		s, err := f.entry(n)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	if err := checkNames(specs); err != nil {
		return nil, err
	}
	return specs, nil
}

// lineCol converts a byte offset to a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	return line, int(off) - bytes.LastIndexByte(before, '\n')
}

type fileParser struct{ name string }

func (f *fileParser) pos(n *yaml.Node) string {
	return fmt.Sprintf("%s:%d:%d", f.name, n.Line, n.Column)
}

func (f *fileParser) errAt(n *yaml.Node, format string, args ...any) error {
	return &SpecError{Source: f.pos(n), Msg: fmt.Sprintf(format, args...)}
}

// str reads a scalar as a string.
func (f *fileParser) str(key string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", f.errAt(n, "%s must be a string", key)
	}
	return n.Value, nil
}

// entry turns one list element into a Spec.
func (f *fileParser) entry(n *yaml.Node) (Spec, error) {
	if n.Kind != yaml.MappingNode {
		return Spec{}, f.errAt(n, "a probe must be a mapping {name, at, return, args, threads}")
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name", "at", "return", "args", "threads":
		default:
			return Spec{}, f.errAt(k, "unknown key %q (want name, at, return, args, threads)", k.Value)
		}
		if _, dup := fields[k.Value]; dup {
			return Spec{}, f.errAt(k, "key %q given twice", k.Value)
		}
		fields[k.Value] = v
	}
	s := Spec{Source: f.pos(n)}
	if v, ok := fields["name"]; ok {
		name, err := f.str("name", v)
		if err != nil {
			return Spec{}, err
		}
		if name == "" {
			return Spec{}, f.errAt(v, "empty probe name")
		}
		sc := &scanner{text: name, end: len(name), source: f.pos(v)}
		for i := 0; i < len(name); i++ {
			if !isNameChar(name[i]) {
				return Spec{}, sc.errAt(i, "invalid character %q in probe name (want letters, digits and _ . $ + -)", firstRune(name[i:]))
			}
		}
		s.Name = name
	}
	if v, ok := fields["return"]; ok {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
			return Spec{}, f.errAt(v, "return must be true or false")
		}
		s.Return = v.Value == "true" || v.Value == "True" || v.Value == "TRUE"
	}
	at, ok := fields["at"]
	if !ok {
		return Spec{}, f.errAt(n, `missing "at" (SYMBOL[+OFF])`)
	}
	text, err := f.str("at", at)
	if err != nil {
		return Spec{}, err
	}
	sc := &scanner{text: text, end: len(text), source: f.pos(at)}
	if err := sc.target(&s, false); err != nil {
		return Spec{}, err
	}
	if s.Return && s.Off != 0 {
		return Spec{}, sc.errAt(strings.IndexByte(text, '+'),
			"%%return probes the function's return from its entry: write %s without +OFF", s.Symbol)
	}
	if v, ok := fields["args"]; ok {
		if err := f.args(&s, v); err != nil {
			return Spec{}, err
		}
	}
	if v, ok := fields["threads"]; ok {
		if err := f.threads(&s, v); err != nil {
			return Spec{}, err
		}
	}
	s.Text = s.String()
	return s, nil
}

func (f *fileParser) args(s *Spec, n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return f.errAt(n, `args must be a mapping {name: EXPR}, e.g. {lock: rdi, count: "*(arg0+8):4"}`)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name, err := f.str("an argument name", k)
		if err != nil {
			return err
		}
		ksc := &scanner{text: name, end: len(name), source: f.pos(k)}
		if err := ksc.argName(0, name); err != nil {
			return err
		}
		if seen[name] {
			return f.errAt(k, "duplicate argument name %q", name)
		}
		seen[name] = true
		text, err := f.str("argument "+name, v)
		if err != nil {
			return err
		}
		sc := &scanner{text: text, end: len(text), ret: s.Return, source: f.pos(v)}
		e, err := sc.expr(0)
		if err != nil {
			return err
		}
		s.Args = append(s.Args, Arg{Name: name, Expr: e})
	}
	return nil
}

func (f *fileParser) threads(s *Spec, n *yaml.Node) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for _, it := range items {
		var t uint32
		if it.Kind != yaml.ScalarNode || it.Tag != "!!int" || it.Decode(&t) != nil {
			return f.errAt(it, "threads must be a list of thread ids (0 to 4294967295), got %q", it.Value)
		}
		s.Threads = addThreads(s.Threads, []uint32{t})
	}
	return nil
}
