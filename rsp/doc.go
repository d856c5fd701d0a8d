// Package rsp speaks the wire side of gdb's Remote Serial Protocol (the gdb
// manual, appendix "GDB Remote Serial Protocol"): it frames and
// acknowledges packets, undoes their escaping, parses each command gdb
// sends into a typed Command, and encodes the replies a stub sends back.
// What a command does to a replay is the server's business, not this
// package's. The peer is untrusted: nothing it sends panics, and nothing
// it sends makes this package allocate more than a few times MaxPacket.
//
// # Framing
//
//	packet     '$' payload '#' c c
//	           c c: the sum of the payload's bytes as sent (escaped, run-
//	           length encoded), modulo 256, as two hex digits
//	ack        '+' the packet arrived intact, '-' send it again
//	interrupt  the single byte 0x03 outside a packet: stop the target
//
//	gdb                              stub
//	$m1000,4#8e      ------------>
//	                 <------------   +
//	                 <------------   $0f1e2d3c#58
//	+                ------------>
//
// Both sides acknowledge every packet until gdb sends QStartNoAckMode and
// the stub answers OK (that OK is still acknowledged); from then on
// neither sends nor expects acks, and a Conn no longer checks checksums:
// the transport is reliable, the manual allows ignoring them, and
// gdbserver does. Bytes outside packets that are neither acks nor 0x03
// are skipped.
//
// # Escaping and run-length encoding
//
//	escape  '}' then the byte XOR 0x20, for the four bytes that would
//	        otherwise be read as framing:
//	          '$' 0x24 -> "}\x04"     '#' 0x23 -> "}\x03"
//	          '}' 0x7d -> "}]"        '*' 0x2a -> "}\x0a"
//	run     b '*' n: b, then n-29 more copies of b, n printable
//	        (' ' to '~': 3 to 97 copies); "0* " is "0000"
//
// Conn.Read expands runs, then undoes escapes, in that order, as gdb does.
// Conn.Write escapes every payload and never uses runs. Binary payloads
// (the data of an X packet, a qXfer reply) are raw bytes above the Conn:
// Parse sees them unescaped and the reply encoders return them unescaped.
// Text payloads never hold those four bytes, so escaping all packets
// changes nothing for them.
//
// # Thread ids
//
// Numbers in packets are hex. A thread id is, with the multiprocess
// extensions gdb always offers:
//
//	p<pid>.<tid>  thread tid of process pid
//	p<pid>        every thread of process pid, the same as p<pid>.-1
//	p-1           every thread of every process
//	<tid>         thread tid, without multiprocess: the one process
//	-1            every thread (All)
//	0             any thread, the stub picks (Any)
//
// ThreadID.String writes the multiprocess form, so a server using it must
// answer multiprocess+ in qSupported.
//
// # Bounds
//
// Read refuses a packet longer than MaxPacket bytes as sent, reading no
// further than that (and its 4 KiB read buffer), and one that expands to
// more than MaxPacket bytes; Supported advertises MaxPacket to gdb as
// PacketSize, so gdb never sends either. Parse checks every number before
// it is used: hex fields hold at most 16 digits; a memory read's length is
// clamped to MaxPacket/2, the most a hex reply can carry, and a qXfer
// read's to MaxPacket (gdb accepts a short read of either); a memory range
// may not wrap past 2^64; thread and process ids are at most 2^31-1;
// register numbers at most 4095; breakpoint and watchpoint sizes at most
// 1 MiB; a vCont carries at most 1024 actions, a qSupported 256
// features and a QCatchSyscalls 1024 calls; a host I/O (vFile) path is at most 4096 bytes, a pread's count
// clamped to MaxPacket/2 (its binary reply may double in escaping), a
// descriptor at most 2^20.
//
// # Concurrency
//
// A Conn is for one reader and one writer. In ack mode Write reads the
// peer's ack itself, so Read and Write must not run at once; in no-ack
// mode one goroutine may Read (to see 0x03 while the target runs) while
// another Writes.
package rsp
