// Package codec holds eventdb's on-disk encodings: the event and meta keys,
// the event value and the primitives run records are built from. The
// layouts are drawn, and declared stable, in the eventdb package comment;
// this package implements them and nothing else. Decoders never panic: a
// damaged key or value comes back as an error saying what is wrong.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// SchemaVersion is the version of every layout in this package: the keys,
// the event value and the run record. It is stored once per DB under
// MetaVersionKey and again as the first byte of every value. Any change to
// a layout bumps it.
const SchemaVersion = 1

// Key prefixes. Event keys sort before meta keys ('e' < 'm').
const (
	PrefixEvent = 'e'
	PrefixMeta  = 'm'

	metaVersion = 'v'
	metaRun     = 'r'
	metaSymbols = 's'
	metaHost    = 'h'
)

// EventKeyLen is the length of every event key.
const EventKeyLen = 1 + 4 + 1 + 4 + 8 + 8 + 4

// MetaVersionKey holds the DB's schema version as a u32 BE.
var MetaVersionKey = []byte{PrefixMeta, metaVersion}

// MetaSymbolsKey holds the guest image's symbol table.
var MetaSymbolsKey = []byte{PrefixMeta, metaSymbols}

// EventKey is a decoded event key.
type EventKey struct {
	Run    uint32
	Kind   uint8
	Thread uint32
	Exit   uint64
	Branch uint64
	Seq    uint32
}

// Append appends the key's encoding to dst.
func (k *EventKey) Append(dst []byte) []byte {
	dst = append(dst, PrefixEvent)
	dst = binary.BigEndian.AppendUint32(dst, k.Run)
	dst = append(dst, k.Kind)
	dst = binary.BigEndian.AppendUint32(dst, k.Thread)
	dst = binary.BigEndian.AppendUint64(dst, k.Exit)
	dst = binary.BigEndian.AppendUint64(dst, k.Branch)
	return binary.BigEndian.AppendUint32(dst, k.Seq)
}

// Position is the (exit, branch) part of an event key.
type Position struct{ Exit, Branch uint64 }

// Less reports whether p sorts before q.
func (p Position) Less(q Position) bool {
	return p.Exit < q.Exit || p.Exit == q.Exit && p.Branch < q.Branch
}

// KeyPosition returns the position in an event key, which must be
// EventKeyLen bytes.
func KeyPosition(key []byte) Position {
	return Position{Exit: binary.BigEndian.Uint64(key[10:]), Branch: binary.BigEndian.Uint64(key[18:])}
}

// errKeyLen and errKeyPrefix are the two ways an event key can be wrong.
var (
	errKeyLen    = errors.New("event key is not 30 bytes")
	errKeyPrefix = errors.New("event key does not start with 'e'")
)

// DecodeEventKey decodes an event key.
func DecodeEventKey(b []byte) (EventKey, error) {
	if len(b) != EventKeyLen {
		return EventKey{}, fmt.Errorf("%w (%d bytes)", errKeyLen, len(b))
	}
	if b[0] != PrefixEvent {
		return EventKey{}, errKeyPrefix
	}
	return EventKey{
		Run:    binary.BigEndian.Uint32(b[1:]),
		Kind:   b[5],
		Thread: binary.BigEndian.Uint32(b[6:]),
		Exit:   binary.BigEndian.Uint64(b[10:]),
		Branch: binary.BigEndian.Uint64(b[18:]),
		Seq:    binary.BigEndian.Uint32(b[26:]),
	}, nil
}

// RunEvents is the prefix of every event key of one run.
func RunEvents(run uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{PrefixEvent}, run)
}

// KindEvents is the prefix of every event key of one kind in one run.
func KindEvents(run uint32, kind uint8) []byte {
	return append(RunEvents(run), kind)
}

// ThreadEvents is the prefix of every event key of one kind and thread in
// one run.
func ThreadEvents(run uint32, kind uint8, thread uint32) []byte {
	return binary.BigEndian.AppendUint32(KindEvents(run, kind), thread)
}

// RunKey is the meta key of run's record.
func RunKey(run uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{PrefixMeta, metaRun}, run)
}

// HostKey holds a run's host view.
func HostKey(run uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{PrefixMeta, metaHost}, run)
}

// RunKeyPrefix is the prefix of every run record key.
func RunKeyPrefix() []byte { return []byte{PrefixMeta, metaRun} }

// DecodeRunKey returns the run id of a run record key.
func DecodeRunKey(b []byte) (uint32, error) {
	if len(b) != 6 || b[0] != PrefixMeta || b[1] != metaRun {
		return 0, fmt.Errorf("run key %x is not 'm' 'r' u32", b)
	}
	return binary.BigEndian.Uint32(b[2:]), nil
}

// PrefixEnd returns the smallest key greater than every key starting with
// prefix, or nil when there is none (prefix is all 0xff): the exclusive
// upper bound of a prefix scan.
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
