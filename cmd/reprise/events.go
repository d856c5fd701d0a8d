package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/report"
)

func newEventsCmd() *cobra.Command {
	var (
		run    uint32
		kinds  []string
		thread threadFlag
		limit  limitFlag
		probe  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "events DB",
		Short: "List a database's runs, or print a run's events for inspection",
		Long: `Without --run, list the runs of an event database (one per replay with a
probe set). With --run N, print that run's events in key order (kind, then
thread, then execution position), optionally only some kinds (probe-entry,
probe-return, sample, switch, thread-create, thread-exit, user, mapping —
a Linux program's files as it mapped them, by process) or one thread, or
one probe's hits (--probe lock).

--json prints JSON Lines instead, one object a line: a run's fields, or an
event's (run, seq, kind, thread, exit, branch, time_ns, probe, addr,
symbol, args by name, stack and its symbols, a mapping's path), so
scripts need not parse
the table. Addresses are exact decimal integers.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := openDB(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			out := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			defer out.Flush()
			lines := json.NewEncoder(cmd.OutOrStdout())
			if run == 0 {
				runs, err := db.Runs()
				if err != nil {
					return &exitError{exitFailure, err}
				}
				if asJSON {
					for _, r := range runs {
						if err := lines.Encode(r); err != nil {
							return &exitError{exitFailure, err}
						}
					}
					return nil
				}
				fmt.Fprintln(out, "RUN\tEVENTS\tCOMPLETE\tPROBES\tSAMPLING\tTAPE")
				for _, r := range runs {
					names := make([]string, len(r.Probes))
					for i, p := range r.Probes {
						names[i] = p.Name
					}
					fmt.Fprintf(out, "%d\t%d\t%v\t%s\t%s\t%s\n", r.ID, r.Events, r.Complete, strings.Join(names, ","), r.Sampling, r.Tape)
				}
				return nil
			}
			q := eventdb.Query{Run: run}
			for _, k := range kinds {
				kind, err := eventdb.ParseKind(k)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				q.Kinds = append(q.Kinds, kind)
			}
			q.Thread = thread.Selected()
			r, err := db.Run(run)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			warnRun(cmd.ErrOrStderr(), args[0], run, report.RunNote{Incomplete: !r.Complete})
			if probe != "" {
				id, ok := probeID(&r, probe)
				if !ok {
					return &exitError{exitUsage, fmt.Errorf("run %d has no probe named %q", run, probe)}
				}
				q.Probe = &id
			}
			syms, err := db.Symbols()
			if err != nil {
				syms = eventdb.NewSymbols("", nil) // addresses print in hex
			}
			it := db.Query(q)
			defer it.Close()
			if !asJSON {
				fmt.Fprintln(out, "KIND\tTHREAD\tPOSITION\tTIME\tPROBE\tADDR\tARGS/STACK")
			}
			n := 0
			for it.Next() && (limit == 0 || n < int(limit)) {
				e := it.Event()
				if asJSON {
					if err := lines.Encode(eventLine(run, e, &r, syms)); err != nil {
						return &exitError{exitFailure, err}
					}
					n++
					continue
				}
				name, extra := "", hexList(e.Args)
				if p, ok := r.Probe(e.Probe); ok {
					name, extra = p.Name, namedArgs(p.Args, e.Args)
				}
				if e.Kind == eventdb.KindSample {
					extra = hexList(e.Stack)
				}
				addr := fmt.Sprintf("%#x", e.Addr)
				switch e.Kind {
				case eventdb.KindProbeEntry, eventdb.KindProbeReturn, eventdb.KindSample:
					addr = syms.DescribeIn(objectOf(e, 0), e.Addr)
				case eventdb.KindMapping:
					if m, ok := mappingOf(e, syms); ok {
						extra = fmt.Sprintf("%s [%#x, %#x) offset %#x", m.Path, m.Start, m.End, m.Offset)
					}
				}
				fmt.Fprintf(out, "%v\t%d\t%v\t%v\t%s\t%s\t%s\n", e.Kind, e.Thread, e.Pos, e.Time.Round(time.Microsecond), name, addr, extra)
				n++
			}
			if err := it.Err(); err != nil {
				return &exitError{exitFailure, err}
			}
			return nil
		},
	}
	cmd.Flags().Uint32Var(&run, "run", 0, "the run to print (0: list the runs)")
	cmd.Flags().StringSliceVar(&kinds, "kind", nil, "only these kinds")
	cmd.Flags().Var(&thread, "thread", "only this guest thread")
	cmd.Flags().Var(&limit, "limit", "print at most this many events (0: all)")
	cmd.Flags().StringVar(&probe, "probe", "", "only this probe's hits, by name (e.g. lock)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON Lines: one run or event a line")
	return cmd
}

// objectOf is the object a sample's address i (0: Addr, then its Stack)
// was in, 0 where it does not say.
func objectOf(e *eventdb.Event, i int) eventdb.ObjectRef {
	if objs := e.SampleObjects(); i < len(objs) {
		return objs[i]
	}
	return 0
}

// eventJSON is an event as reprise events --json prints it.
type eventJSON struct {
	Run     uint32            `json:"run"`
	Seq     uint64            `json:"seq"`
	Kind    string            `json:"kind"`
	Thread  uint32            `json:"thread"`
	Exit    uint64            `json:"exit"`
	Branch  uint64            `json:"branch"`
	TimeNs  int64             `json:"time_ns"`
	Probe   string            `json:"probe,omitempty"`
	Addr    uint64            `json:"addr"`
	Symbol  string            `json:"symbol,omitempty"`
	Args    map[string]uint64 `json:"args,omitempty"`
	Stack   []uint64          `json:"stack,omitempty"`
	Symbols []string          `json:"stack_symbols,omitempty"`
	Path    string            `json:"path,omitempty"` // a mapping's file
}

// eventLine is e of run r as a JSON line: its probe and arguments by the
// probe table's names (an argument without one is argN; a sample's is its
// cost), its addresses named by the DB's symbols.
func eventLine(run uint32, e *eventdb.Event, r *eventdb.Run, syms *eventdb.Symbols) eventJSON {
	out := eventJSON{Run: run, Seq: uint64(e.Seq), Kind: e.Kind.String(), Thread: e.Thread, Exit: e.Pos.Exit, Branch: e.Pos.Branch,
		TimeNs: int64(e.Time), Addr: e.Addr, Stack: e.Stack}
	p, isProbe := r.Probe(e.Probe)
	if isProbe {
		out.Probe = p.Name
	}
	if len(e.Args) > 0 {
		out.Args = map[string]uint64{}
		for i, v := range e.Args {
			name := fmt.Sprintf("arg%d", i)
			switch {
			case isProbe && i < len(p.Args):
				name = p.Args[i]
			case e.Kind == eventdb.KindSample && i == 0:
				name = "cost" // eventdb.SampleCost
			case e.Kind == eventdb.KindSample && i == 1:
				name = "system" // eventdb.SampleSystem
			case e.Kind == eventdb.KindSample:
				name = fmt.Sprintf("object%d", i-2) // of the address, then of each stack entry
			}
			out.Args[name] = v
		}
	}
	if e.Kind == eventdb.KindProbeEntry || e.Kind == eventdb.KindProbeReturn || e.Kind == eventdb.KindSample {
		out.Symbol = syms.DescribeIn(objectOf(e, 0), e.Addr)
	}
	for i, a := range e.Stack {
		out.Symbols = append(out.Symbols, syms.DescribeIn(objectOf(e, i+1), a))
	}
	if e.Kind == eventdb.KindMapping {
		out.Args = nil
		if m, ok := mappingOf(e, syms); ok {
			out.Path = m.Path
			out.Args = map[string]uint64{"end": m.End, "offset": m.Offset}
		}
	}
	return out
}

// mappingOf is the file mapping a mapping event stands for.
func mappingOf(e *eventdb.Event, syms *eventdb.Symbols) (eventdb.Mapping, bool) {
	if len(e.Args) < 4 || e.Args[3] >= uint64(len(syms.Mappings)) {
		return eventdb.Mapping{}, false
	}
	return syms.Mappings[e.Args[3]], true
}

func probeID(r *eventdb.Run, name string) (uint32, bool) {
	for _, p := range r.Probes {
		if p.Name == name {
			return p.ID, true
		}
	}
	return 0, false
}

// namedArgs prints arguments as name=value with the probe table's names.
func namedArgs(names []string, v []uint64) string {
	s := make([]string, len(v))
	for i, x := range v {
		if i < len(names) {
			s[i] = fmt.Sprintf("%s=%#x", names[i], x)
		} else {
			s[i] = fmt.Sprintf("%#x", x)
		}
	}
	return strings.Join(s, " ")
}

func hexList(v []uint64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%#x", x)
	}
	return strings.Join(s, " ")
}
