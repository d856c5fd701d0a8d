// Package replayer re-executes a recorded guest run from its tape: it
// rebuilds the machine from the tape header alone (the image is embedded,
// the CPUID table recorded), runs it under the tape engine (engine.go),
// where every input comes from the tape and every event is checked against
// the guest's state, and compares the end state with the recorded one.
package replayer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/host/scratch"
	"github.com/reprise-vm/reprise/host/tick"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// Options describe a replay.
type Options struct {
	// Tape is the tape's path. Recording, if set, is that tape opened
	// already (OpenRecording), shared with the caller's other steps — a
	// command opens its tape once; nil: the replay opens Tape.
	Tape      string
	Recording *Recording
	// Image is the tape's guest image, if the caller has it already (the
	// kit's own): it is not decoded and hashed again. Nil: the one the
	// tape embeds (Recording.Image, decoded once per Recording).
	Image   *elffile.Image
	Console io.Writer // the guest's console output, as it is replayed
	KVMPath string
	// Progress, if set, receives a one-line progress report a few times a
	// second (meant for a terminal: each report starts with \r).
	Progress io.Writer
	// DiskBase overrides where the recording's disk base image is (it is
	// checked against the recorded size and SHA-256 either way).
	DiskBase string
	// Plan is a resolved probe set (package probes); OnHit receives each
	// hit with its thread and evaluated arguments.
	Plan  *probes.Plan
	OnHit func(Hit) error
	// Set is the probes of a Linux program's replay, placed in each file
	// the program maps that defines their symbols; OnHit receives their
	// hits too. OnMapping is told of every file the program maps.
	Set       *probes.Set
	OnMapping MappingHandler
	// Probes and OnProbe patch decoded sites instead (Plan takes
	// precedence).
	Probes  []probes.Site
	OnProbe ProbeHandler
	// Int3Probes patches every kit probe site with int3, as the sites
	// an exit cannot take are anyway (probes.ChoosePatches): to compare
	// the two.
	Int3Probes bool
	// SampleEvery samples the guest every that many counts of its software
	// branch counter (loop iterations and calls; basic blocks with the
	// trace-pc hook)
	// (deterministic: identical in every replay); OnSample receives them.
	SampleEvery uint64
	OnSample    SampleHandler
	// SamplePeriod also samples every that long of replay time, wherever
	// the guest is (not the same in every replay). At least
	// MinSamplePeriod.
	SamplePeriod time.Duration
	// OnTrace receives the guest kernel's trace-ring records, drained
	// after every tape event and at the end.
	OnTrace TraceHandler
	// OnHost receives the tape's host frames (package hostview's
	// encoding) as the replay reads past them, the ones after the end
	// event included when the replay matched.
	OnHost func(count uint32, body []byte) error
	// OnFrame receives every frame the guest receives and sends, whole,
	// in the order it does, with the recording's time: a received one's
	// arrival, a sent one's position. (A Linux program's door messages,
	// whose sends the tape keeps by digest.)
	OnFrame FrameHandler
	// Debugger, for a Linux program, is told of its mappings and stops it
	// where it asks, first before its first instruction (package
	// debugger serves gdb with it).
	Debugger linux.Breakpoints
	// KitDebugger, for a kit guest, is told of its user code and stops it
	// where it asks, first (replayed from boot) before its first
	// instruction.
	KitDebugger KitDebugger
	// OnLoopback receives the packets a Linux program's own internet
	// sockets send each other (never on the tape: the replay makes them
	// again), with the recording's time of the position each was sent at.
	OnLoopback LoopbackHandler
	// Checkpoints is a checkpoint file of the tape (package checkpoint).
	// With CheckpointEvery, the replay writes one there every that much
	// record time, replacing the file. Without it, a replay that passes a
	// checkpoint the file holds checks it, and Start picks the one it
	// starts from (1-based; 0 starts at boot).
	Checkpoints     string
	CheckpointEvery time.Duration
	Start           int
	// CheckpointSet, instead of Checkpoints, is the checkpoints of a
	// debugging session, which replays again and again: Start (and Until)
	// number them as its Checkpoints lists them. The replay only starts
	// from them (each checkpoint passed would be checked by hashing the
	// whole RAM); the end is checked still. KeepCheckpoint, for a Linux
	// program's debugged replay, has it take checkpoints of the session's
	// own where it says, as it goes.
	CheckpointSet  *CheckpointSet
	KeepCheckpoint KeepCheckpoint
	// Until ends the replay when it reaches that checkpoint (1-based;
	// 0: the recording's end), checked (unless of a set): one segment of a
	// replay split at its checkpoints.
	Until int
	// splitting marks one share of a split replay (SegmentsToDB): what an
	// earlier share reported is not reported again.
	splitting bool
}

// Result is a finished replay.
type Result struct {
	*vmm.Result
	Header *tape.Header
	// Events is how many tape events the replay applied.
	Events uint64
	// TraceLost counts trace-ring records the guest overwrote before they
	// were drained.
	TraceLost uint64
	// Checkpoints are the checkpoints the replay wrote;
	// CheckpointsSkipped says when and why it wrote none where one was due.
	Checkpoints        []checkpoint.Summary
	CheckpointsSkipped []string
	// Segment says the replay ended at the checkpoint Options.Until
	// named, not at the recording's end (End is nil).
	Segment bool
	// ProbeSites say how each kit probe site was patched, by address.
	ProbeSites []ProbeSite
}

// Replay replays o's tape (o.Recording, or the one at o.Tape). It
// returns a *DivergenceError if the guest stopped matching the
// recording, a *TapeCutError if the tape ended before the recording did
// (everything before was replayed and checked), and the tape's own error
// if its header is damaged.
func Replay(ctx context.Context, o Options) (*Result, error) {
	rec, done, err := o.recording()
	if err != nil {
		return nil, err
	}
	defer done()
	r, err := rec.events()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h := rec.Header
	var img *elffile.Image
	var kernel vmm.Kernel
	var affinity []int
	sc := &script{r: r}
	eng := &engine{script: sc, rtime: tape.RecordClock{ByExit: h.PositionSource == tape.SourceExitSync}, onFrame: o.OnFrame,
		exitDigests: tape.DigestsExitRegs(h.Version)}
	if h.Linux != nil {
		affinity = []int{h.Linux.HostCPU}
		k, err := rec.takeKernel()
		if err != nil {
			return nil, err
		}
		k.SetObserver(eng)
		switch {
		case o.Plan != nil || len(o.Probes) > 0:
			return nil, errors.New("replayer: a Linux program's probes are a probes.Set (Options.Set), resolved in the files it maps")
		case o.SampleEvery != 0:
			return nil, errors.New("replayer: a Linux program is sampled by time (SamplePeriod): its positions count no branches")
		}
		if o.Debugger != nil {
			if o.Set != nil || o.OnMapping != nil || o.SamplePeriod != 0 {
				return nil, errors.New("replayer: a debugged replay takes no probes, mappings handler or sampling")
			}
			k.SetBreakpoints(o.Debugger)
			k.SetRecordClock(eng.recordTime)
			k.StopAtStart()
		}
		if o.Set != nil || o.OnMapping != nil || o.SamplePeriod != 0 {
			eng.linux = newLinuxProbes(k, o.Set, o.OnHit, o.OnMapping, rec.parsedAs)
			eng.linux.resuming = o.Start > 0
			k.SetBreakpoints(eng.linux)
		}
		eng.kernel, kernel = k, k
	} else if o.Set != nil {
		return nil, errors.New("replayer: a probes.Set is for Linux programs; the kit's probes are a probes.Plan (Options.Plan)")
	} else if img, err = o.image(rec); err != nil {
		return nil, err
	}
	disk, cleanup, err := replayDisk(h, o.DiskBase)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if eng.ckpt, err = o.checkpoints(h); err != nil {
		return nil, err
	}
	defer eng.ckpt.close()
	sites, onProbe := o.Probes, o.OnProbe
	if o.Plan != nil {
		if sites, onProbe, err = planSites(o.Plan, img, o.OnHit); err != nil {
			return nil, err
		}
	}
	if len(sites) > 0 {
		sites = slices.Clone(sites) // the patches chosen are this replay's
		if !o.Int3Probes {
			probes.ChoosePatches(img, sites)
		}
		eng.probes = &patches{sites: sites, onHit: onProbe, int3Only: o.Int3Probes, resumed: o.Start > 0}
	}
	if o.KitDebugger != nil {
		switch {
		case h.Linux != nil:
			return nil, errors.New("replayer: a Linux program's debugger is Options.Debugger")
		case len(sites) > 0 || o.SampleEvery != 0 || o.SamplePeriod != 0:
			return nil, errors.New("replayer: a debugged replay takes no probes or sampling")
		}
		if eng.kit, err = newKitDebug(o.KitDebugger, img, eng.recordTime, o.Start == 0); err != nil {
			return nil, err
		}
	}
	if eng.sampler, err = newSampler(o.SampleEvery, o.SamplePeriod, o.OnSample); err != nil {
		return nil, err
	}
	if eng.sampler != nil && eng.linux != nil {
		eng.sampler.linux = eng.linux
	}
	if h.Linux == nil {
		// Drained even when nobody reads it: its cursor is part of every
		// checkpoint, which a replay that reads it may start from.
		eng.trace = &traceRing{on: o.OnTrace}
	}
	r.OnHost(o.OnHost)
	m, err := vmm.New(vmm.Config{
		Image: img, Cmdline: h.Cmdline, MemBytes: h.MemBytes, TimerHz: h.TimerHz,
		Console: o.Console, KVMPath: o.KVMPath, RAMHashing: ramHashing(h),
		Engine: eng, Scripted: true, Kernel: kernel, VCPUAffinity: affinity, CPUID: cpuidOf(h), Disk: disk,
		Net: recordedNet(h), Tap: eng.tap(o.OnFrame),
	})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if o.OnLoopback != nil && eng.kernel != nil {
		eng.kernel.SetWire(func(p vfs.Packet) {
			pos := m.Position()
			o.OnLoopback(p, pos, eng.recordTime(pos))
		})
	}
	if o.Progress != nil {
		defer showProgress(o.Progress, sc, r.Offset(), rec.tape.Size())()
	}
	stopSampling := func() {}
	if eng.sampler != nil {
		stopSampling = eng.sampler.timer()
	}
	res, err := m.Run(ctx)
	stopSampling()
	segment := errors.Is(err, errSegmentEnd)
	switch {
	case segment:
		err = nil
	case err == nil:
		err = sc.verifyRest()
	}
	if cerr := eng.ckpt.close(); err == nil {
		err = cerr
	}
	out := &Result{Result: res, Header: h, Events: eng.applied, Segment: segment}
	if eng.ckpt != nil {
		out.Checkpoints, out.CheckpointsSkipped = eng.ckpt.taken, eng.ckpt.skipped
	}
	if eng.trace != nil {
		out.TraceLost = eng.trace.lost
	}
	if eng.probes != nil {
		out.ProbeSites = eng.probes.placement(img)
	}
	return out, err
}

// showProgress reports how much of the tape's events, which span
// [start, size), have been replayed, until the returned function is
// called, which clears the line.
func showProgress(w io.Writer, sc *script, start, size int64) (stop func()) {
	stopTick := tick.Every(250*time.Millisecond, func() {
		off, events := sc.progress()
		frac := float64(off-start) / float64(max(size-start, 1))
		fmt.Fprintf(w, "\rreplaying: %3.0f%% of the tape, %d events", 100*frac, events)
	})
	return func() {
		stopTick()
		fmt.Fprint(w, "\r\033[K")
	}
}

// recording is the tape the options name, opened: o.Recording, or Tape
// opened for this call and closed by done.
func (o *Options) recording() (rec *Recording, done func(), err error) {
	if o.Recording != nil {
		return o.Recording, func() {}, nil
	}
	if rec, err = OpenRecording(o.Tape); err != nil {
		return nil, nil, err
	}
	return rec, func() { rec.Close() }, nil
}

// image is the replay's guest image: o.Image if it is the tape's, else
// the one the tape embeds.
func (o *Options) image(rec *Recording) (*elffile.Image, error) {
	if o.Image == nil {
		return rec.Image()
	}
	if o.Image.SHA256 != rec.Header.Image.SHA256 {
		return nil, fmt.Errorf("replayer: %s is not the image recorded in %s", o.Image.Path, rec.Path)
	}
	return o.Image, nil
}

// linuxKernel is the Linux personality for the program the tape at path
// recorded, its executable checked against the recorded hash.
func linuxKernel(path string, h *tape.Header) (*linux.Kernel, error) {
	if sha256.Sum256(h.Image.Bytes) != h.Image.SHA256 {
		return nil, fmt.Errorf("replayer: the executable embedded in %s does not match its recorded SHA-256", path)
	}
	l := h.Linux
	if !linux.Replays(l.Personality, l.FastCalls) {
		return nil, fmt.Errorf("replayer: %s was recorded by version %d of the Linux personality, this is version %d: replay it with the reprise that recorded it", path, l.Personality, linux.Version)
	}
	k, err := linux.New(linux.RecordedProgram(l, h.Image.Bytes))
	if err != nil {
		return nil, fmt.Errorf("replayer: %s: %w", path, err)
	}
	return k, nil
}

// replayDisk finds the recording's disk base image, checks it is the one
// recorded, and gives the replay a scratch overlay of its own, so every
// replay starts from the disk the recording started from.
func replayDisk(h *tape.Header, override string) (*vmm.DiskConfig, func(), error) {
	if h.Disk == nil {
		return nil, func() {}, nil
	}
	path := h.Disk.Path
	if override != "" {
		path = override
	}
	got, err := tape.DescribeDisk(path)
	if err != nil {
		return nil, nil, fmt.Errorf("replayer: the recording's disk: %w (use --disk to say where the base image is now)", err)
	}
	if got.Bytes != h.Disk.Bytes || got.SHA256 != h.Disk.SHA256 {
		return nil, nil, fmt.Errorf("replayer: disk base image %s is not the one recorded (%d bytes, sha256 %x…; recorded %d bytes, sha256 %x…)",
			path, got.Bytes, got.SHA256[:6], h.Disk.Bytes, h.Disk.SHA256[:6])
	}
	dir, err := scratch.Dir("replay-disk")
	if err != nil {
		return nil, nil, fmt.Errorf("replayer: scratch overlay: %w", err)
	}
	return &vmm.DiskConfig{Base: path, Overlay: filepath.Join(dir, "overlay")},
		func() { os.RemoveAll(dir) }, nil
}

func cpuidOf(h *tape.Header) []kvm.CPUIDEntry {
	out := make([]kvm.CPUIDEntry, 0, len(h.CPUID))
	for _, e := range h.CPUID {
		out = append(out, kvm.CPUIDEntry{Function: e.Function, Index: e.Index, Flags: e.Flags,
			EAX: e.EAX, EBX: e.EBX, ECX: e.ECX, EDX: e.EDX})
	}
	return out
}

// script gives the machine a one-event lookahead over the tape reader,
// and publishes how far it got for progress reports.
type script struct {
	r      *tape.Reader
	next   *tape.Event
	err    error
	off    atomic.Int64  // bytes of tape consumed
	events atomic.Uint64 // events handed to the machine
}

func (s *script) Peek() (*tape.Event, error) {
	if s.next == nil && s.err == nil {
		s.next, s.err = s.r.Next()
		s.off.Store(s.r.Offset())
	}
	return s.next, s.err
}

func (s *script) Next() (*tape.Event, error) {
	ev, err := s.Peek()
	s.next = nil
	if ev != nil {
		s.events.Add(1)
	}
	return ev, err
}

// verifyRest reads what follows the end event (the host view's last
// frames), so that damage there is reported too. A cut there is not
// damage: the recorder was killed after the guest's end, and the replay
// it reproduces is whole.
func (s *script) verifyRest() error {
	for {
		err := s.err // a look-ahead may have read past the end already
		if err == nil {
			_, err = s.r.Next()
		}
		var cut *tape.TruncatedError
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.As(err, &cut):
			return nil
		default:
			return fmt.Errorf("replayer: after the recording's end: %w", err)
		}
	}
}

func (s *script) progress() (off int64, events uint64) { return s.off.Load(), s.events.Load() }

// FrameHandler receives a frame the guest received or sent
// (Options.OnFrame), at a position and the recording's time of it.
type FrameHandler func(frame []byte, sent bool, pos vmm.Position, at time.Duration) error

// LoopbackHandler receives a packet between a Linux program's own
// sockets (Options.OnLoopback), at the position it was sent and the
// recording's time of it. Its Data is valid only during the call.
type LoopbackHandler func(p vfs.Packet, pos vmm.Position, at time.Duration)

// recordedNet is the network a recording had, as a replay's machine
// takes it: there, with nothing opened (its frames are the tape's), or
// none.
func recordedNet(h *tape.Header) *vmm.NetConfig {
	if h.Devices["net"] == "" {
		return nil
	}
	return &vmm.NetConfig{}
}

// ramHashing is what of RAM the tape's recorder hashed (at the end, in
// checkpoints).
func ramHashing(h *tape.Header) memory.Hashing {
	if tape.HashesRAMPages(h.Version) {
		return memory.HashPages
	}
	return memory.HashBytes
}
