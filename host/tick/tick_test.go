package tick_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/host/tick"
)

// fn runs repeatedly until stop, and never after stop has returned, even
// when stop is called twice.
func TestEveryStops(t *testing.T) {
	var n atomic.Int64
	stop := tick.Every(time.Millisecond, func() { n.Add(1) })
	require.Eventually(t, func() bool { return n.Load() >= 3 }, 5*time.Second, time.Millisecond)
	stop()
	stop()
	after := n.Load()
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, after, n.Load(), "fn ran after stop returned")
}
