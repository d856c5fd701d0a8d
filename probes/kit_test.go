package probes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/guest"
)

// The lock tools' probe points in the real guest kit (guest/README.md:
// "lock address in rdi, result in rax").
func TestKitLockProbes(t *testing.T) {
	img := kitImage(t)
	p := resolve1(t, img,
		"acquire=mutex_lock lock=rdi acquired=*(rdi+8)",
		"mutex_lock%return lock=rdi r=retval",
		"mutex_unlock lock=arg0",
		"prof_a",
		"prof_a%return",
	)
	lock, unlock, profA := sym(t, img, "mutex_lock"), sym(t, img, "mutex_unlock"), sym(t, img, "prof_a")
	require.Len(t, p.Sites, 3)
	s, ok := p.SiteAt(lock.Addr)
	require.True(t, ok)
	require.Equal(t, []uint32{0, 1}, s.Probes, "mutex_lock's entry and return probes share its entry site")
	s, ok = p.SiteAt(unlock.Addr)
	require.True(t, ok)
	require.Equal(t, []uint32{2}, s.Probes)
	s, ok = p.SiteAt(profA.Addr)
	require.True(t, ok)
	require.Equal(t, []uint32{3, 4}, s.Probes)
	for _, s := range p.Sites {
		require.Equal(t, s.Len, len(s.Orig))
		require.NotEqual(t, byte(0xCC), s.Orig[0])
	}
}

func TestKitInsideInstruction(t *testing.T) {
	img := kitImage(t)
	lock := sym(t, img, "mutex_lock")
	// The first instruction longer than one byte; a probe one byte into it
	// is refused with its boundaries.
	var start uint64
	var n int
	for _, off := range boundaries(t, img, lock) {
		s, err := DecodeSite(img, lock.Addr+off)
		require.NoError(t, err)
		if s.Len > 1 {
			start, n = off, s.Len
			break
		}
	}
	require.NotZero(t, n)
	err := resolveErr(t, img, fmt.Sprintf("mutex_lock+%d", start+1))
	require.ErrorContains(t, err, fmt.Sprintf("mutex_lock+%#x is inside the instruction at +%#x (%d bytes: ", start+1, start, n))
	require.ErrorContains(t, err, fmt.Sprintf("); boundaries are +%#x and +%#x", start, start+uint64(n)))
}

func TestKitCallAndReturnSite(t *testing.T) {
	img := openKit(t, (*guest.Kit).HookImage)
	fn := sym(t, img, "barrier_wait")
	hook := sym(t, img, "__sanitizer_cov_trace_pc")
	// The first call in a function of the trace-pc kit is the branch
	// counter's hook.
	var call *Site
	for _, off := range boundaries(t, img, fn) {
		p := resolve1(t, img, DefaultName("barrier_wait", off, false))
		if p.Sites[0].Branch == BranchCall {
			call = &p.Sites[0]
			break
		}
	}
	require.NotNil(t, call, "no call in barrier_wait")
	require.False(t, call.Indirect)
	require.Equal(t, hook.Addr, call.Target)
	require.Equal(t, -1, call.RIPRelDispOff)

	// Its return address is where a %return probe of the hook would land.
	p := resolve1(t, img, "__sanitizer_cov_trace_pc%return")
	rs, err := p.ReturnSite(call.Next())
	require.NoError(t, err)
	require.Equal(t, call.Next(), rs.Addr)
}

func TestKitSuggestions(t *testing.T) {
	img := kitImage(t)
	err := resolveErr(t, img, "mutex_lok")
	require.ErrorContains(t, err, `unknown symbol "mutex_lok" (nearest: mutex_lock`)
	err = resolveErr(t, img, "mutex")
	msg := err.Error()
	require.Contains(t, msg, "(nearest: mutex_")
	require.LessOrEqual(t, strings.Count(msg, ","), 4, "at most 5 suggestions")
}

// Every instruction boundary of every function in the kit resolves, or is
// refused with a reason: none is mis-decoded or unexplained.
func TestKitEveryInstruction(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes the whole kit, once per instruction (seconds)")
	}
	img := kitImage(t)
	kinds := map[BranchKind]int{}
	refused := map[string]int{}
	for _, f := range img.Symbols() {
		if !f.Func || f.Size == 0 {
			continue
		}
		if _, ok := img.ExecSegment(f.Addr); !ok {
			continue
		}
		for _, off := range boundaries(t, img, f) {
			s := Spec{Name: "p", Symbol: f.Name, Off: off}
			site, err := resolveOne(&s, guestImage{img})
			if err != nil {
				msg := err.Error()
				if strings.Contains(msg, "functions are named") {
					break // a static function with a twin elsewhere
				}
				require.Contains(t, msg, "cannot probe", "%s+%#x", f.Name, off)
				refused[msg[strings.Index(msg, "cannot probe"):][:24]]++
				continue
			}
			kinds[site.Branch]++
			if site.RIPRelDispOff >= 0 {
				require.LessOrEqual(t, site.RIPRelDispOff+4, site.Len)
			}
		}
	}
	t.Logf("sites by kind: %v; refused: %v", kinds, refused)
	require.Greater(t, kinds[BranchNone], 1000)
	require.Greater(t, kinds[BranchCall], 100)
	require.Greater(t, kinds[BranchJcc], 100)
}

// The r15 kit's count ends in a load where the guest stops at its targets:
// a probe there is refused, the lea before it is not.
func TestKitCounterLoadIsRefused(t *testing.T) {
	img := kitImage(t)
	err := resolveErr(t, img, "mutex_lock+4")
	require.ErrorContains(t, err, "cannot probe the branch counter's load")
	resolve1(t, img, "mutex_lock")
}
