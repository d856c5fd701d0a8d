package recorder

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/pmu"
	"github.com/reprise-vm/reprise/tape"
)

func TestChoosePositionSource(t *testing.T) {
	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	counted, err := elffile.OpenImage(k.Image())
	require.NoError(t, err)
	plain, err := elffile.OpenImage(k.PlainImage())
	require.NoError(t, err)

	for _, tc := range []struct {
		want tape.PositionSource
		img  *elffile.Image
		got  tape.PositionSource
		err  string
	}{
		{Auto, counted, tape.SourceSWBC, ""},
		{"", counted, tape.SourceSWBC, ""},
		{Auto, plain, tape.SourceExitSync, ""},
		{tape.SourceExitSync, counted, tape.SourceExitSync, ""},
		{tape.SourceSWBC, counted, tape.SourceSWBC, ""},
		{"bogus", counted, "", "unknown position source"},
	} {
		got, err := ChoosePositionSource(tc.want, tc.img)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.got, got, "%q on %s", tc.want, tc.img.Path)
	}

	// pmu: refused with the detector's reason where there is no PMU, and
	// refused honestly where there is one (the machine cannot drive it yet).
	_, err = ChoosePositionSource(tape.SourcePMU, counted)
	require.Error(t, err)
	if pmu.Detect() != nil {
		require.ErrorContains(t, err, "pmu:")
	} else {
		require.ErrorContains(t, err, "does not drive it yet")
	}
}

// The machine tells the hook's exits from user code's own writes to the
// port by the hook's extent, so a recording needs the symbol's size.
func TestUnsizedHookIsRefused(t *testing.T) {
	img, err := elffile.OpenImage(kvmtest.AsmImage(t, `
.globl _start, __sanitizer_cov_trace_pc
_start:
__sanitizer_cov_trace_pc:
	ret
`))
	require.NoError(t, err)
	_, err = Record(context.Background(), Options{Image: img, PositionSource: tape.SourceSWBC, Output: filepath.Join(t.TempDir(), "t.tape")})
	require.ErrorContains(t, err, "has no size")
}
