// Package recorder records a guest run to a tape: it runs the machine under
// the recording engine (engine.go), where every nondeterministic input is
// logged at a position a replay can find again, and writes the events as
// they come, flushing whole chunks often so a recorder killed at any moment
// leaves a replayable tape.
package recorder

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/host/tick"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/pmu"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// Auto picks the best position source the image and host support.
const Auto tape.PositionSource = "auto"

// DefaultFlushInterval bounds how much of a recording a SIGKILL can lose.
const DefaultFlushInterval = 250 * time.Millisecond

// Options describe a recording. Zero values take the vmm defaults.
type Options struct {
	// Image is a guest image that brings its own kernel (the kit's);
	// Linux, a Linux program run by the Linux personality. One is set.
	Image          *elffile.Image
	Linux          *linux.Program
	Cmdline        string
	MemBytes       uint64
	TimerHz        int
	TimerJitter    time.Duration
	PositionSource tape.PositionSource // Auto, swbc, exit-sync or pmu
	Console        io.Writer
	Output         string        // tape path
	FlushEvery     time.Duration // 0: DefaultFlushInterval
	KVMPath        string
	// DiskBase attaches a disk with this base image (read-only); its
	// writes go to DiskOverlay (default: the tape's path + ".overlay").
	DiskBase    string
	DiskOverlay string
	// Net attaches the NIC to a network backend; its traffic is recorded.
	Net *vmm.NetConfig
	// Host says how much of the host to record ("": HostFull).
	Host HostMode
	// Pack, for a Linux program, copies its files into the tape, so that it
	// replays where they are not (as rr pack does).
	Pack bool
	// KeepWrites, for a Linux program, is a directory the files it created
	// or changed are copied into when it ends.
	KeepWrites string
	// CheckpointEvery takes a checkpoint every that much of the
	// recording's time, into Checkpoints (default: the tape's path +
	// ".ckpt"): the tape's first replay can then already start anywhere,
	// or be split (package checkpoint).
	CheckpointEvery time.Duration
	Checkpoints     string
	// Overwrite lets the recording replace an existing tape and overlay.
	// Without it Record refuses them (an *ExistsError): a recording cannot
	// be made again, so it is never lost to a reused name.
	Overwrite bool
}

// checkpointPath is where the recording's checkpoints go.
func (o *Options) checkpointPath() string {
	if o.Checkpoints != "" {
		return o.Checkpoints
	}
	return o.Output + ".ckpt"
}

// checkpoints opens the checkpoint file the recording writes (nil: none).
func (o *Options) checkpoints(h *tape.Header) (*checkpoints, error) {
	if o.CheckpointEvery == 0 {
		return nil, nil
	}
	w, err := checkpoint.Create(o.checkpointPath(), checkpoint.RecordingOf(h))
	if err != nil {
		return nil, err
	}
	return &checkpoints{w: w, due: checkpoint.Schedule{Every: o.CheckpointEvery}, clock: tape.RecordClock{ByExit: h.PositionSource == tape.SourceExitSync}}, nil
}

// ExistsError says a file a recording would write exists already.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("recorder: %s exists; a recording never overwrites one", e.Path)
}

// Result is a finished recording.
type Result struct {
	*vmm.Result
	// Checkpoints are the checkpoints the recording took.
	Checkpoints    []checkpoint.Summary
	PositionSource tape.PositionSource
	Tape           string
	Events         uint64
	Bytes          int64
	// HostRecords is the size of the host view; HostMissing says what it
	// lacks ("" if nothing).
	HostRecords uint64
	HostMissing string
	// Warnings are a Linux program's (linux.Stats.Warnings).
	Warnings []string
	// Unimplemented lists the system calls a Linux program made that were
	// answered ENOSYS (linux.Stats.Unimplemented).
	Unimplemented string
	// StaleTranslations counts a Linux program's faults of the host's
	// stale translations, retried (linux.Stats).
	StaleTranslations uint64
	// KeptWrites is how many files Options.KeepWrites received.
	KeptWrites int
	// CheckpointsSkipped says when and why the recording took no
	// checkpoint where one was due.
	CheckpointsSkipped []string
}

// ChoosePositionSource resolves the position source: swbc when the image counts
// branches, else exit-sync; pmu only on request, and only where a PMU can
// count guest branches.
func ChoosePositionSource(want tape.PositionSource, img *elffile.Image) (tape.PositionSource, error) {
	switch want {
	case Auto, "":
		if vmm.BranchCounterOf(img) != vmm.CounterNone {
			return tape.SourceSWBC, checkHook(img)
		}
		return tape.SourceExitSync, nil
	case tape.SourceSWBC:
		return want, checkHook(img)
	case tape.SourceExitSync:
		return want, nil
	case tape.SourcePMU:
		if err := pmu.Detect(); err != nil {
			return "", err
		}
		return "", errors.New("recorder: this host has a PMU, but reprise does not drive it yet (its stepping logic exists in package pmu, the KVM side does not): use --position swbc or exit-sync")
	}
	return "", fmt.Errorf("recorder: unknown position source %q (want auto, swbc, exit-sync or pmu)", want)
}

// chooseLinuxSource is ChoosePositionSource for a Linux program: swbc
// when it was built with reprise's instrumentation (reprise cc).
func chooseLinuxSource(want tape.PositionSource, k *linux.Kernel) (tape.PositionSource, error) {
	_, size, hasHook := k.BranchHook()
	switch want {
	case Auto, "":
		if hasHook {
			return tape.SourceSWBC, nil
		}
		return tape.SourceExitSync, nil
	case tape.SourceSWBC:
		if !hasHook || size == 0 {
			return "", errors.New("recorder: the program has no software branch counter: build it with 'reprise cc' for swbc positions, or use exit-sync")
		}
		return want, nil
	}
	return ChoosePositionSource(want, nil)
}

// checkHook checks that img keeps a software branch counter the machine
// can use: in r15, or in a hook that has a size, by which the machine
// tells the hook's exits from the guest's own writes to the port.
func checkHook(img *elffile.Image) error {
	if img == nil {
		return errors.New("recorder: no image to find a software branch counter in: use the exit-sync position source")
	}
	switch vmm.BranchCounterOf(img) {
	case vmm.CounterRegister:
		return nil
	case vmm.CounterNone:
		return fmt.Errorf("recorder: %s has no software branch counter (no %s or %s symbol; build it with the guest kit's Makefile or -fsanitize-coverage=trace-pc): use the exit-sync position source",
			img.Path, abi.SWBCRegisterSymbol, vmm.SWBCHookSymbol)
	}
	if hook, _ := img.Lookup(vmm.SWBCHookSymbol); hook.Size == 0 {
		return fmt.Errorf("recorder: %s: the %s symbol has no size (give it a .size directive)", img.Path, vmm.SWBCHookSymbol)
	}
	return nil
}

// Record runs the guest until it ends or ctx is cancelled (the recording
// then stops at the next repeatable point and ends normally) and writes the
// tape. A guest fault is recorded and returned as *vmm.GuestFault along with
// the result.
func Record(ctx context.Context, o Options) (*Result, error) {
	if (o.Image == nil) == (o.Linux == nil) {
		return nil, errors.New("recorder: give a guest image or a Linux program, not both or neither")
	}
	if o.CheckpointEvery < 0 {
		return nil, errors.New("recorder: a negative checkpoint interval")
	}
	var (
		source   tape.PositionSource
		err      error
		kernel   vmm.Kernel
		affinity []int
		hostCPU  int
	)
	if o.Linux == nil {
		if source, err = ChoosePositionSource(o.PositionSource, o.Image); err != nil {
			return nil, err
		}
	} else {
		k, err := linux.New(*o.Linux)
		if err != nil {
			return nil, err
		}
		if source, err = chooseLinuxSource(o.PositionSource, k); err != nil {
			return nil, err
		}
		prog := k.Program()
		o.Linux, kernel = &prog, k
		// A Linux program's vCPU is pinned to the first host CPU
		// (tape.Linux.HostCPU says why).
		if hostCPU, err = vmm.FirstHostCPU(); err != nil {
			return nil, err
		}
		affinity = []int{hostCPU}
	}
	h := header(o, source, hostCPU)
	var disk *vmm.DiskConfig
	if o.DiskBase != "" {
		disk = &vmm.DiskConfig{Base: o.DiskBase, Overlay: o.DiskOverlay}
		if disk.Overlay == "" {
			disk.Overlay = o.Output + ".overlay"
		}
	}
	if err := claimOutputs(o, disk); err != nil {
		return nil, err
	}
	if disk != nil {
		if h.Disk, err = tape.DescribeDisk(o.DiskBase); err != nil {
			return nil, err
		}
	}
	mode, err := ParseHostMode(string(o.Host))
	if err != nil {
		return nil, err
	}
	log := &chunkedLog{}
	var host *hostRecorder
	var hostObs vmm.HostObserver
	if mode != HostOff {
		if host, err = newHostRecorder(mode, log); err != nil {
			return nil, err
		}
		defer host.close()
		hostObs = host
	}
	eng := &engine{log: log, source: source}
	if k, ok := kernel.(*linux.Kernel); ok {
		k.SetObserver(eng)
	}
	m, err := vmm.New(vmm.Config{
		Image: o.Image, Cmdline: o.Cmdline, MemBytes: o.MemBytes, TimerHz: o.TimerHz,
		TimerJitter: o.TimerJitter, Console: o.Console, KVMPath: o.KVMPath,
		Engine: eng, Kernel: kernel, VCPUAffinity: affinity, Disk: disk, Net: o.Net, Host: hostObs,
	})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	for _, e := range m.CPUID() {
		h.CPUID = append(h.CPUID, tape.CPUIDEntry{Function: e.Function, Index: e.Index, Flags: e.Flags,
			EAX: e.EAX, EBX: e.EBX, ECX: e.ECX, EDX: e.EDX})
	}
	// The outputs are created only once the machine is: a host without
	// KVM, or a guest it refuses, leaves no file behind.
	ckpt, err := o.checkpoints(h)
	if err != nil {
		return nil, err
	}
	if ckpt != nil {
		defer ckpt.w.Close()
	}
	eng.ckpt = ckpt
	w, err := tape.Create(o.Output, h)
	if err != nil {
		if ckpt != nil {
			ckpt.w.Close()
			os.Remove(o.checkpointPath())
		}
		return nil, err
	}
	log.w = w
	interval := o.FlushEvery
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	stopFlush := log.flushEvery(interval)
	res, runErr := m.Run(ctx)
	var hostErr error
	if host != nil {
		hostErr = host.close() // its last events go in the tape too
	}
	stopFlush()
	if err := log.close(); err != nil {
		return nil, fmt.Errorf("recorder: writing %s: %w", o.Output, err)
	}
	out := &Result{Result: res, PositionSource: source, Tape: o.Output, Events: w.Events(), Bytes: w.Bytes(), HostRecords: log.hl.records}
	if ckpt != nil {
		out.Checkpoints, out.CheckpointsSkipped = ckpt.taken, ckpt.skipped
		if err := ckpt.w.Close(); err != nil {
			return out, errors.Join(runErr, err)
		}
	}
	if k, ok := kernel.(*linux.Kernel); ok {
		st := k.Stats()
		out.Warnings, out.Unimplemented, out.StaleTranslations = st.Warnings, st.Unimplemented(), st.StaleTranslations
		if o.KeepWrites != "" {
			if out.KeptWrites, err = k.KeepWrites(o.KeepWrites); err != nil {
				return out, errors.Join(runErr, fmt.Errorf("recorder: keeping writes in %s: %w", o.KeepWrites, err))
			}
		}
	}
	if o.Pack && o.Linux != nil {
		if err := PackInPlace(o.Output); err != nil {
			return out, errors.Join(runErr, err)
		}
	}
	if host != nil {
		out.HostMissing = host.Missing()
	} else {
		out.HostMissing = "no host view (--host off)"
	}
	if hostErr != nil {
		return out, errors.Join(runErr, hostErr)
	}
	return out, runErr
}

// claimOutputs refuses to replace an existing tape or overlay unless asked
// to, and then removes them, before anything is started: the tape is
// created exclusively, and the overlay is truncated when the disk opens.
func claimOutputs(o Options, disk *vmm.DiskConfig) error {
	paths := []string{o.Output}
	if o.CheckpointEvery != 0 {
		paths = append(paths, o.checkpointPath())
	}
	if disk != nil {
		paths = append(paths, disk.Overlay)
	}
	for _, p := range paths {
		_, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("recorder: %w", err)
		case !o.Overwrite:
			return &ExistsError{Path: p}
		default:
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("recorder: replacing %s: %w", p, err)
			}
		}
	}
	return nil
}

func header(o Options, source tape.PositionSource, hostCPU int) *tape.Header {
	h := &tape.Header{
		Created:        time.Now().UTC(),
		PositionSource: source,
		MemBytes:       o.MemBytes,
		TimerHz:        o.TimerHz,
		Cmdline:        o.Cmdline,
		Image:          imageOf(o),
		Devices:        vmm.DeviceConfig(),
		Host:           hostDescription(),
		Reprise:        "dev",
	}
	if p := o.Linux; p != nil {
		h.Linux = p.Header(hostCPU)
	}
	if h.MemBytes == 0 {
		h.MemBytes = vmm.DefaultMemBytes
	}
	if h.TimerHz == 0 {
		h.TimerHz = vmm.DefaultTimerHz
	}
	switch {
	case o.Net != nil && o.Net.UDP != "":
		h.Devices["net"] = "udp " + o.Net.UDP
	case o.Net != nil && o.Net.Pcap != "":
		h.Devices["net"] = "pcap " + o.Net.Pcap
	case o.Net != nil && (len(o.Net.Publish) > 0 || len(o.Net.Egress) > 0):
		h.Devices["net"] = fmt.Sprintf("publish %v egress %v", o.Net.Publish, o.Net.Egress)
	}
	return h
}

// imageOf is what the tape embeds: the guest image, or the Linux
// program's executable.
func imageOf(o Options) tape.Image {
	if p := o.Linux; p != nil {
		return tape.Image{Name: filepath.Base(p.Path), SHA256: sha256.Sum256(p.Image), Bytes: p.Image}
	}
	return tape.Image{Name: filepath.Base(o.Image.Path), SHA256: o.Image.SHA256, Bytes: o.Image.Raw}
}

func hostDescription() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	str := func(b []byte) string { return strings.TrimRight(string(b), "\x00") }
	return fmt.Sprintf("%s %s %s", str(u.Nodename[:]), str(u.Sysname[:]), str(u.Release[:]))
}

// chunkedLog is the EventLog the machine appends to from its vCPU thread,
// while a timer flushes whole chunks to disk.
type chunkedLog struct {
	mu sync.Mutex
	w  *tape.Writer // guarded by mu
	hl hostLog      // guarded by mu
}

func (l *chunkedLog) Append(e *tape.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Append(e)
}

// flushEvery flushes the pending chunk every interval until the returned
// function is called.
func (l *chunkedLog) flushEvery(interval time.Duration) (stop func()) {
	return tick.Every(interval, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		_ = l.w.Flush() // a failing disk shows again at close
		l.flushHost()
	})
}

func (l *chunkedLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushHost()
	if l.hl.err != nil {
		return errors.Join(fmt.Errorf("host view: %w", l.hl.err), l.w.Close())
	}
	return l.w.Close()
}
