package devices_test

import (
	"bytes"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/devices"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// diskFill submits reads until one is refused, then completes the rest:
// the disk is idle again with one more refusal counted.
func diskFill(t *testing.T, ram *memory.RAM, d *devices.Disk) [][]byte {
	for i := range abi.DiskMaxQueued + 1 {
		desc := uint64(0x11000 + 64*i)
		putReq(t, ram, desc, abi.DiskRead, 1, uint64(i%8), 0x40000)
		submit(t, d, desc)
	}
	require.Equal(t, uint32(abi.DiskError), status(t, ram, 0x11000+64*abi.DiskMaxQueued), "the last must be refused")
	var digests [][]byte
	for range abi.DiskMaxQueued {
		dg, err := d.Complete()
		require.NoError(t, err)
		digests = append(digests, dg)
	}
	return digests
}

// diskDriven drives a synchronous (replay) disk through its port: two
// sectors written, a descriptor dropped, a submission refused; then idle.
func diskDriven(t *testing.T, ram *memory.RAM, store *devices.DiskStore) *devices.Disk {
	d := devices.NewDisk(ram, store, nil)
	t.Cleanup(d.Close)
	require.NoError(t, ram.Write(0x30000, bytes.Repeat([]byte("snapshot"), 128)))
	putReq(t, ram, 0x10000, abi.DiskWrite, 2, 3, 0x30000)
	submit(t, d, 0x10000)
	_, err := d.Complete()
	require.NoError(t, err)
	submit(t, d, ram.Size()-8)
	diskFill(t, ram, d)
	s, err := d.Save()
	require.NoError(t, err)
	require.Equal(t, devices.DiskState{Sectors: 32, OverlaySectors: 2, Dropped: 1, Refused: 1}, s)
	return d
}

func TestDiskSaveRestore(t *testing.T) {
	ram := newRAM(t)
	store, _, _ := openStore(t, 32)
	d := diskDriven(t, ram, store)
	s, err := d.Save()
	require.NoError(t, err)

	// The restored disk gets the same store: the guest's writes are the
	// store's to carry, not the device's.
	r := devices.NewDisk(ram, store, nil)
	t.Cleanup(r.Close)
	require.NoError(t, r.Restore(s))
	rs, err := r.Save()
	require.NoError(t, err)
	require.Equal(t, s, rs)
	require.Equal(t, uint32(32), readPort(r, 4))
	require.Equal(t, readPort(d, 4), readPort(r, 4))

	// The same next requests give the same completions and the counters go
	// on from where they were.
	for _, u := range []*devices.Disk{d, r} {
		submit(t, u, ram.Size()-8)
	}
	require.Equal(t, diskFill(t, ram, d), diskFill(t, ram, r))
	ds, err := d.Save()
	require.NoError(t, err)
	rs, err = r.Save()
	require.NoError(t, err)
	require.Equal(t, devices.DiskState{Sectors: 32, OverlaySectors: 2, Dropped: 2, Refused: 2}, rs)
	require.Equal(t, ds, rs)
}

// Requests in flight are never dropped from a snapshot: Save refuses,
// whether they wait for the host (queue) or for the machine (done).
func TestDiskSaveBusy(t *testing.T) {
	ram := newRAM(t)
	store, _, _ := openStore(t, 32)
	d := devices.NewDisk(ram, store, nil)
	t.Cleanup(d.Close)
	putReq(t, ram, 0x10000, abi.DiskRead, 1, 0, 0x40000)
	putReq(t, ram, 0x10040, abi.DiskRead, 1, 1, 0x40000)
	submit(t, d, 0x10000)
	submit(t, d, 0x10040)
	_, err := d.Save()
	require.ErrorIs(t, err, devices.ErrDiskBusy)
	require.ErrorContains(t, err, "2 requests")
	_, err = d.Complete()
	require.NoError(t, err)
	_, err = d.Save()
	require.ErrorContains(t, err, "1 request submitted")
	_, err = d.Complete()
	require.NoError(t, err)
	_, err = d.Save()
	require.NoError(t, err)

	var raised atomic.Int32
	a := devices.NewDisk(ram, store, func() { raised.Add(1) })
	t.Cleanup(a.Close)
	submit(t, a, 0x10000)
	require.Eventually(t, func() bool { return raised.Load() == 1 }, 5*time.Second, time.Millisecond)
	_, err = a.Save()
	require.ErrorIs(t, err, devices.ErrDiskBusy, "I/O done but not completed into the guest is in flight")
	_, err = a.Complete()
	require.NoError(t, err)
	_, err = a.Save()
	require.NoError(t, err)
}

func TestDiskStateJSON(t *testing.T) {
	requireRoundTrip(t, devices.DiskState{Sectors: 1 << 40, OverlaySectors: 3, Dropped: 1<<64 - 1, Refused: 9})
}

func TestDiskRestoreRefuses(t *testing.T) {
	ram := newRAM(t)
	store, basePath, _ := openStore(t, 32)
	good, err := diskDriven(t, ram, store).Save()
	require.NoError(t, err)

	// restoreInto checks that r refuses s naming field and is unchanged.
	restoreInto := func(t *testing.T, r *devices.Disk, s devices.DiskState, field string) {
		submit(t, r, ram.Size()-8) // Dropped = 1: something to lose
		before, err := r.Save()
		require.NoError(t, err)
		requireStateError(t, r.Restore(s), "disk", field)
		after, err := r.Save()
		require.NoError(t, err)
		require.Equal(t, before, after, "a refused Restore changed the disk")
	}
	for _, tc := range []struct {
		name  string
		forge func(*devices.DiskState)
		field string
	}{
		{"a larger disk", func(s *devices.DiskState) { s.Sectors = 33 }, "Sectors"},
		{"no disk", func(s *devices.DiskState) { s.Sectors = 0 }, "Sectors"},
		{"more writes than the overlay holds", func(s *devices.DiskState) { s.OverlaySectors = 3 }, "OverlaySectors"},
		{"no writes", func(s *devices.DiskState) { s.OverlaySectors = 0 }, "OverlaySectors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			s.Refused = 7 // would change the device if applied
			tc.forge(&s)
			restoreInto(t, devices.NewDisk(ram, store, nil), s, tc.field)
		})
	}
	t.Run("a fresh overlay", func(t *testing.T) {
		fresh, err := devices.OpenDiskStore(basePath, filepath.Join(t.TempDir(), "overlay"))
		require.NoError(t, err)
		t.Cleanup(func() { fresh.Close() })
		restoreInto(t, devices.NewDisk(ram, fresh, nil), good, "OverlaySectors")
	})
	t.Run("no disk attached", func(t *testing.T) {
		restoreInto(t, devices.NewDisk(ram, nil, nil), good, "Sectors")
	})
	t.Run("requests in flight", func(t *testing.T) {
		r := devices.NewDisk(ram, store, nil)
		putReq(t, ram, 0x10000, abi.DiskRead, 1, 0, 0x40000)
		submit(t, r, 0x10000)
		require.ErrorIs(t, r.Restore(good), devices.ErrDiskBusy)
		_, err := r.Complete()
		require.NoError(t, err)
		s, err := r.Save()
		require.NoError(t, err)
		require.Equal(t, devices.DiskState{Sectors: 32, OverlaySectors: 2}, s, "a refused Restore changed the disk")
	})
}
