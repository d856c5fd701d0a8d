package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/debugger"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/replayer"
)

func newDebugCmd() *cobra.Command {
	var gdbPath string
	cmd := &cobra.Command{
		Use:   "debug TAPE [-- GDB ARGS...]",
		Short: "Debug a replay with gdb",
		Long: `Replay a recording under gdb: the replay starts stopped at the
program's first instruction and gdb attaches to it with the executable's
symbols (a Linux program's libraries' come as the loader maps them; a kit
guest's are the kit's, with its sources' lines when this reprise built
that kit), as 'rr replay' does. Break, continue, step, next, finish, info registers, x,
print, bt, info threads and thread N work as on a live program; a write to
memory or registers is refused (a replay cannot change its past).
Backwards: reverse-continue (to a breakpoint, or the last write to a
watched value), reverse-stepi, reverse-step, reverse-next, reverse-finish.
Jumps: 'seek EXIT', 'seek 2.5s' (a record time), 'seek #N' (a place
'monitor checkpoint' saved); 'monitor when' says where the replay is,
'monitor help' lists the rest. Arguments after -- go to gdb (e.g. -batch
-x script.gdb).

The replay is checked as any replay; continued to its end, it ends with
the recording's RAM and console. 'reprise replay --gdb-listen ADDR' waits
for any gdb remote client instead.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tapePath, gdbArgs := args[0], args[1:]
			if cmd.ArgsLenAtDash() > 1 || cmd.ArgsLenAtDash() == -1 && len(args) > 1 {
				return &exitError{exitUsage, errors.New("debug takes one tape; gdb's arguments go after --")}
			}
			rec, err := replayer.OpenRecording(tapePath)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			defer rec.Close()
			program, cleanup, err := gdbProgram(cmd.Context(), rec)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			defer cleanup()
			defs, err := writeGDBCommands()
			if err != nil {
				return &exitError{exitFailure, err}
			}
			defer os.Remove(defs)
			gdb := func(addr string) (*exec.Cmd, error) {
				c := exec.CommandContext(cmd.Context(), gdbPath, append(append([]string{"-q"}, program...),
					append([]string{"-x", defs, "-ex", "target remote " + addr}, gdbArgs...)...)...)
				c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
				return c, c.Start()
			}
			opts := replayer.Options{Tape: tapePath, Recording: rec, Console: cmd.OutOrStdout()}
			if err := checkpointOptions(&opts, "", 0, "", cmd.ErrOrStderr()); err != nil {
				return err
			}
			// Ctrl-C is gdb's (it stops the replay through the protocol):
			// caught here and dropped, not reprise's death.
			ints := make(chan os.Signal, 1)
			signal.Notify(ints, os.Interrupt)
			defer signal.Stop(ints)
			res, err := serveGDB(cmd.Context(), opts, "127.0.0.1:0", cmd.ErrOrStderr(), gdb)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			if res != nil && res.End != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "reprise: replay matched: %d events, %d exits, %s; console and RAM identical\n",
					res.Events, res.Stats.TotalExits(), describeEnd(res.End))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&gdbPath, "gdb", "gdb", "the gdb to run")
	return cmd
}

// gdbCommands are the settings and commands reprise debug gives gdb. A jump
// (monitor seek) is followed by reading the registers again: gdb keeps
// them across a monitor command, not knowing the program moved.
const gdbCommands = `# The server answers gdb's first packets once the replay stands at the
# program's first instruction: on a loaded host that takes longer than
# gdb's 2 s, after which gdb goes on without the answer and takes the next
# one for it.
set remotetimeout 60
# A replay runs every process of the program: none can be held while the
# others go on, whichever gdb resumes.
set schedule-multiple on
define seek
  monitor seek $arg0
  maintenance flush register-cache
end
document seek
Go to another place of the replay: EXIT (an exit count, as 'monitor when'
prints it), a record time (2.5s) or #N (a place 'monitor checkpoint' saved).
end
`

// writeGDBCommands writes gdbCommands to a file for gdb's -x and returns
// its path.
func writeGDBCommands() (string, error) {
	f, err := os.CreateTemp("", "reprise-gdb-*.gdb")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(gdbCommands)
	if err := errors.Join(err, f.Close()); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("gdb commands: %w", err)
	}
	return f.Name(), nil
}

// serveGDB replays opts for one gdb remote client, which connects to
// addr: w is told where it listens, unless client starts the client
// itself (given the address; serveGDB waits for it to end). It returns
// the replay's result, nil if gdb killed the replay or the client went.
func serveGDB(ctx context.Context, opts replayer.Options, addr string, w io.Writer, client func(addr string) (*exec.Cmd, error)) (*replayer.Result, error) {
	kit := opts.Recording != nil && opts.Recording.Header.Linux == nil
	// Opened once for all the session's replays: the tape's checkpoint
	// file, each checkpoint's RAM hashed the first time a replay starts
	// from it, and, for a Linux program, those the replays take as they go.
	starts, err := replayer.OpenCheckpointSet(opts.Recording, opts.Checkpoints, !kit)
	if err != nil {
		return nil, err
	}
	defer starts.Close()
	opts.Checkpoints, opts.CheckpointSet = "", starts
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gdb listener: %w", err)
	}
	defer ln.Close()
	at := ln.Addr().String()
	if client == nil {
		fmt.Fprintf(w, "reprise: waiting for gdb on %s (target remote %s)\n", at, at)
	}
	var gdbDone chan struct{} // closed when the gdb started here ends
	if client != nil {
		gdb, err := client(at)
		if err != nil {
			return nil, fmt.Errorf("starting gdb: %w", err)
		}
		gdbDone = make(chan struct{})
		go func() {
			gdb.Wait()
			close(gdbDone)
			ln.Close() // a gdb that ends before connecting ends the wait
		}()
	}
	conn, err := ln.Accept()
	if err != nil {
		return nil, fmt.Errorf("waiting for gdb: %w", err)
	}
	defer conn.Close()
	var res *replayer.Result
	err = debugger.Serve(conn, func(s *debugger.Session, from, until int) (uint32, error) {
		o := opts
		if kit {
			o.KitDebugger = s
		} else {
			o.Debugger, o.KeepCheckpoint = s, s.KeepCheckpoint
		}
		o.Start, o.Until = from, until
		r, err := replayer.Replay(ctx, o)
		if r != nil && r.Result != nil {
			res = r
			return r.Status, err
		}
		return 0, err
	}, starts)
	if gdbDone != nil {
		conn.Close()
		<-gdbDone
	}
	var gone *debugger.ClientError
	if errors.As(err, &gone) {
		fmt.Fprintf(w, "reprise: notice: %v; the replay ended with the session\n", err)
		return nil, nil
	}
	return res, err
}

// gdbProgram is gdb's arguments naming the program rec recorded: a Linux
// program's executable under its root; a kit guest's image — the kit
// this reprise builds with its DWARF if that loads as the image the tape
// embeds, else the embedded image itself, written to a file cleanup
// removes.
func gdbProgram(ctx context.Context, rec *replayer.Recording) (args []string, cleanup func(), err error) {
	if l := rec.Header.Linux; l != nil {
		root := cmp.Or(l.Root, "/")
		return []string{filepath.Join(root, l.Path), "-ex", "set sysroot " + root}, func() {}, nil
	}
	img, err := rec.Image()
	if err != nil {
		return nil, nil, err
	}
	if k, err := guest.Build(ctx); err == nil {
		if dbg, err := elffile.OpenImage(k.DebugImage()); err == nil && dbg.LoadsAs(img) {
			return []string{k.DebugImage(), "-ex", "directory " + k.SourceDir()}, func() {}, nil
		}
	}
	f, err := os.CreateTemp("", "reprise-image-*.elf")
	if err != nil {
		return nil, nil, err
	}
	_, err = f.Write(img.Raw)
	if err := errors.Join(err, f.Close()); err != nil {
		os.Remove(f.Name())
		return nil, nil, fmt.Errorf("the tape's guest image: %w", err)
	}
	return []string{f.Name()}, func() { os.Remove(f.Name()) }, nil
}
