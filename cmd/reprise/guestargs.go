package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/host/userfile"
	"github.com/reprise-vm/reprise/linux"
)

// guestArgs splits WORKLOAD|IMAGE [ARG...] into the target and the guest's
// arguments. Everything after the target goes to the guest, so a reprise
// flag typed there (`reprise record syn_cont -o t.tape`) would silently
// become a guest argument: it is refused with the command line that was
// meant. A `--` right after the target passes what follows as it is.
// The error is a usage error (exit status 2).
func guestArgs(cmd *cobra.Command, args []string) (target string, rest []string, err error) {
	target, rest = args[0], args[1:]
	if cmd.ArgsLenAtDash() == 0 {
		return target, rest, nil // reprise ... -- PROGRAM ARG...: all the program's
	}
	if len(rest) > 0 && rest[0] == "--" {
		return target, rest[1:], nil
	}
	var ours, theirs []string
	for i := 0; i < len(rest); i++ {
		f := lookupFlag(cmd.Flags(), rest[i])
		if f == nil {
			theirs = append(theirs, rest[i])
			continue
		}
		ours = append(ours, rest[i])
		if f.NoOptDefVal == "" && !strings.Contains(rest[i], "=") && i+1 < len(rest) {
			i++ // the flag's value
			ours = append(ours, rest[i])
		}
	}
	if len(ours) == 0 {
		return target, rest, nil
	}
	meant := append(append(append([]string{cmd.CommandPath()}, flagArgs(cmd)...), ours...), target)
	return "", nil, &exitError{exitUsage, fmt.Errorf("%s is reprise's own flag, but it comes after the workload, where it would go to the guest: "+
		"reprise's flags go before the workload (%s), or write -- after the workload to pass such arguments to the guest",
		ours[0], strings.Join(append(meant, theirs...), " "))}
}

// lookupFlag returns the flag of fs that arg names (--name, --name=v, -x,
// -xv), or nil.
func lookupFlag(fs *pflag.FlagSet, arg string) *pflag.Flag {
	switch {
	case strings.HasPrefix(arg, "--") && len(arg) > 2:
		name, _, _ := strings.Cut(arg[2:], "=")
		return fs.Lookup(name)
	case strings.HasPrefix(arg, "-") && len(arg) > 1:
		return fs.ShorthandLookup(arg[1:2])
	}
	return nil
}

// flagArgs gives back the flags the user set before the target, for the
// suggested command line.
func flagArgs(cmd *cobra.Command) []string {
	var out []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return out
}

// guestSpec is what a command runs: a guest image that brings its kernel
// (a bundled workload, or an image built against abi.h) with its command
// line, or a Linux program for the Linux personality.
type guestSpec struct {
	img     *elffile.Image
	cmdline string
	linux   *linux.Program
}

// memBytes is the guest RAM for the spec: --mem if given, else the
// default of its kind.
func (g *guestSpec) memBytes(cmd *cobra.Command, f *machineFlags) uint64 {
	if g.linux != nil && !cmd.Flags().Changed("mem") {
		return linux.DefaultMemBytes
	}
	return uint64(f.mem.byteSize)
}

// resolveGuest maps the WORKLOAD|IMAGE|PROGRAM argument (guestArgs split
// it from the guest's arguments). A bare name is a bundled workload if
// there is one by that name, else a file here, else a program on $PATH; a
// name with a slash is always a file. A directory is never an image. When
// a bare name is both a workload and a file here, the workload runs and a
// notice says how to boot the file. An ELF file with the kit's vector
// table is a guest image; any other x86-64 ELF executable is a Linux
// program.
func resolveGuest(ctx context.Context, cmd *cobra.Command, f *machineFlags, target string, rest []string) (*guestSpec, error) {
	g, err := findGuest(ctx, cmd, f, target, rest)
	if err != nil {
		return nil, err
	}
	others, why := linuxOnlyFlags, "is for a Linux program, and %s is a guest image that brings its own kernel"
	if g.linux != nil {
		others, why = imageOnlyFlags, "is for a guest image, and %s is a Linux program"
	}
	for _, name := range others {
		if cmd.Flags().Changed(name) {
			return nil, &exitError{exitUsage, fmt.Errorf("--%s "+why, name, target)}
		}
	}
	return g, nil
}

// The machine flags that only one kind of guest reads: the other kind,
// given one, is refused rather than run without it.
var (
	linuxOnlyFlags = []string{"env", "file", "root", "keep-writes", "stdin", "fast-calls", "publish", "egress"}
	imageOnlyFlags = []string{"plain", "disk", "overlay", "udp", "net-input"}
)

func findGuest(ctx context.Context, cmd *cobra.Command, f *machineFlags, target string, rest []string) (*guestSpec, error) {
	_, isWorkload := guest.LookupWorkload(target)
	st, statErr := os.Stat(target)
	switch {
	case !isWorkload || strings.Contains(target, "/"):
		path := target
		if statErr != nil && !strings.Contains(target, "/") && errors.Is(statErr, os.ErrNotExist) {
			found, err := exec.LookPath(target)
			if err != nil {
				return nil, &exitError{exitFailure, fmt.Errorf("unknown workload %q and no such image file or program on $PATH; `reprise workloads` lists the bundled workloads", target)}
			}
			path, st, statErr = found, nil, nil
		}
		if statErr == nil && st != nil && st.IsDir() {
			return nil, &exitError{exitFailure, fmt.Errorf("%s is a directory, not a guest image, a program or a bundled workload", target)}
		}
		return openGuest(f, path, target, rest)
	case statErr == nil && !st.IsDir():
		fmt.Fprintf(cmd.ErrOrStderr(), "reprise: %s is the bundled workload; to boot the file of that name, write ./%s\n", target, target)
	}
	kit, err := guest.Build(ctx)
	if err != nil {
		return nil, &exitError{exitFailure, err}
	}
	path := kit.Image()
	if f.plain {
		path = kit.PlainImage()
	}
	img, err := elffile.OpenImage(path)
	if err != nil {
		return nil, &exitError{exitFailure, err}
	}
	return &guestSpec{img: img, cmdline: strings.Join(append([]string{target}, rest...), " ")}, nil
}

// openGuest reads the file at path: a kit image if it has the kit's
// vector table, else a Linux program started as argv0 with rest.
func openGuest(f *machineFlags, path, argv0 string, rest []string) (*guestSpec, error) {
	raw, err := userfile.ReadFile(path, elffile.MaxImageBytes, "guest image or program")
	if err != nil {
		return nil, &exitError{exitFailure, err}
	}
	isELF := bytes.HasPrefix(raw, []byte("\x7fELF"))
	if !isELF && !bytes.HasPrefix(raw, []byte("#!")) {
		_, err := elffile.ParseImage(path, raw)
		return nil, &exitError{exitFailure, err} // neither: say why as an image
	}
	if isELF && mayBringKernel(raw) {
		if img, err := elffile.ParseImage(path, raw); err == nil && bringsKernel(img) {
			return &guestSpec{img: img, cmdline: strings.Join(rest, " ")}, nil
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &exitError{exitFailure, err}
	}
	// A script runs as exec runs it: its interpreter, given the script.
	abs, argv, err := linux.FollowScripts(abs, path, raw, append([]string{argv0}, rest...), func(interp string) (string, []byte, error) {
		full, err := filepath.Abs(interp)
		if err != nil {
			return "", nil, err
		}
		raw, err = userfile.ReadFile(full, elffile.MaxImageBytes, "interpreter")
		return full, raw, err
	})
	if err != nil {
		return nil, &exitError{exitFailure, fmt.Errorf("%s: not an ELF program, nor a script one runs: %w", path, err)}
	}
	env, err := programEnv(f.env)
	if err != nil {
		return nil, err
	}
	p := &linux.Program{Path: abs, Image: raw, Argv: argv, Env: env, Epoch: time.Now(), User: linux.InvokingUser(), FastCalls: f.fast}
	if err := linux.Check(p); err != nil {
		return nil, &exitError{exitFailure, err}
	}
	if p.Root, p.Mounts, err = programFiles(f.files, f.root); err != nil {
		return nil, err
	}
	// The program starts where reprise was started, as under rr: its
	// relative paths name the same files (under --root, the same path in
	// the root, if it has one).
	if wd, err := os.Getwd(); err == nil {
		p.Cwd = wd
	}
	if f.stdin != "" {
		host, err := hostPathOf(f.stdin, false)
		if err != nil {
			return nil, &exitError{exitFailure, fmt.Errorf("--stdin %s: a file, please: %v", f.stdin, err)}
		}
		p.Mounts, p.Stdin = append(p.Mounts, linux.Mount{Guest: stdinPath, Host: host}), stdinPath
	}
	if _, err := rand.Read(p.Random[:]); err != nil {
		return nil, &exitError{exitFailure, err}
	}
	return &guestSpec{linux: p}, nil
}

// programFiles is what a Linux program sees: the host directory --root
// names as its root ("/" without it), and the --file flags placed over
// it, each HOST:GUEST, or HOST at its own absolute path. Nothing is read
// here: the program's files are read as it looks.
func programFiles(flags []string, root string) (string, []linux.Mount, error) {
	var mounts []linux.Mount
	for _, spec := range flags {
		host, guest, ok := strings.Cut(spec, ":")
		abs, err := linux.HostPath(host)
		if err != nil {
			return "", nil, &exitError{exitFailure, fmt.Errorf("--file %s: %w", spec, err)}
		}
		if !ok {
			if guest, err = filepath.Abs(host); err != nil {
				return "", nil, &exitError{exitUsage, err}
			}
		}
		if !filepath.IsAbs(guest) {
			return "", nil, &exitError{exitUsage, fmt.Errorf("--file %s: the guest path %q is not absolute", spec, guest)}
		}
		mounts = append(mounts, linux.Mount{Guest: filepath.Clean(guest), Host: abs})
	}
	if root == "" {
		return "/", mounts, nil
	}
	abs, err := hostPathOf(root, true)
	if err != nil {
		return "", nil, &exitError{exitFailure, fmt.Errorf("--root %s: %w", root, err)}
	}
	return abs, mounts, nil
}

// hostPathOf is the host path the user named (linux.HostPath), which must
// be a directory if dir says so, else a regular file.
func hostPathOf(p string, dir bool) (string, error) {
	abs, err := linux.HostPath(p)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", err
	case dir && !st.IsDir():
		return "", errors.New("not a directory")
	case !dir && !st.Mode().IsRegular():
		return "", errors.New("not a regular file")
	}
	return abs, nil
}

// bringsKernel reports whether img is a guest image that brings its own
// kernel (a kit image, or one built against abi.h): it has the kit's
// vector table, or its code starts in the kernel window, where no Linux
// executable is linked.
// mayBringKernel says, from an ELF file's headers and symbol names, whether
// it could be an image that brings its own kernel (bringsKernel): a Linux
// program is not parsed as one, which copied a static program's segments
// and hashed it (4–7 ms for a 750 KB one) to find it was not.
func mayBringKernel(raw []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(raw))
	if err != nil {
		return true // ParseImage says what is wrong
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return false
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Memsz > 0 && p.Paddr >= abi.KernelBase && p.Paddr < abi.UserBase {
			return true
		}
	}
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == abi.VectorsSymbol {
			return true
		}
	}
	return false
}

func bringsKernel(img *elffile.Image) bool {
	if _, ok := img.Lookup(abi.VectorsSymbol); ok {
		return true
	}
	return img.Segments[0].Addr >= abi.KernelBase && img.Segments[0].Addr < abi.UserBase
}

// stdinPath is where --stdin's file appears in the guest.
const stdinPath = "/dev/stdin"

// baseEnv is a Linux program's environment before --env: small and fixed,
// so that a recording does not depend on the shell it was made from.
var baseEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/", "LANG=C", "TERM=dumb"}

// programEnv is baseEnv with the --env flags applied (a later K=V replaces
// an earlier K).
func programEnv(extra []string) ([]string, error) {
	env := append([]string(nil), baseEnv...)
	for _, kv := range extra {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, &exitError{exitUsage, fmt.Errorf("--env %q: want NAME=VALUE", kv)}
		}
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		env = append(env, kv)
	}
	return env, nil
}
