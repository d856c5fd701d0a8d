package probes

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const yamlProbes = `# probes for the lock tools
- name: acquire
  at: mutex_lock
  args:
    lock: rdi
    count: "*(arg0+8):4"
  threads: [2, 3]
- at: mutex_lock
  return: true
  args: {ok: retval}
- at: mutex_unlock+0x4
- at: prof_a%return
  threads: 5
`

// The same first two probes, in JSON indented with tabs.
const jsonProbes = `[
	{"name": "acquire", "at": "mutex_lock", "args": {"lock": "rdi", "count": "*(arg0+8):4"}, "threads": [2, 3]},
	{"at": "mutex_lock", "return": true, "args": {"ok": "retval"}}
]`

func TestParseFileYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probes.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yamlProbes), 0o644))
	specs, err := ParseFile(path)
	require.NoError(t, err)
	require.Len(t, specs, 4)
	checkFirstTwo(t, specs)
	require.Equal(t, path+":2:3", specs[0].Source)
	require.Equal(t, "mutex_unlock+0x4", specs[2].Name)
	require.Equal(t, uint64(4), specs[2].Off)
	require.Equal(t, "prof_a_return", specs[3].Name)
	require.True(t, specs[3].Return)
	require.Equal(t, []uint32{5}, specs[3].Threads)
}

func TestParseFileJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probes.json")
	require.NoError(t, os.WriteFile(path, []byte(jsonProbes), 0o644))
	specs, err := ParseFile(path)
	require.NoError(t, err)
	require.Len(t, specs, 2)
	checkFirstTwo(t, specs)
	require.Equal(t, path+":2:2", specs[0].Source)
}

func checkFirstTwo(t *testing.T, specs []Spec) {
	t.Helper()
	a := specs[0]
	require.Equal(t, "acquire", a.Name)
	require.Equal(t, "mutex_lock", a.Symbol)
	require.False(t, a.Return)
	require.Len(t, a.Args, 2)
	require.Equal(t, "lock", a.Args[0].Name, "args keep the file's order")
	require.Equal(t, "rdi", a.Args[0].Expr.String())
	require.Equal(t, "count", a.Args[1].Name)
	require.Equal(t, "*(rdi+0x8):4", a.Args[1].Expr.String())
	require.Equal(t, []uint32{2, 3}, a.Threads)
	require.Equal(t, "acquire=mutex_lock lock=rdi count=*(rdi+0x8):4 @tid=2,3", a.Text)

	r := specs[1]
	require.Equal(t, "mutex_lock_return", r.Name)
	require.True(t, r.Return)
	require.Equal(t, "ok", r.Args[0].Name)
	require.Equal(t, "rax", r.Args[0].Expr.String())
	require.Equal(t, "mutex_lock_return=mutex_lock%return ok=rax", r.Text)
}

func TestParseFileSniffing(t *testing.T) {
	for name, data := range map[string]string{
		"probes.txt":  jsonProbes,
		"probes":      yamlProbes,
		"probes.conf": "- at: mutex_lock\n",
		"flow.txt":    "[{at: mutex_lock}, {at: mutex_unlock}]", // YAML flow style, not JSON
	} {
		specs, err := ParseFileData(name, []byte(data))
		require.NoError(t, err, name)
		require.NotEmpty(t, specs)
		require.Equal(t, "mutex_lock", specs[0].Symbol)
	}
}

func TestParseFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		msg        string // the whole error
	}{
		{"x.yaml", "- at: f\n  agrs: {a: rdi}\n",
			`probes: x.yaml:2:3: unknown key "agrs" (want name, at, return, args, threads)`},
		{"x.yaml", "- name: f\n", `probes: x.yaml:1:3: missing "at" (SYMBOL[+OFF])`},
		{"x.yaml", "- at: f\n  args: {a: \"*rdi:3\"}\n",
			`probes: x.yaml:2:13: "*rdi:3" column 5: bad width ":3" (want :1, :2, :4 or :8)`},
		{"x.yaml", "- at: f\n  args: {a: retval}\n",
			`probes: x.yaml:2:13: "retval" column 1: retval is only defined at a %return probe (use rax to read the register anyway)`},
		{"x.yaml", "- at: f\n  return: true\n  args: {a: retval}\n", ""},
		{"x.yaml", "- at: f%return\n  args: {a: retval}\n", ""},
		{"x.yaml", "- at: f\n- at: f\n",
			`probes: x.yaml:2:3: "f=f": duplicate probe name "f" (probe 1, "f=f", has it too)`},
		{"x.yaml", "- at: f\n  args: {a: rdi, a: rsi}\n", `probes: x.yaml:2:18: duplicate argument name "a"`},
		{"x.yaml", "- at: f\n  args: {\"\": rdi}\n", `probes: x.yaml:2:10: empty argument name`},
		{"x.yaml", "- at: f\n  args: {a b: rdi}\n", `probes: x.yaml:2:10: "a b" column 2: invalid character " " in argument name (want letters, digits, _ and .)`},
		{"x.yaml", "- at: f\n  args: {a: *rdi}\n",
			`probes: x.yaml: yaml: unknown anchor 'rdi' referenced (quote expressions that start with '*': count: "*(arg0+8):4")`},
		{"x.yaml", "- at: f\n  args: [rdi]\n", `probes: x.yaml:2:9: args must be a mapping {name: EXPR}, e.g. {lock: rdi, count: "*(arg0+8):4"}`},
		{"x.yaml", "- at: f\n  name: \"\"\n", `probes: x.yaml:2:9: empty probe name`},
		{"x.yaml", "- at: f\n  name: a=b\n", `probes: x.yaml:2:9: "a=b" column 2: invalid character "=" in probe name (want letters, digits and _ . $ + -)`},
		{"x.yaml", "- at: x=f\n", `probes: x.yaml:1:7: "x=f" column 2: unexpected '=' in a location (want SYMBOL[+OFF][%return])`},
		{"x.yaml", "- at: f+4\n  return: true\n", `probes: x.yaml:1:7: "f+4" column 2: %return probes the function's return from its entry: write f without +OFF`},
		{"x.yaml", "- at: f+4%return\n", `probes: x.yaml:1:7: "f+4%return" column 2: %return probes the function's return from its entry: write f%return, without +OFF`},
		{"x.yaml", "- at: f\n  return: 1\n", `probes: x.yaml:2:11: return must be true or false`},
		{"x.yaml", "- at: f\n  at: g\n", `probes: x.yaml:2:3: key "at" given twice`},
		{"x.yaml", "- at: [f]\n", `probes: x.yaml:1:7: at must be a string`},
		{"x.yaml", "- at: f\n  threads: [-1]\n", `probes: x.yaml:2:13: threads must be a list of thread ids (0 to 4294967295), got "-1"`},
		{"x.yaml", "- at: f\n  threads: [a]\n", `probes: x.yaml:2:13: threads must be a list of thread ids (0 to 4294967295), got "a"`},
		{"x.yaml", "- at: f\n  threads: [4294967296]\n", `probes: x.yaml:2:13: threads must be a list of thread ids (0 to 4294967295), got "4294967296"`},
		{"x.yaml", "at: f\n", `probes: x.yaml:1:1: the file must be a list of probes, each {name, at, return, args, threads}`},
		{"x.yaml", "- f\n", `probes: x.yaml:1:3: a probe must be a mapping {name, at, return, args, threads}`},
		{"x.yaml", "", `probes: x.yaml: no probes (want a list of {name, at, return, args, threads})`},
		{"x.yaml", "[]\n", `probes: x.yaml: no probes in the list`},
		{"x.yaml", "- at: f\n  args: {a: rdi\n", ``}, // a YAML syntax error; checked below
		{"x.json", "[\n  {\"at\": \"f\",}\n]", `probes: x.json:2:14: invalid JSON: invalid character '}' looking for beginning of object key string`},
		{"x.json", `[{"at": "f", "args": {"a": "eax"}}]`, `probes: x.json:1:28: "eax" column 1: unknown register "eax" (want one of the 16 64-bit GPRs, rip, arg0..arg5 or retval)`},
		{"x.json", `{"at": "f"}`, `probes: x.json:1:1: the file must be a list of probes, each {name, at, return, args, threads}`},
	} {
		t.Run(tc.data, func(t *testing.T) {
			specs, err := ParseFileData(tc.name, []byte(tc.data))
			if tc.msg == "" && tc.data != "- at: f\n  args: {a: rdi\n" {
				require.NoError(t, err)
				require.Len(t, specs, 1)
				return
			}
			require.Error(t, err)
			if tc.msg == "" {
				require.Contains(t, err.Error(), "probes: x.yaml: yaml: line")
				return
			}
			require.EqualError(t, err, tc.msg)
		})
	}
}

func TestParseFileMissing(t *testing.T) {
	_, err := ParseFile(filepath.Join(t.TempDir(), "none.yaml"))
	require.ErrorContains(t, err, "probes: open ")
	require.True(t, errors.Is(err, os.ErrNotExist))
}
