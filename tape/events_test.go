package tape

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// drain reads r to its end: its events, the host frames it passed (as
// "count:body") and the error it ended with.
func drain(r *Reader) (evs []*Event, hosts []string, err error) {
	r.OnHost(func(count uint32, body []byte) error {
		hosts = append(hosts, fmt.Sprintf("%d:%s", count, body))
		return nil
	})
	for {
		e, err := r.Next()
		if err != nil {
			return evs, hosts, err
		}
		evs = append(evs, e)
	}
}

// Readers of one opened tape's events read it at once, each from the
// first chunk, with the header read once: every one sees every event and
// host frame, as a Reader of its own would. Whole is the file as written.
func TestEventsOfOneOpenedTape(t *testing.T) {
	data, want, hosts := hostTape(t)
	path := writeFile(t, t.TempDir(), data)
	before := Opens()
	r, err := Open(path)
	require.NoError(t, err)
	defer r.Close()
	var wg sync.WaitGroup
	for range 4 {
		ev, err := r.Events()
		require.NoError(t, err)
		require.Same(t, r.Header(), ev.Header())
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, gotHosts, err := drain(ev)
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, want, got)
			require.Equal(t, hosts, gotHosts)
		}()
	}
	wg.Wait()
	got, _, err := drain(r) // the first Reader is where it was: at the first chunk
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, want, got)
	whole, err := r.Whole()
	require.NoError(t, err)
	sum := sha256.New()
	_, err = io.Copy(sum, whole)
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256(data), [32]byte(sum.Sum(nil)))
	require.Equal(t, int64(len(data)), r.Size())
	require.Equal(t, int64(1), Opens()-before)

	nr, err := NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	_, err = nr.Events()
	require.Error(t, err, "a Reader of a stream has no file to read again")
}
