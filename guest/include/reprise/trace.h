/*
 * The guest kernel's trace ring (docs/architecture.md, "The guest kit"):
 * events the kernel appends to a ring in kernel memory at no exit cost; the
 * VMM reads it (during replay, or at the end of a run) through the ELF symbol
 * `reprise_trace_ring`.
 *
 * Layout (little-endian, all offsets fixed):
 *
 *   struct reprise_trace_ring at symbol reprise_trace_ring
 *     0x00 u64 magic      REPRISE_TRACE_MAGIC once the kernel has booted
 *     0x08 u32 capacity   number of records (a power of two)
 *     0x0c u32 rec_size   sizeof(struct reprise_trace_rec) == 40
 *     0x10 u64 head       records ever written (monotonic, never wraps)
 *     0x18 u64 reserved
 *     0x20 rec[capacity]
 *
 * Record number n (0-based, in write order) lives at rec[n & (capacity-1)].
 * Each record carries the software branch count when it was written, so a
 * reader that also knows how many exits the guest had made (the VMM drains
 * at every exit) has the record's exact execution position.
 * The live records are n in [max(0, head - capacity), head): when the ring is
 * full the oldest record is overwritten. The kernel fills a record completely
 * before it increments head (one vCPU, kernel runs with IF=0: a reader that
 * stops the vCPU always sees whole records).
 *
 * Also exported: `reprise_current_tid` (u32), the tid of the thread the
 * kernel last switched to (0 = idle), for samplers that want the current
 * thread without decoding the ring.
 */
#ifndef REPRISE_TRACE_H
#define REPRISE_TRACE_H

#define REPRISE_TRACE_MAGIC    0x3245434152545052ULL /* "RPTRACE2" little-endian */
#define REPRISE_TRACE_CAPACITY 4096
#define REPRISE_TRACE_REC_SIZE 40

/* Record kinds (field `kind`). */
#define REPRISE_TRACE_SWITCH   1   /* tid = from, a = to tid, b = reason (below) */
#define REPRISE_TRACE_CREATE   2   /* tid = creator, a = new tid, b = start function */
#define REPRISE_TRACE_EXIT     3   /* tid = exiting thread, a = exit value */
#define REPRISE_TRACE_USER     0x10000 /* SYS_TRACE(kind, a, b): record kind =
                                          REPRISE_TRACE_USER | (kind & 0xFFFF),
                                          tid = caller */

/* Reasons of a context switch (field b of REPRISE_TRACE_SWITCH). */
#define REPRISE_SWITCH_PREEMPT 0   /* timer tick, round robin (from idle: a wake-up) */
#define REPRISE_SWITCH_BLOCK   1   /* sleep, futex wait, join */
#define REPRISE_SWITCH_YIELD   2   /* SYS_YIELD */
#define REPRISE_SWITCH_EXIT    3   /* the thread exited */

#ifndef __ASSEMBLER__
#include <stdint.h>

struct reprise_trace_rec {
	uint32_t kind;
	uint32_t tid;
	uint64_t a;
	uint64_t b;
	uint64_t ticks;    /* struct reprise_clock.ticks when written */
	uint64_t branches; /* struct reprise_swbc.count when written (0 without swbc) */
};

struct reprise_trace_ring {
	uint64_t magic;
	uint32_t capacity;
	uint32_t rec_size;
	uint64_t head;
	uint64_t reserved;
	struct reprise_trace_rec rec[REPRISE_TRACE_CAPACITY];
};

_Static_assert(sizeof(struct reprise_trace_rec) == REPRISE_TRACE_REC_SIZE, "trace record size");
_Static_assert((REPRISE_TRACE_CAPACITY & (REPRISE_TRACE_CAPACITY - 1)) == 0, "capacity power of two");
#endif
#endif
