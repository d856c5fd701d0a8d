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
