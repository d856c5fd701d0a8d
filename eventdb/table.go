package eventdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// stageDir is where an Ingest writes a batch's sstables, inside the DB's
// directory so that Pebble's ingestion can hard-link them instead of
// copying. Pebble removes a file once it has ingested it, and ignores
// the directory otherwise; the files a killed ingest left are removed by
// the next writable Open.
const stageDir = "eventdb-staging"

// resetStaging empties the staging directory of a DB opened for writing.
func resetStaging(dir string) error {
	stage := filepath.Join(dir, stageDir)
	if err := os.RemoveAll(stage); err != nil {
		return fmt.Errorf("eventdb: open %s: clear staged sstables: %w", dir, err)
	}
	if err := os.Mkdir(stage, 0o755); err != nil {
		return fmt.Errorf("eventdb: open %s: %w", dir, err)
	}
	return nil
}

// ingestBatch commits one batch of a run: its events, sorted, as one
// sstable, and rec (the run record with the batch's events counted) as
// another, which Pebble ingests in one step, so the count never differs
// from the events present. The keys go straight to sstables: no WAL, no
// memtable, no flush. batch numbers the commit within its run, to name
// its files.
func (db *DB) ingestBatch(buf *sortBuf, rec *Run, batch int) error {
	var paths []string
	if buf.len() > 0 {
		events := db.stagePath(rec.ID, batch, "events")
		if err := db.writeTable(events, buf.write); err != nil {
			return fmt.Errorf("write %s: %w", events, err)
		}
		paths = append(paths, events)
	}
	record := db.stagePath(rec.ID, batch, "run")
	if err := db.writeTable(record, func(w *sstable.Writer) error {
		return w.Set(codec.RunKey(rec.ID), appendRun(nil, rec))
	}); err != nil {
		removeFiles(paths)
		return fmt.Errorf("write %s: %w", record, err)
	}
	paths = append(paths, record)
	// writeTable synced the tables; Ingest syncs the directory it links
	// them into and its manifest: a commit that returned survives a kill
	// and a power cut.
	if err := db.pdb.Ingest(context.Background(), paths); err != nil {
		removeFiles(paths)
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}

func (db *DB) stagePath(run uint32, batch int, what string) string {
	return filepath.Join(db.dir, stageDir, fmt.Sprintf("run%d-%d-%s.sst", run, batch, what))
}

// writeTable creates an sstable at path with the keys fill sets, and
// syncs it. It leaves no file behind when it fails.
func (db *DB) writeTable(path string, fill func(*sstable.Writer) error) error {
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), db.tableOpts)
	err = fill(w)
	// Close finishes (and syncs) the file even after fill failed; it is
	// removed below then.
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(err, os.Remove(path))
	}
	return nil
}

// removeFiles removes staged sstables that were not ingested. Errors are
// dropped: the caller reports why the commit failed, and the next
// writable Open clears whatever is left.
func removeFiles(paths []string) {
	for _, p := range paths {
		_ = os.Remove(p)
	}
}
