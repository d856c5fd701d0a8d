package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/elfimage"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm"
)

type machineFlags struct {
	mem     byteSize
	timerHz int
	plain   bool
	kvmPath string
	disk    string
	overlay string
	udp     string
	pcap    string
}

// net is the network backend the flags ask for, or nil.
func (f *machineFlags) net() *vmm.NetConfig {
	if f.udp == "" && f.pcap == "" {
		return nil
	}
	return &vmm.NetConfig{UDP: f.udp, Pcap: f.pcap}
}

func (f *machineFlags) register(cmd *cobra.Command) {
	f.mem = vmm.DefaultMemBytes
	cmd.Flags().Var(&f.mem, "mem", "guest RAM (e.g. 64M, 1G; a multiple of 2 MiB)")
	cmd.Flags().IntVar(&f.timerHz, "timer-hz", vmm.DefaultTimerHz, "guest timer tick rate (0: no timer)")
	cmd.Flags().BoolVar(&f.plain, "plain", false, "use the kit built without the software branch counter")
	cmd.Flags().StringVar(&f.disk, "disk", "", "attach a disk: this base image, opened read-only (writes go to the overlay)")
	cmd.Flags().StringVar(&f.overlay, "overlay", "", "copy-on-write overlay file for the disk's writes")
	cmd.Flags().StringVar(&f.udp, "udp", "", "attach the NIC to a user-mode UDP network: datagrams to this loopback address (e.g. 127.0.0.1:7777) reach the guest's port of the same number")
	cmd.Flags().StringVar(&f.pcap, "net-input", "", "feed this packet capture (pcap, Ethernet) to the NIC as the guest's network input")
	cmd.Flags().StringVar(&f.kvmPath, "kvm", kvm.DevicePath, "KVM device")
	_ = cmd.Flags().MarkHidden("kvm")
}

// resolveGuest maps the WORKLOAD|IMAGE argument and the rest of the command
// line to an image and the guest command line. An argument naming an
// existing file (or containing a slash) is an image; otherwise it is a
// bundled workload.
func resolveGuest(ctx context.Context, f *machineFlags, args []string) (*elfimage.Image, string, error) {
	target, rest := args[0], args[1:]
	if _, err := os.Stat(target); err == nil || strings.Contains(target, "/") {
		img, err := elfimage.Open(target)
		return img, strings.Join(rest, " "), err
	}
	if _, ok := guest.LookupWorkload(target); !ok {
		return nil, "", fmt.Errorf("unknown workload %q and no such image file; `reprise workloads` lists the bundled workloads", target)
	}
	kit, err := guest.Build(ctx)
	if err != nil {
		return nil, "", err
	}
	path := kit.Image()
	if f.plain {
		path = kit.PlainImage()
	}
	img, err := elfimage.Open(path)
	return img, strings.Join(args, " "), err
}

func newRunCmd() *cobra.Command {
	var (
		mf      machineFlags
		timeout time.Duration
		stats   bool
	)
	cmd := &cobra.Command{
		Use:   "run WORKLOAD|IMAGE [ARG...]",
		Short: "Boot a bundled workload or a guest image and stream its console",
		Long: `Boot a bundled workload (see 'reprise workloads') or an ELF64 guest image and
stream the guest console to stdout. reprise exits with the guest's own exit
status; 124 if --timeout expired, 130 if interrupted (Ctrl-C), 125 if
reprise or the guest failed (a guest fault is reported with its registers
and last console lines).

Arguments after the workload are passed to it (e.g. 'reprise run cpu digits=2000').`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel, errTimeout := guestContext(cmd.Context(), timeout)
			defer cancel()
			img, cmdline, err := resolveGuest(ctx, &mf, args)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			disk, cleanup, err := runDisk(mf)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			defer cleanup()
			m, err := vmm.New(vmm.Config{
				Image: img, MemBytes: uint64(mf.mem), TimerHz: timerHz(mf.timerHz),
				Cmdline: cmdline, Console: cmd.OutOrStdout(), KVMPath: mf.kvmPath, Disk: disk, Net: mf.net(),
			})
			if err != nil {
				return &exitError{exitFailure, err}
			}
			defer m.Close()
			res, err := m.Run(ctx)
			if stats && res != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "reprise: %v elapsed\n", res.Elapsed.Round(time.Millisecond))
				res.Stats.Print(cmd.ErrOrStderr())
			}
			switch {
			case err != nil && errors.Is(context.Cause(ctx), errTimeout):
				return &exitError{exitTimeout, err}
			case err != nil && ctx.Err() != nil:
				return &exitError{exitInterrupted, err}
			case err != nil:
				return &exitError{exitFailure, err}
			}
			return guestStatus(res.Status)
		},
	}
	mf.register(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "stop the guest after this long (0: no limit)")
	cmd.Flags().BoolVar(&stats, "stats", false, "print VMM statistics (exits, interrupts) to stderr")
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// runDisk is the disk of a live run: the base image, and the overlay the
// user named or a scratch one removed afterwards.
func runDisk(mf machineFlags) (*vmm.DiskConfig, func(), error) {
	if mf.disk == "" {
		return nil, func() {}, nil
	}
	if mf.overlay != "" {
		return &vmm.DiskConfig{Base: mf.disk, Overlay: mf.overlay}, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "reprise-overlay")
	if err != nil {
		return nil, nil, err
	}
	return &vmm.DiskConfig{Base: mf.disk, Overlay: filepath.Join(dir, "overlay")}, func() { os.RemoveAll(dir) }, nil
}

// guestContext is the context a guest runs under: cancelled by Ctrl-C, and
// after timeout (if positive) with errTimeout as its cause.
func guestContext(parent context.Context, timeout time.Duration) (ctx context.Context, cancel context.CancelFunc, errTimeout error) {
	ctx, stopSignals := signal.NotifyContext(parent, os.Interrupt)
	errTimeout = fmt.Errorf("--timeout %v expired", timeout)
	if timeout <= 0 {
		return ctx, stopSignals, errTimeout
	}
	ctx, stopTimer := context.WithTimeoutCause(ctx, timeout, errTimeout)
	return ctx, func() { stopTimer(); stopSignals() }, errTimeout
}

// guestStatus passes the guest's exit status on as reprise's.
func guestStatus(status uint32) error {
	if status != 0 {
		return &exitError{int(status & 0xff), nil}
	}
	return nil
}

// timerHz maps the CLI's 0 ("no timer") to the Config's negative value.
func timerHz(hz int) int {
	if hz == 0 {
		return -1
	}
	return hz
}
