package eventdb

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// Export writes every event of run to w as JSON Lines, in key order (by
// kind, thread, position, seq): one object per line, every field always
// present, numbers as exact decimal integers (uint64 addresses included,
// so a reader must not squeeze them through float64):
//
//	{"run":1,"seq":42,"kind":"sample","thread":3,"exit":1200,"branch":88,
//	 "time_ns":5123000,"probe":0,"addr":4199136,"args":[],"stack":[4198720,4198500]}
//
// (on one line). The field names and kind names (see Kind.String) are
// stable; fields may be added.
//
//	run      run id
//	seq      arrival ordinal within the run
//	kind     probe-entry, probe-return, sample, switch, thread-create, thread-exit, user
//	thread   guest thread id
//	exit     position: exit ordinal
//	branch   position: branch count
//	time_ns  record-time host time since the recording started, nanoseconds
//	probe    probe id (probe events), else 0
//	addr     probed address / RIP / next thread / user-event kind
//	args     probe arguments or user-event payload
//	stack    sample return addresses, innermost first
func (db *DB) Export(run uint32, w io.Writer) error {
	it := db.Query(Query{Run: run})
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	for it.Next() {
		line = appendJSON(line[:0], run, it.Event())
		if _, err := bw.Write(line); err != nil {
			_ = it.Close()
			return fmt.Errorf("eventdb: export run %d: %w", run, err)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("eventdb: export run %d: %w", run, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("eventdb: export run %d: %w", run, err)
	}
	return nil
}

func appendJSON(b []byte, run uint32, e *Event) []byte {
	b = append(b, `{"run":`...)
	b = strconv.AppendUint(b, uint64(run), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, uint64(e.Seq), 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendQuote(b, e.Kind.String())
	b = append(b, `,"thread":`...)
	b = strconv.AppendUint(b, uint64(e.Thread), 10)
	b = append(b, `,"exit":`...)
	b = strconv.AppendUint(b, e.Pos.Exit, 10)
	b = append(b, `,"branch":`...)
	b = strconv.AppendUint(b, e.Pos.Branch, 10)
	b = append(b, `,"time_ns":`...)
	b = strconv.AppendInt(b, int64(e.Time), 10)
	b = append(b, `,"probe":`...)
	b = strconv.AppendUint(b, uint64(e.Probe), 10)
	b = append(b, `,"addr":`...)
	b = strconv.AppendUint(b, e.Addr, 10)
	b = append(b, `,"args":`...)
	b = appendUints(b, e.Args)
	b = append(b, `,"stack":`...)
	b = appendUints(b, e.Stack)
	return append(b, "}\n"...)
}

func appendUints(b []byte, vs []uint64) []byte {
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, v, 10)
	}
	return append(b, ']')
}
