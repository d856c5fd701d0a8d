package checkpoint_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/checkpoint"
)

// A HEAD frame is a few hundred bytes of JSON; a forged one of 60 MiB
// (valid JSON, padded with spaces, its checksum right) is refused as
// damage before it is read, not decoded: it used to be accepted.
func TestHugeHeadIsRefused(t *testing.T) {
	path, _ := write(t)
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	const magicLen = len("reprise checkpoints\n")
	require.Equal(t, "HEAD", string(good[magicLen:magicLen+4]))
	size := binary.LittleEndian.Uint32(good[magicLen+4:])
	head := good[magicLen+12 : magicLen+12+int(size)]
	rest := good[magicLen+12+int(size):]

	body := append(bytes.Clone(head), bytes.Repeat([]byte{' '}, 60<<20)...)
	frame := make([]byte, 12, 12+len(body))
	copy(frame, "HEAD")
	binary.LittleEndian.PutUint32(frame[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(frame[8:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	forged := append(append(append(append([]byte(nil), good[:magicLen]...), frame...), body...), rest...)
	p := filepath.Join(t.TempDir(), "head.ckpt")
	require.NoError(t, os.WriteFile(p, forged, 0o644))

	f, err := checkpoint.Open(p, rec)
	if err == nil {
		f.Close()
	}
	var ce *checkpoint.CorruptError
	require.True(t, errors.As(err, &ce), "a 60 MiB HEAD frame: %v", err)
	require.ErrorContains(t, err, fmt.Sprintf("a HEAD frame of %d bytes (at most 65536)", len(body)))
}
