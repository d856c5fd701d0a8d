package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTableAligns(t *testing.T) {
	tb := Table{Title: "locks", Columns: []Column{{Name: "lock"}, {Name: "acquired", Right: true}}}
	tb.Add("L2[0]", 8000)
	tb.Add("level1+0x40", 7)
	var b bytes.Buffer
	require.NoError(t, tb.Write(&b))
	require.Equal(t, "locks\n"+
		"lock         acquired\n"+
		"L2[0]            8000\n"+
		"level1+0x40         7\n", b.String())
	require.Equal(t, "-", Percent(1, 0))
	require.Equal(t, "25.0%", Percent(1, 4))
}
