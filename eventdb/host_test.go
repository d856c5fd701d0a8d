package eventdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHostRoundTrip(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Host(1)
	require.ErrorIs(t, err, ErrNoHost)

	h := &Host{Start: 123456789 * time.Microsecond, Sched: true, Lost: 3,
		VCPUs:   []VCPU{{Index: 0, TID: 4242}},
		Threads: []HostThread{{TID: 4242, Comm: "reprise"}, {TID: 77, Comm: "stress ng"}}}
	require.NoError(t, db.SetHost(1, h))
	require.NoError(t, db.SetHost(2, &Host{Missing: "host scheduling not recorded: no tracefs"}))
	got, err := db.Host(1)
	require.NoError(t, err)
	require.Equal(t, h, got)
	got, err = db.Host(2)
	require.NoError(t, err)
	require.Equal(t, "host scheduling not recorded: no tracefs", got.Missing)
	require.False(t, got.Sched)
}
