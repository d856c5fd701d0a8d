package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/host/scratch"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/netback"
)

type machineFlags struct {
	mem     ramSize
	timerHz timerHzFlag
	plain   bool
	kvmPath string
	disk    string
	overlay string
	udp     string
	pcap    string
	env     []string // a Linux program's --env
	files   []string // a Linux program's --file HOST[:GUEST]
	stdin   string   // a Linux program's --stdin FILE
	root    string   // a Linux program's --root DIR
	keep    string   // a Linux program's --keep-writes DIR
	publish []string // a Linux program's --publish [HOSTADDR:]HOSTPORT:GUESTPORT
	egress  []string // a Linux program's --egress HOST:PORT
	fast    bool     // a Linux program's --fast-calls
}

// net is the network the flags ask for, or nil: a NIC's backend for a
// guest image, published ports for a Linux program (resolveGuest refused
// the flags of the other kind).
func (f *machineFlags) net() (*vmm.NetConfig, error) {
	switch {
	case f.udp != "" || f.pcap != "":
		return &vmm.NetConfig{UDP: f.udp, Pcap: f.pcap}, nil
	case len(f.publish) == 0 && len(f.egress) == 0:
		return nil, nil
	}
	c := &vmm.NetConfig{}
	type hostPort struct {
		addr netip.AddrPort
		udp  bool
	}
	hosts := map[hostPort]bool{}
	for _, s := range f.publish {
		p, err := netback.ParsePublish(s)
		if err != nil {
			return nil, &exitError{exitUsage, err}
		}
		if hosts[hostPort{p.Host, p.UDP}] {
			return nil, &exitError{exitUsage, fmt.Errorf("--publish %q: host address %v published twice", s, p.Host)}
		}
		hosts[hostPort{p.Host, p.UDP}] = true
		c.Publish = append(c.Publish, p)
	}
	for _, s := range f.egress {
		a, err := net.ResolveTCPAddr("tcp", s)
		if err != nil || a.Port == 0 || a.IP == nil {
			return nil, &exitError{exitUsage, fmt.Errorf("--egress %q: want HOST:PORT, a host address and a port (%v)", s, err)}
		}
		c.Egress = append(c.Egress, netip.AddrPortFrom(a.AddrPort().Addr().Unmap(), a.AddrPort().Port()))
	}
	return c, nil
}

func (f *machineFlags) register(cmd *cobra.Command) {
	f.mem.byteSize = vmm.DefaultMemBytes
	f.timerHz = vmm.DefaultTimerHz
	cmd.Flags().Var(&f.mem, "mem", fmt.Sprintf("guest RAM (e.g. 64M, 1G; a multiple of 2 MiB from %s to %s)", abi.FormatBytes(abi.MinGuestBytes), abi.FormatBytes(abi.MaxGuestBytes)))
	cmd.Flags().Var(&f.timerHz, "timer-hz", fmt.Sprintf("guest timer tick rate (0: no timer; at most %d)", abi.MaxTimerHz))
	cmd.Flags().BoolVar(&f.plain, "plain", false, "use the kit built without the software branch counter")
	cmd.Flags().StringVar(&f.disk, "disk", "", "attach a disk: this base image, opened read-only (writes go to the overlay)")
	cmd.Flags().StringVar(&f.overlay, "overlay", "", "copy-on-write overlay file for the disk's writes")
	cmd.Flags().StringVar(&f.udp, "udp", "", "attach the NIC to a user-mode UDP network: datagrams to this loopback address (e.g. 127.0.0.1:7777) reach the guest's port of the same number")
	cmd.Flags().StringVar(&f.pcap, "net-input", "", "feed this packet capture (pcap, Ethernet) to the NIC as the guest's network input")
	cmd.Flags().StringArrayVar(&f.env, "env", nil, "NAME=VALUE added to a Linux program's environment (repeatable)")
	cmd.Flags().StringArrayVar(&f.files, "file", nil, "HOST[:GUEST] a host file or directory a Linux program sees at GUEST (default: the same path); its contents are recorded by hash (repeatable)")
	cmd.Flags().StringVar(&f.root, "root", "", "a host directory a Linux program sees as its root, read-only, its symbolic links resolved inside it as in a chroot (at most 4096 files and 1 GiB, read when it starts)")
	cmd.Flags().StringVar(&f.keep, "keep-writes", "", "copy the files a Linux program created or changed into this directory when it ends (no symbolic link below it is followed)")
	cmd.Flags().StringArrayVar(&f.publish, "publish", nil, "[HOSTADDR:]HOSTPORT:GUESTPORT[/tcp|/udp] publish a Linux program's TCP (default) or UDP port: host clients of HOSTADDR:HOSTPORT (default address 127.0.0.1) reach the program's GUESTPORT, their traffic recorded (repeatable)")
	cmd.Flags().StringArrayVar(&f.egress, "egress", nil, "HOST:PORT a host TCP address a Linux program may connect to, its traffic recorded (repeatable; the host's 127.0.0.1 is 10.0.2.2 to the program); other host addresses are refused")
	cmd.Flags().StringVar(&f.stdin, "stdin", "", "a host file a Linux program reads as its standard input (recorded by hash; default: empty)")
	cmd.Flags().BoolVar(&f.fast, "fast-calls", false, "serve a Linux program's system calls without an exit where it can: the program posts them in its memory and a VMM thread on another host CPU serves them (PVM hosts; takes that CPU while the program makes calls; a recording's replays do the same)")
	cmd.Flags().StringVar(&f.kvmPath, "kvm", kvm.DevicePath, "KVM device")
	_ = cmd.Flags().MarkHidden("kvm")
}

func newRunCmd() *cobra.Command {
	var (
		mf       machineFlags
		timeout  time.Duration
		stats    bool
		syscalls bool
	)
	cmd := &cobra.Command{
		Use:   "run WORKLOAD|IMAGE|PROGRAM [ARG...]",
		Short: "Boot a bundled workload, a guest image or a Linux program and stream its console",
		Long: `Boot a bundled workload (see 'reprise workloads'), an ELF64 guest image or
an x86-64 Linux executable (reprise plays its kernel) and stream the guest
console to stdout. A Linux program runs with its arguments, a small fixed
environment (PATH, HOME=/, LANG=C, TERM=dumb; --env adds), an empty stdin,
and stdout and stderr on the console: 'reprise run -- /usr/bin/prog -x'. reprise exits with the guest's own exit
status; 124 if --timeout expired, 130 if interrupted (Ctrl-C), 143 on
SIGTERM, 125 if reprise or the guest failed (a guest fault is reported with
its registers and last console lines).

Arguments after the workload are passed to it (e.g. 'reprise run cpu
digits=2000'); reprise's own flags go before the workload. A bare name is a
bundled workload if one has that name, else an image file; write ./NAME for
a file that has a workload's name.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := guestArgs(cmd, args)
			if err != nil {
				return err
			}
			ctx, cancel := guestContext(cmd.Context(), timeout)
			defer cancel()
			g, err := resolveGuest(ctx, cmd, &mf, target, rest)
			if err != nil {
				return err
			}
			var kernel vmm.Kernel
			if g.linux != nil {
				k, err := linux.New(*g.linux)
				if err != nil {
					return &exitError{exitFailure, err}
				}
				if syscalls {
					k.Trace(cmd.ErrOrStderr())
				}
				kernel = k
			}
			netCfg, err := mf.net()
			if err != nil {
				return err
			}
			disk, cleanup, err := runDisk(mf)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			defer cleanup()
			m, err := vmm.New(vmm.Config{
				Image: g.img, Kernel: kernel, MemBytes: g.memBytes(cmd, &mf), TimerHz: mf.tickRate(),
				Cmdline: g.cmdline, Console: cmd.OutOrStdout(), KVMPath: mf.kvmPath, Disk: disk, Net: netCfg,
			})
			if err != nil {
				return &exitError{exitFailure, err}
			}
			defer m.Close()
			res, err := m.Run(ctx)
			if k, ok := kernel.(*linux.Kernel); ok {
				if u := k.Stats().Unimplemented(); u != "" && !stats {
					fmt.Fprintf(cmd.ErrOrStderr(), "reprise: system calls answered ENOSYS: %s\n", u)
				}
				if mf.keep != "" {
					if err := keepWrites(cmd, k, mf.keep); err != nil {
						return err
					}
				}
			}
			if stats && res != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "reprise: %v elapsed\n", res.Elapsed.Round(time.Millisecond))
				res.Stats.Print(cmd.ErrOrStderr())
				if k, ok := kernel.(*linux.Kernel); ok {
					k.Stats().Print(cmd.ErrOrStderr())
				}
			}
			if stop := stoppedBy(ctx); err != nil && stop != nil {
				return &exitError{stop.status(), err}
			}
			if err != nil {
				return &exitError{exitFailure, err}
			}
			return guestStatus(res.Status)
		},
	}
	mf.register(cmd)
	cmd.Flags().Var(newDurationFlag(&timeout, time.Nanosecond, maxDuration, "no limit"), "timeout", "stop the guest after this long (0: no limit)")
	cmd.Flags().BoolVar(&stats, "stats", false, "print VMM statistics (exits, interrupts, time in KVM_RUN and in the VMM; a Linux program's system calls and the VMM's time on each) to stderr")
	cmd.Flags().BoolVar(&syscalls, "syscalls", false, "trace a Linux program's system calls to stderr, as strace does")
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
	dir, err := scratch.Dir("overlay")
	if err != nil {
		return nil, nil, err
	}
	return &vmm.DiskConfig{Base: mf.disk, Overlay: filepath.Join(dir, "overlay")}, func() { os.RemoveAll(dir) }, nil
}

// guestStatus passes the guest's exit status on as reprise's.
func guestStatus(status uint32) error {
	if status != 0 {
		return &exitError{int(status & 0xff), nil}
	}
	return nil
}

// tickRate maps the CLI's 0 ("no timer") to the Config's negative value.
func (f *machineFlags) tickRate() int {
	if f.timerHz == 0 {
		return -1
	}
	return int(f.timerHz)
}

// keepWrites copies what a Linux program wrote into dir (--keep-writes).
func keepWrites(cmd *cobra.Command, k *linux.Kernel, dir string) error {
	n, err := k.KeepWrites(dir)
	fmt.Fprintf(cmd.ErrOrStderr(), "reprise: kept %d written files in %s\n", n, dir)
	if err != nil {
		return &exitError{exitFailure, fmt.Errorf("--keep-writes %s: %w", dir, err)}
	}
	return nil
}
