// Package mm is the Linux personality's memory: a process's address space
// (the page tables the guest CPU walks, the ranges mapped in them, the
// frames a fork shares until written, the file mappings that name its
// addresses) and the allocator of the guest RAM frames behind them, with
// the bytes breakpoints patched in those frames.
//
// It knows no kernel and no current thread: the kernel passes the address
// space or the frames a call acts on. Every choice it makes — which frame
// backs which page, the order frames are taken and given back, the page
// tables' entries — follows from the calls alone, so a replay makes the
// choices its recording made.
package mm
