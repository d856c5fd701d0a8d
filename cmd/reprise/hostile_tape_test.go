package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// forgeFirstCheckpoint rewrites the first CKPT frame of the checkpoint
// file at path with edit, its compression and checksum made right again,
// as a forger would.
func forgeFirstCheckpoint(t *testing.T, path string, edit func(c map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	off := len("reprise checkpoints\n")
	for string(raw[off:off+4]) != "CKPT" {
		off += 12 + int(binary.LittleEndian.Uint32(raw[off+4:]))
		require.Less(t, off+12, len(raw), "no CKPT frame in %s", path)
	}
	size := int(binary.LittleEndian.Uint32(raw[off+4:]))
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	meta, err := dec.DecodeAll(raw[off+12:off+12+size], nil)
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(meta, &c))
	edit(c)
	meta, err = json.Marshal(c)
	require.NoError(t, err)
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	body := enc.EncodeAll(meta, nil)
	hdr := make([]byte, 12)
	copy(hdr, "CKPT")
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(hdr[8:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	out := append(append(append(bytes.Clone(raw[:off]), hdr...), body...), raw[off+12+size:]...)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// A checkpoint's register digest is 8 bytes; one forged to 1 MiB made a
// replay print it as 2 MB of hex in its divergence message. What a
// divergence quotes of each state is bounded.
func TestForgedDigestIsNotPrintedWhole(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "d.tape")
	r := runCLI(t, nil, "record", "--checkpoint-every", "10ms", "-o", tp, "syn_cont", "iters=100", "work=8000")
	require.Equal(t, 0, r.code, r.stderr)
	forgeFirstCheckpoint(t, tp+".ckpt", func(c map[string]any) {
		c["Digest"] = bytes.Repeat([]byte{0xAB}, 1<<20) // JSON: base64, as []byte is
	})
	r = runCLI(t, nil, "replay", "-q", tp)
	require.Contains(t, []int{exitDivergence, exitDamaged}, r.code, "a forged digest is a divergence or damage: %.2000s", r.stderr)
	require.Less(t, len(r.stderr), 4096, "the message: %.2000s", r.stderr)
	t.Logf("replay of a 1 MiB digest: exit %d, %d bytes on stderr", r.code, len(r.stderr))
}
