package eventdb

import (
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
)

func TestMainExp(t *testing.T) {}

func init() {
	switch os.Getenv("EXP") {
	case "row":
		tunePebble = func(o *pebble.Options) { o.FormatMajorVersion = pebble.FormatFlushableIngestExcises }
	case "mem128":
		tunePebble = func(o *pebble.Options) { o.MemTableSize = 128 << 20 }
	case "mem256":
		tunePebble = func(o *pebble.Options) { o.MemTableSize = 256 << 20; o.MemTableStopWritesThreshold = 2 }
	case "nocompact":
		tunePebble = func(o *pebble.Options) { o.DisableAutomaticCompactions = true; o.L0StopWritesThreshold = 1000 }
	case "l0":
		tunePebble = func(o *pebble.Options) { o.L0StopWritesThreshold = 1000; o.L0CompactionThreshold = 8 }
	case "lbase":
		tunePebble = func(o *pebble.Options) { o.LBaseMaxBytes = 1 << 30; o.L0StopWritesThreshold = 1000 }
	}
}

func init() {
	switch os.Getenv("EXP") {
	case "l0nocomp":
		tunePebble = func(o *pebble.Options) {
			o.Levels[0].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
		}
	case "minlz":
		tunePebble = func(o *pebble.Options) {
			o.Levels[0].Compression = func() *sstable.CompressionProfile { return sstable.MinLZCompression }
		}
	case "zstd":
		tunePebble = func(o *pebble.Options) {
			o.Levels[0].Compression = func() *sstable.CompressionProfile { return sstable.ZstdCompression }
		}
	}
}

func init() {
	row := func(o *pebble.Options) { o.FormatMajorVersion = pebble.FormatFlushableIngestExcises }
	switch os.Getenv("EXP") {
	case "row8":
		tunePebble = func(o *pebble.Options) { row(o); o.L0CompactionThreshold = 8; o.L0StopWritesThreshold = 100 }
	case "row16":
		tunePebble = func(o *pebble.Options) { row(o); o.L0CompactionThreshold = 16; o.L0StopWritesThreshold = 100 }
	case "rowtf":
		tunePebble = func(o *pebble.Options) { row(o); o.TargetFileSizes[0] = 1 << 20 ; for i := 1; i < len(o.TargetFileSizes); i++ { o.TargetFileSizes[i] = 1 << 20 } }
	}
}
