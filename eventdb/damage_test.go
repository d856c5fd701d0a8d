package eventdb

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
	"github.com/stretchr/testify/require"
)

// rawSet writes key=value straight into the Pebble DB under dir.
func rawSet(t *testing.T, dir string, key, value []byte) {
	t.Helper()
	pdb, err := pebble.Open(dir, pebbleOptions(nil))
	require.NoError(t, err)
	require.NoError(t, pdb.Set(key, value, pebble.Sync))
	require.NoError(t, pdb.Close())
}

func TestSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	ingest(t, db, genEvents(1, 100, 2))
	require.NoError(t, db.Close())

	rawSet(t, dir, codec.MetaVersionKey, binary.BigEndian.AppendUint32(nil, 2))
	_, err = Open(dir, nil)
	var se *SchemaError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, uint32(2), se.Found)
	require.Equal(t, uint32(SchemaVersion), se.Want)
	require.ErrorContains(t, err, "schema version 2, this build reads version 1")
	require.ErrorContains(t, err, "re-run the replays into a new DB")
	require.ErrorContains(t, err, dir)

	// The DB was not touched: with the right version back it opens.
	rawSet(t, dir, codec.MetaVersionKey, binary.BigEndian.AppendUint32(nil, SchemaVersion))
	db, err = Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	rawSet(t, dir, codec.MetaVersionKey, []byte{1})
	_, err = Open(dir, nil)
	require.ErrorAs(t, err, new(*CorruptError))
}

func TestNotAnEventDB(t *testing.T) {
	dir := t.TempDir()
	rawSet(t, dir, []byte("something else"), []byte("x"))
	_, err := Open(dir, nil)
	require.ErrorIs(t, err, ErrNotDB)
}

func TestDamagedValue(t *testing.T) {
	evs := genEvents(3, 2000, 4)
	sorted := keyOrder(evs)
	victim := sorted[777] // damage this event's value
	key := (&codec.EventKey{Run: 1, Kind: uint8(victim.Kind), Thread: victim.Thread,
		Exit: victim.Pos.Exit, Branch: victim.Pos.Branch, Seq: victim.Seq}).Append(nil)

	for _, tc := range []struct {
		name, value, reason string
	}{
		{"garbage", "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "time at byte 1: varint overflows 64 bits"},
		{"truncated", "\x01\x02\x00\x05\x03\x01", "args count at byte 4: count 3 does not fit in the 1 bytes left after it"},
		{"wrong version", "\x09\x00\x00\x00\x00\x00", "value version 9, want 1"},
		{"empty", "", "version at byte 0: truncated"},
		{"trailing", "\x01\x00\x00\x00\x00\x00\x00", "1 trailing bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := Open(dir, nil)
			require.NoError(t, err)
			ingest(t, db, evs)
			require.NoError(t, db.Close())
			rawSet(t, dir, key, []byte(tc.value))

			db, err = Open(dir, nil)
			require.NoError(t, err)
			defer db.Close()
			it := db.Query(Query{Run: 1})
			n := 0
			for it.Next() {
				require.True(t, eventEqual(&sorted[n], it.Event()))
				n++
			}
			require.Equal(t, 777, n, "events before the damaged one")
			err = it.Close()
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, key, ce.Key)
			require.ErrorContains(t, err, tc.reason)
			require.ErrorContains(t, err, describeKey(key))
			t.Log(err)

			// A query whose range misses the damage is unaffected.
			other := (victim.Thread + 1) % 4
			got := collect(t, db, Query{Run: 1, Kinds: []Kind{victim.Kind}, Thread: &other})
			require.NotEmpty(t, got)
		})
	}
}

func TestDamagedKeyAndRunRecord(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	ingest(t, db, genEvents(4, 10, 2))
	require.NoError(t, db.Close())

	// A 29-byte key inside run 1's range.
	bad := codec.ThreadEvents(1, uint8(KindSample), 0)
	bad = append(bad, make([]byte, 19)...)
	rawSet(t, dir, bad, []byte{1, 0, 0, 0, 0, 0})
	// A damaged run record.
	rawSet(t, dir, codec.RunKey(1), []byte{1, 0, 0xff})

	db, err = Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()

	_, err = db.Runs()
	require.ErrorAs(t, err, new(*CorruptError))
	require.ErrorContains(t, err, "run 1 record")
	_, err = db.Run(1)
	require.ErrorAs(t, err, new(*CorruptError))

	// Query needs the run record; restore it and look at the key.
	rawOK := appendRun(nil, &Run{ID: 1, Tape: "t"})
	require.NoError(t, db.pdb.Set(codec.RunKey(1), rawOK, pebble.Sync))
	it := db.Query(Query{Run: 1, Kinds: []Kind{KindSample}})
	for it.Next() {
	}
	require.ErrorAs(t, it.Err(), new(*CorruptError))
	require.ErrorContains(t, it.Err(), "not 30 bytes")
	require.Error(t, it.Close())
}
