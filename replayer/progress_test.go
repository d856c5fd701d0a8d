package replayer_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
)

// A replay that lasts reports its progress and clears the line at the end.
func TestReplayShowsProgress(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=400 work=8000", recorder.Auto)
	var progress bytes.Buffer
	_, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: io.Discard, Progress: &progress})
	require.NoError(t, err)
	out := progress.String()
	require.Contains(t, out, "replaying:")
	require.Contains(t, out, "% of the tape")
	require.True(t, strings.HasSuffix(out, "\r\033[K"), "the progress line is not cleared: %q", out)
}
