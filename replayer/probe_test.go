package replayer_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

// Probes at mutex_lock's entry and at a call inside mutex_unlock see
// exactly the acquisitions syn_cont counted itself, lock by lock, and the
// probed replay still passes every check, its RAM hash included.
func TestProbesCountLockAcquisitions(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=100", recorder.Auto)
	require.NoError(t, rec.err)

	lock, ok := img.Lookup("mutex_lock")
	require.True(t, ok)
	unlock, ok := img.Lookup("mutex_unlock")
	require.True(t, ok)
	code := func(addr uint64, n int) []byte {
		for _, s := range img.Segments {
			if addr >= s.Addr && addr+uint64(n) <= s.Addr+uint64(len(s.Data)) {
				return s.Data[addr-s.Addr : addr-s.Addr+uint64(n)]
			}
		}
		t.Fatalf("no code at %#x", addr)
		return nil
	}
	require.Equal(t, []byte{0x55}, code(lock.Addr, 1), "mutex_lock should start with push %%rbp")
	// The first call in mutex_unlock: the branch counter's hook.
	var callAt uint64
	for off := uint64(0); off < 32; off++ {
		if code(unlock.Addr+off, 1)[0] == 0xE8 {
			callAt = unlock.Addr + off
			break
		}
	}
	require.NotZero(t, callAt, "no call in mutex_unlock's first bytes")

	perLock := map[uint64]uint64{}
	var unlocks uint64
	res := replayProbed(t, rec.path, []vmm.ProbeSite{
		{Addr: lock.Addr, Orig: code(lock.Addr, 1), RIPRel: -1},
		{Addr: callAt, Orig: code(callAt, 5), RIPRel: -1},
	}, func(addr uint64, regs *kvm.Regs) error {
		switch addr {
		case lock.Addr:
			perLock[regs.RDI]++
		case callAt:
			unlocks++
		}
		return nil
	})

	var total uint64
	for _, tr := range guest.ParseTruth(rec.console) {
		if _, isLock := tr["lock"]; !isLock {
			continue
		}
		addr, err := strconv.ParseUint(tr["addr"], 0, 64)
		require.NoError(t, err)
		want, err := strconv.ParseUint(tr["acquired"], 10, 64)
		require.NoError(t, err)
		require.Equal(t, want, perLock[addr], "lock %s at %#x", tr["lock"], addr)
		total += want
	}
	require.Equal(t, uint64(3200), total)
	require.Equal(t, total, unlocks, "every unlock passes the probed call once")
	require.Equal(t, 2*total, res.Stats.ProbeHits)
	require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash, "probes left a trace in guest memory")
}

func replayProbed(t *testing.T, path string, sites []vmm.ProbeSite, on vmm.ProbeHandler) *replayer.Result {
	t.Helper()
	var out bytes.Buffer
	res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out, Probes: sites, OnProbe: on})
	require.NoError(t, err, fmt.Sprintf("probed replay:\n%s", out.String()))
	return res
}
