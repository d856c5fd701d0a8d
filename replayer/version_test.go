package replayer_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// A tape an older reprise wrote replays with what its recorder hashed:
// testdata/v8-hello.tape (the kit's hello, recorded by format version 8's
// reprise, `reprise record --host off hello`) hashed every byte of its
// 64 MiB at the end, which the replay checks — a hash of the nonzero
// pages, as version 9 takes it, would report a divergence.
func TestReplaysAVersion8Tape(t *testing.T) {
	kvmtest.Require(t)
	out, res := replay(t, filepath.Join("testdata", "v8-hello.tape"))
	require.Equal(t, 8, res.Header.Version)
	require.Contains(t, out, "truth: result=ok")
	require.Zero(t, res.Status)
}

// A tape recorded on one kind of KVM replays on another, whose exits show
// the same guest state differently (vmm.Machine.OtherKVMEventDigests):
// testdata/pvm-branchy.tape was recorded on a PVM host (`reprise record
// --host off branchy`: five timer interrupts, at the register counter's
// guard loads) and v8-hello.tape under KVM on SVM (nested in QEMU), so on
// either kind of host one of them comes from the other.
func TestReplaysATapeOfAnotherKVM(t *testing.T) {
	kvmtest.Require(t)
	hosts := map[string]bool{}
	for _, name := range []string{"pvm-branchy.tape", "v8-hello.tape"} {
		out, res := replay(t, filepath.Join("testdata", name))
		require.Contains(t, out, "truth: result=ok", name)
		require.Zero(t, res.Status, name)
		hosts[res.Header.Host] = true
	}
	require.Len(t, hosts, 2, "the tapes come from two hosts")
}

// A tape of the Linux personality's previous version replays as that
// version ran it: testdata/v11-pipeline.tape (internal/cprog's pipeline,
// static musl, `reprise record --pack --host off -- ./pipeline 20` by
// personality 11: threads, a child, a pipe, a file, a signal) left its
// page entries' accessed and dirty bits to the CPU, which this version
// sets when it makes an entry — replayed so, its RAM would differ at the
// end (`TestOtherPersonalityIsRefused` forges the other way round).
func TestReplaysAPersonality11Tape(t *testing.T) {
	kvmtest.Require(t)
	out, res := replay(t, filepath.Join("testdata", "v11-pipeline.tape"))
	require.Equal(t, 11, res.Header.Linux.Personality)
	require.Contains(t, out, "turns 60 ")
	require.Contains(t, out, " child 7 sigchld 1\n")
	require.Zero(t, res.Status)
}
