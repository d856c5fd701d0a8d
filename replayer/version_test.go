package replayer_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
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

// Tapes of the Linux personality's earlier versions replay as those
// versions ran them: testdata/vN-pipeline.tape is internal/cprog's
// pipeline, static musl, `reprise record --pack --host off -- ./pipeline
// 20` by personality N (threads, a child, a pipe, a file, a signal). 11
// left its page entries' accessed and dirty bits to the CPU, which later
// versions set when they make an entry; 12 copied the tables to a new
// root for a page mapped where none was, which 13 maps in place — each
// replayed as this version runs, its RAM would differ at the end
// (`TestOtherPersonalityIsRefused` forges the other way round). The v11
// tape was recorded on a CPU with AVX-512: a host whose KVM cannot give
// a guest that state refuses it, saying so, rather than fail in an ioctl.
func TestReplaysEarlierPersonalities(t *testing.T) {
	kvmtest.Require(t)
	for _, v := range []int{11, 12} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			path := filepath.Join("testdata", fmt.Sprintf("v%d-pipeline.tape", v))
			if missing := recordedXSave(t, path) &^ hostXSave(t); missing != 0 {
				_, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: io.Discard})
				require.ErrorContains(t, err, "XSAVE state this host's KVM cannot give a guest")
				require.ErrorContains(t, err, fmt.Sprintf("XCR0 %#x of", missing))
				return
			}
			out, res := replay(t, path)
			require.Equal(t, v, res.Header.Linux.Personality)
			require.Contains(t, out, "turns 60 ")
			require.Contains(t, out, " child 7 sigchld 1\n")
			require.Zero(t, res.Status)
		})
	}
}

// xsaveLow are the XCR0 bits of the components up to PKRU, which an
// XSAVE image of KVM's 4 KiB holds.
const xsaveLow = 0x2ff

// recordedXSave is the XSAVE components the tape's CPUID table offers.
func recordedXSave(t *testing.T, path string) uint64 {
	t.Helper()
	r, err := tape.Open(path)
	require.NoError(t, err)
	defer r.Close()
	for _, e := range r.Header().CPUID {
		if e.Function == 0xd && e.Index == 0 {
			return (uint64(e.EAX) | uint64(e.EDX)<<32) & xsaveLow
		}
	}
	return 0
}

// hostXSave is the XSAVE components this host's KVM offers a guest.
func hostXSave(t *testing.T) uint64 {
	t.Helper()
	sys, err := kvm.Open(kvm.DevicePath)
	require.NoError(t, err)
	defer sys.Close()
	entries, err := sys.SupportedCPUID()
	require.NoError(t, err)
	for _, e := range entries {
		if e.Function == 0xd && e.Index == 0 {
			return (uint64(e.EAX) | uint64(e.EDX)<<32) & xsaveLow
		}
	}
	return 0
}
