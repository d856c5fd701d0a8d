package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reprise-vm/reprise/elfimage"
	"github.com/reprise-vm/reprise/guest"
)

// guestArgs splits WORKLOAD|IMAGE [ARG...] into the target and the guest's
// arguments. Everything after the target goes to the guest, so a reprise
// flag typed there (`reprise record syn_cont -o t.tape`) would silently
// become a guest argument: it is refused with the command line that was
// meant. A `--` right after the target passes what follows as it is.
// The error is a usage error (exit status 2).
func guestArgs(cmd *cobra.Command, args []string) (target string, rest []string, err error) {
	target, rest = args[0], args[1:]
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

// resolveGuest maps the WORKLOAD|IMAGE argument (guestArgs split it from
// the guest's arguments) to an image and the guest command line. A bare name is a bundled workload if there is one by that
// name, else an image file; a name with a slash is always a file. A
// directory is never an image. When a bare name is both a workload and a
// file here, the workload runs and a notice says how to boot the file.
func resolveGuest(ctx context.Context, cmd *cobra.Command, f *machineFlags, target string, rest []string) (*elfimage.Image, string, error) {
	_, isWorkload := guest.LookupWorkload(target)
	st, statErr := os.Stat(target)
	switch {
	case !isWorkload || strings.Contains(target, "/"):
		if statErr == nil && st.IsDir() {
			return nil, "", &exitError{exitFailure, fmt.Errorf("%s is a directory, not a guest image or a bundled workload", target)}
		}
		if statErr != nil && !strings.Contains(target, "/") && errors.Is(statErr, os.ErrNotExist) {
			return nil, "", &exitError{exitFailure, fmt.Errorf("unknown workload %q and no such image file; `reprise workloads` lists the bundled workloads", target)}
		}
		img, err := elfimage.Open(target)
		if err != nil {
			return nil, "", &exitError{exitFailure, err}
		}
		return img, strings.Join(rest, " "), nil
	case statErr == nil && !st.IsDir():
		fmt.Fprintf(cmd.ErrOrStderr(), "reprise: %s is the bundled workload; to boot the file of that name, write ./%s\n", target, target)
	}
	kit, err := guest.Build(ctx)
	if err != nil {
		return nil, "", &exitError{exitFailure, err}
	}
	path := kit.Image()
	if f.plain {
		path = kit.PlainImage()
	}
	img, err := elfimage.Open(path)
	if err != nil {
		return nil, "", &exitError{exitFailure, err}
	}
	return img, strings.Join(append([]string{target}, rest...), " "), nil
}
