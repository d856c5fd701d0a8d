// Package tape is the on-disk recording of one guest run
// (docs/architecture.md, "Record and replay"): a header describing the
// machine, then append-only chunks of events. The recorder writes it with a
// Writer; the replayer and `reprise info` read it with a Reader or Summarize.
// From reprise it imports only abi (the limits a header is checked against)
// and host/userfile.
//
// # Guarantees
//
// Every byte of a tape is covered by a CRC32C, and every length is checked
// against a limit before anything is read or allocated. A reader never
// panics on a damaged tape: it returns the events up to the damage, then a
// *CorruptError (bytes present but wrong) or a *TruncatedError (the file
// ends inside a block), each naming the byte offset and why.
//
// A chunk reaches the file in one write, so a recorder killed at any moment
// (SIGKILL included) leaves a tape readable up to its last whole chunk,
// followed at most by a partial chunk that reads as a *TruncatedError. A
// tape cut exactly between two chunks is simply shorter and ends in io.EOF:
// only the End event tells a finished recording from a cut one.
//
// Cuts inside the file header: an empty file, or one holding only the
// first bytes of the magic, is a *TruncatedError at offset 0; a file whose
// first bytes differ from the magic is a *CorruptError at offset 0 that
// wraps ErrNotTape.
//
// # Format (version 9, stable; versions 1 to 8 are still read)
//
// All integers are little-endian; CRCs are CRC32C (Castagnoli).
//
//	tape:
//	+------------------------------------------------------------------+
//	| prefix    magic "REPRISE\x00" [8] | version u32 | crc u32 [16 B]  |
//	+------------------------------------------------------------------+
//	| frame "HEAD", count 0: header, JSON           (≤ 64 MiB)         |
//	+------------------------------------------------------------------+
//	| frame "IMAG", count 0: guest ELF image bytes  (≤ 256 MiB)        |
//	| frame "FILE", count i: file i's bytes, for each packed file of a  |
//	|   Linux program, in header order (all ≤ 1 GiB; since version 4;  |
//	|   since version 5 every file the header lists is packed)         |
//	+------------------------------------------------------------------+
//	| frame "CHNK", count n0: chunk 0, n0 events    (≤ 16 MiB)         |
//	| frame "HOST", count h0: h0 host records       (≤ 16 MiB)         |
//	| frame "CHNK", count n1: chunk 1, n1 events                       |
//	| ...                                                              |
//	+------------------------------------------------------------------+
//
// The prefix's crc covers its first 12 bytes. Every block that follows is
// a frame, whose header has a crc of its own so that a damaged length is
// caught before it is used:
//
//	frame:
//	0       4         8        12         16         20
//	+-------+---------+--------+----------+----------+--------------------+
//	| tag   | length  | count  | body crc | frame crc| body (length bytes)|
//	| [4]   | u32     | u32    | u32      | u32      |                    |
//	+-------+---------+--------+----------+----------+--------------------+
//	  frame crc = CRC32C(bytes 0..16), body crc = CRC32C(body)
//
// The header body is a JSON object (unknown fields are ignored, so fields
// may be added within a version): created (RFC 3339, UTC), source,
// mem_bytes, timer_hz, cmdline, cpuid (a list of {function, index, flags,
// eax, ebx, ecx, edx}), image ({name, sha256 in hex, size}), devices,
// host, reprise, notes, and for a Linux program (since version 4) linux:
// {path, argv, env, random (hex), epoch, host_cpu, root, mounts (a list of
// {guest, host}), files (a list of {host, size, sha256}), stdin, cwd (the
// directory it started in), user ({uid, gid}, since version 6: who it ran
// as; before, 1000), personality}. Since version 5 a Linux program sees the host's files as
// it asks for them (file events, below) and the header lists only root,
// the host directory it saw as "/", mounts, what the user placed at guest
// paths, and files, the ones packed in the tape, each followed by its
// FILE frame. (Version 4 had no root or mounts and listed every file the
// program saw as {guest, host, size, sha256, mode, packed}; only the
// packed ones had a frame. Guest paths and modes are checked as version 4
// did, then dropped.) A header is checked before it is used, by the
// writer and the reader alike: a known source, 1 to 256 CPUID entries,
// mem_bytes 0 (the VMM's default) or a size guest RAM can have (a
// multiple of 2 MiB from 8 MiB to 4 GiB), timer_hz at most 10000, a
// command line shorter than 256 bytes, an absolute disk path, a Linux
// program's argv and env within Linux's bounds, an absolute root, at most
// 256 mounts with absolute paths and no guest path twice, an absolute
// stdin if any, at most 65536 files with absolute host paths, a SHA-256
// that is not all zeros and none listed twice (host, size and hash);
// anything else is a *CorruptError at the header. The image frame's
// length must equal image.size, and its bytes must hash to image.sha256.
// The format version lives only in the prefix.
//
// Host frames (version 3) may appear anywhere after the image frame, the
// end event included: they hold the recording host's own trace of the VM
// (vCPU entries and exits, host scheduling), count records in package
// hostview's encoding, which this package does not interpret. A reader
// verifies them like chunks and hands them to Reader.OnHost.
//
// A chunk's body is count events back to back, with nothing after them.
// Pos.Exit (the exit ordinal: how many guest exits came before), Pos.Branch
// and HostTime are delta-coded against the previous event of the same
// chunk, starting from zero in every chunk, so each chunk decodes on its
// own. ExitReason is the KVM exit reason at the event, a different thing.
// Value is coded against the event's own HostTime: it is a clock reading
// taken with the event. svarint is a zig-zag varint
// (encoding/binary.AppendVarint) of the wrapping difference.
//
//	event:
//	+------+-------+-----------+-------------+-----------+--------+--------+
//	| kind | flags | Δexit     | Δbranch     | Δhosttime | exit   | digest |
//	|      |       | (ordinal) |             |           | reason |        |
//	| u8   | u8    | svarint   | svarint     | svarint   | u8     | u64    |
//	+------+-------+-----------+-------------+-----------+--------+--------+
//	then, in this order, each only when present:
//	  rip u64, rcx uvarint        flags bit 2 (RIP or RCX non-zero)
//	  port u16                    flags bit 3 (Port non-zero)
//	  vector u8                   kind = interrupt
//	  value−hosttime svarint      flags bit 4 (Value non-zero)
//	  len u8, data [len]          flags bit 5 (Data non-empty; len ≤ 64)
//	  len uvarint, data [len]     the same for net-rx and net-tx (len ≤ 65535)
//	  end                         kind = end:
//	    reason (uvarint len ≤ 64, bytes), status uvarint,
//	    fault (uvarint len ≤ 64 KiB, bytes), ram hash [32] (SHA-256
//	    of RAM's nonzero 4 KiB pages, each as its address u64 and its
//	    bytes, then RAM's size u64; before version 9 of every byte),
//	    console hash [32], console bytes uvarint
//	  fact                        kind = file (since version 5), ≤ 8 MiB:
//	    op u8 (1 stat, 2 list, 3 read),
//	    path (uvarint len 1..4096, bytes), errno uvarint (≤ 4095),
//	    then, only when errno is 0, the answer:
//	      stat:  stat
//	      list:  count uvarint (≤ 65536), then count times
//	             name (uvarint len 1..255, bytes), stat
//	      read:  size uvarint, sha256 [32]
//
//	stat: mode uvarint, uid uvarint, gid uvarint, nlink uvarint,
//	      size uvarint, atime svarint, mtime svarint, ctime svarint
//	      (ns since the Unix epoch, not deltas), link (uvarint len ≤ 4095, bytes;
//	      non-empty exactly for a symbolic link)
//
//	flags: bits 0-1 Where (0 at exit, 1 at branch, 2 at window; 3 invalid),
//	       bits 6-7 reserved (zero).
//
// An interrupt at a small position delta with a timer value typically
// takes 20-25 bytes. Every decoded event must also satisfy the rules
// Append enforces (see Event); the End event, if any, is the last.
//
// Kinds: 1 interrupt, 2 port-in, 3 time, 4 entropy, 5 end, since
// version 2, 6 net-rx and 7 net-tx (network frames), and since version 5,
// 8 file (an observation of the host's files: FileFact). A tape older
// than a kind holding it is damaged: no writer of its version wrote one.
//
// A fact's lengths are checked before anything is allocated for them: a
// listing's count against 65536 and against the bytes left for its
// entries. Its entries are sorted by name (bytewise), none twice, each
// name as getdents gives it (no '/' or NUL, not "." or ".."), and since
// version 7 followed by the order the host listed them in (a count, 0 or
// the entries', then each entry's index once); a stat's
// mode is a file type and permission bits (07777); errno is set only
// when the host did not answer, and then nothing else is.
//
// A new kind, field or flag that old readers cannot skip takes a new
// FormatVersion; readers refuse versions newer than their own.
package tape
