package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/linux"
)

// newCCCmd builds a Linux program with reprise's instrumentation: every
// basic block of the code it compiles counts in the software branch
// counter, so a recording places interrupts at exact positions instead of
// at system calls. Libraries not compiled with it (the C library) are not
// counted; nothing asynchronous needs to land in them.
func newCCCmd() *cobra.Command {
	var compiler string
	cmd := &cobra.Command{
		Use:   "cc [--compiler CC] -- COMPILER-ARGS...",
		Short: "Compile a Linux program with the software branch counter, for exact positions",
		Long: `Run the C compiler (cc, or --compiler: gcc, musl-gcc, clang) with
-fsanitize-coverage=trace-pc and, when it links, reprise's counting hook.
A program built so records with swbc positions: its threads are preempted
wherever a tick finds them, not only at their system calls.

  reprise cc --compiler musl-gcc -- -static -O2 -pthread -o app app.c
  reprise record -o app.tape -- ./app`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := os.MkdirTemp("", "reprise-cc")
			if err != nil {
				return &exitError{exitFailure, err}
			}
			defer os.RemoveAll(dir)
			hook, err := hookObject(compiler, dir)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			argv := append([]string{"-fsanitize-coverage=trace-pc"}, args...)
			if links(args) {
				argv = append(argv, hook)
			}
			c := exec.Command(compiler, argv...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
			var ee *exec.ExitError
			switch err := c.Run(); {
			case errors.As(err, &ee):
				return &exitError{ee.ExitCode(), nil}
			case err != nil:
				return &exitError{exitFailure, fmt.Errorf("running %s: %w", compiler, err)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&compiler, "compiler", "cc", "the C compiler to run")
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// links reports whether a compiler command line links (no -c, -S or -E).
func links(args []string) bool {
	return !slices.ContainsFunc(args, func(a string) bool { return a == "-c" || a == "-S" || a == "-E" })
}

// hookObject assembles the counting hook with compiler into dir and
// returns the object's path.
func hookObject(compiler, dir string) (string, error) {
	src, obj := filepath.Join(dir, "swbc.S"), filepath.Join(dir, "swbc.o")
	if err := os.WriteFile(src, []byte(linux.BranchCounterHook), 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command(compiler, "-c", "-o", obj, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("assembling the hook with %s: %v\n%s", compiler, err, out)
	}
	return obj, nil
}
