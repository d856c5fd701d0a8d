/*
 * The guest–VMM contract of reprise: guest-physical layout, I/O ports,
 * hypercalls, the boot-info, clock and swbc pages, and the guest kernel's
 * system-call numbers. The Go mirror is package abi (abi/abi.go); a test
 * there parses this file and fails if the two disagree, so change both.
 *
 * Everything is identity mapped (GVA == GPA). The VMM builds the GDT, IDT,
 * TSS and page tables in the system area below 2 MiB before the kernel runs.
 */
#ifndef REPRISE_ABI_H
#define REPRISE_ABI_H

/* ---- guest-physical layout (system area: 4 KiB pages, supervisor unless noted) */
#define REPRISE_PML4        0x1000
#define REPRISE_PDPT        0x2000
#define REPRISE_PD          0x3000   /* 4 pages: up to 4 GiB of 2 MiB mappings */
#define REPRISE_PT0         0x7000   /* 4 KiB mappings of the first 2 MiB */
#define REPRISE_GDT         0x8000
#define REPRISE_IDT         0x9000
#define REPRISE_TSS         0xA000   /* 0x68 bytes + I/O bitmap (8 KiB + 1) */
#define REPRISE_BOOTINFO    0xD000   /* struct reprise_bootinfo */
#define REPRISE_CLOCK       0xE000   /* struct reprise_clock: user read-only */
#define REPRISE_SWBC        0xF000   /* struct reprise_swbc: user read-write */
#define REPRISE_IST1_TOP    0x14000  /* #DF, NMI, #MC */
#define REPRISE_IST2_TOP    0x18000  /* #BP (probes, issue 5) */
#define REPRISE_BOOT_STACK_TOP 0x30000 /* rsp at kernel entry */
#define REPRISE_COUNTER_TABLES 0x30000 /* 5 pages: the register branch counter's page tables */
#define REPRISE_COUNTER_ZERO   0x35000 /* read-only zeros every counted block loads */
#define REPRISE_COUNTER_GUARD_TOP 0x8000000FFFULL /* the guard page's top byte (virtual) */
#define REPRISE_PROBE_AREA  0x1F0000 /* 64 KiB, user read/execute in every run: where a
                                        replay puts the out-of-line copies of probed
                                        instructions. The guest must not use it. */
#define REPRISE_PROBE_AREA_SIZE 0x10000
#define REPRISE_KERNEL_BASE 0x200000 /* 2..4 MiB: kernel image, supervisor */
#define REPRISE_USER_BASE   0x400000 /* 4 MiB..end of RAM: user, 2 MiB pages */

/* TSS field the kernel rewrites on every thread switch. */
#define REPRISE_TSS_RSP0    (REPRISE_TSS + 4)

/* ---- segment selectors */
#define REPRISE_SEL_KCODE   0x08
#define REPRISE_SEL_KDATA   0x10
#define REPRISE_SEL_UDATA   0x1B     /* 0x18 | RPL3 */
#define REPRISE_SEL_UCODE   0x23     /* 0x20 | RPL3 */
#define REPRISE_SEL_TSS     0x28

/* ---- interrupts: the VMM's interrupt controller maps line n to vector 0x20+n */
#define REPRISE_IRQ_BASE    0x20
#define REPRISE_IRQ_TIMER   0        /* vector 0x20 */
#define REPRISE_IRQ_SOFT    1        /* vector 0x21: raised by writing REPRISE_PORT_INTC_RAISE */
#define REPRISE_IRQ_DISK    2        /* vector 0x22: a disk request completed */
#define REPRISE_IRQ_NIC     3        /* vector 0x23: received frames were delivered */
#define REPRISE_IRQ_SERIAL  4        /* vector 0x24 (reserved, no input yet) */
/* IDT: the VMM points vector v at (symbol reprise_vectors) + v * 16. */
#define REPRISE_VECTOR_STUB_SIZE 16

/* ---- I/O ports */
#define REPRISE_PORT_SERIAL   0x3F8  /* COM1, 16550 subset: THR/LSR are enough */
#define REPRISE_PORT_EXIT     0x501  /* 32-bit out: guest exit status; VM stops */
#define REPRISE_PORT_HCALL    0x510  /* 32-bit out: hypercall number (see below) */
#define REPRISE_PORT_TIMER    0x520  /* 32-bit out: tick period in microseconds, 0 stops */
#define REPRISE_PORT_INTC_MASK 0x530 /* 32-bit out: mask of disabled IRQ lines */
#define REPRISE_PORT_INTC_RAISE 0x531 /* 32-bit out: raise IRQ line n (a software interrupt request) */
#define REPRISE_PORT_ENTROPY  0x540  /* 32-bit in: random bits from the host (logged when recording) */
#define REPRISE_PORT_DISK     0x550  /* 32-bit out: GPA of a struct reprise_disk_req: submit it */
#define REPRISE_PORT_DISK_CAP 0x554  /* 32-bit in: capacity in sectors (0: no disk) */
#define REPRISE_PORT_NIC_RXRING 0x560 /* 32-bit out: GPA of the RX ring (REPRISE_NIC_RING descriptors) */
#define REPRISE_PORT_NIC_TXRING 0x564 /* 32-bit out: GPA of the TX ring */
#define REPRISE_PORT_NIC_RXTAIL 0x568 /* 32-bit out: RX buffers are posted up to this free-running index */
#define REPRISE_PORT_NIC_TXTAIL 0x56C /* 32-bit out: TX frames are queued up to this index: sent now */
#define REPRISE_PORT_NIC_INFO   0x570 /* 32-bit in: 1 if a network backend is attached, else 0 */
#define REPRISE_PORT_SWBC     0xE5   /* 8-bit out from the swbc hook: target reached (below 0x100:
                                        `out %al, $imm8` leaves every other register alone) */
#define REPRISE_PORT_PROBE    0xE8   /* 8-bit out: a replay's probe site, patched to
                                        `out %al, $imm8` (2 bytes) to exit straight from CPL3;
                                        the guest kit never writes it itself */
#define REPRISE_PORT_NULL     0x5F0  /* writes ignored, reads 0: exit round-trip benchmarks.
                                        SWBC, PROBE and NULL are the kit's ports the TSS I/O
                                        bitmap opens to CPL3. */

/* ---- hypercalls (CPL0 only): `out %eax, %dx` with dx = REPRISE_PORT_HCALL,
 * eax = number, arguments in rdi, rsi, r8; the VMM writes the result to rax. */
#define REPRISE_HC_TIME       1      /* rax = guest monotonic ns (exact, logged) */
#define REPRISE_HC_MARK       2      /* rdi = marker id: VMM timestamps it (benchmarks); the
                                        latest mark of each of at most REPRISE_MARK_MAX_IDS ids is
                                        kept, a mark of one id more returns -1 in rax */
#define REPRISE_HC_FAULT      3      /* rdi = vector, rsi = GPA of struct reprise_frame,
                                        r8 = cr2: unrecoverable guest fault, VM stops */
#define REPRISE_HC_BREAKPOINT 4      /* reserved for int3 probes (issue 5) */

/* ---- guest kernel system calls: `ud2` with rax = number, args in rdi, rsi,
 * rdx, r10, r8; result in rax; every other register preserved. */
#define SYS_EXIT          0   /* (status): the whole guest stops */
#define SYS_WRITE         1   /* (buf, len) -> len: console */
#define SYS_THREAD_CREATE 2   /* (fn, arg) -> tid or <0 */
#define SYS_THREAD_EXIT   3   /* (value) */
#define SYS_THREAD_JOIN   4   /* (tid) -> value */
#define SYS_YIELD         5
#define SYS_SLEEP_NS      6   /* (ns) */
#define SYS_FUTEX_WAIT    7   /* (addr, expected, timeout_ns or 0) -> 0 | -EAGAIN | -ETIMEDOUT */
#define SYS_FUTEX_WAKE    8   /* (addr, n) -> woken */
#define SYS_CLOCK_NS      9   /* () -> exact ns via REPRISE_HC_TIME */
#define SYS_TRACE        10   /* (kind, a, b): explicit event into the trace ring */
#define SYS_GETTID       11
#define SYS_BENCH        12   /* (op, n): kernel-side benchmark loops, see REPRISE_BENCH_* */
#define SYS_GETRANDOM    13   /* (buf, len ≤ 256) -> len: bytes from the entropy device */
#define SYS_DISK_READ    14   /* (sector, count, buf) -> 0 | -REPRISE_EIO | -REPRISE_EINVAL */
#define SYS_DISK_WRITE   15   /* (sector, count, buf) -> 0 | -REPRISE_EIO | -REPRISE_EINVAL */
#define SYS_DISK_SECTORS 16   /* () -> capacity in sectors (0: no disk) */
#define SYS_NET_SETUP    17   /* (rx_ring, tx_ring) -> 0 | -EINVAL (rings in user memory) | -EIO (no NIC) */
#define SYS_NET_RXTAIL   18   /* (index): RX buffers posted up to index */
#define SYS_NET_TXTAIL   19   /* (index): TX frames queued up to index; the device sends them at once */
#define SYS_NET_WAIT     20   /* (seen) -> RX interrupts so far; blocks while that count == seen */

/* ---- disk: a request is a struct reprise_disk_req in guest RAM; writing its
 * GPA to REPRISE_PORT_DISK submits it. Requests complete in submission
 * order; at completion the device writes the data (reads) and status into
 * guest memory and raises REPRISE_IRQ_DISK, both at one position. */
#define REPRISE_DISK_SECTOR      512
#define REPRISE_DISK_MAX_SECTORS 256  /* per request: 128 KiB */
#define REPRISE_DISK_READ        1
#define REPRISE_DISK_WRITE       2
#define REPRISE_DISK_PENDING     0    /* status until completion */
#define REPRISE_DISK_OK          1
#define REPRISE_DISK_ERROR       2    /* bad op, range, count or buffer */
/* Requests submitted and not yet completed, at most: one more is refused at
 * once, its status set to REPRISE_DISK_ERROR during the submitting write,
 * with no interrupt (the host keeps a request's data until it completes). */
#define REPRISE_DISK_MAX_QUEUED  64

#define REPRISE_BENCH_MARK      0  /* kernel does REPRISE_HC_MARK with id n (guest kit addition) */
#define REPRISE_BENCH_EXIT_CPL0 1  /* kernel does n `outb` to REPRISE_PORT_NULL */
#define REPRISE_BENCH_NOP       2  /* kernel returns at once: syscall round trip */
#define REPRISE_BENCH_IRQ       3  /* kernel raises REPRISE_IRQ_SOFT n times with IF=1: injection round trip */

/* ---- the kernel's thread table, global symbol reprise_threads: a debugger
 * reads the threads there (their ids, states and saved user registers).
 * Slot 0 is the idle thread; a thread not running has its user registers in
 * the struct reprise_frame its frame pointer points at (the top of its
 * kernel stack); the running one's are the trap's. */
#define REPRISE_MAX_THREADS      64
#define REPRISE_THREAD_SIZE      96  /* sizeof(struct thread) */
#define REPRISE_THREAD_FRAME     32  /* struct reprise_frame *frame */
#define REPRISE_THREAD_TID       64  /* uint32_t tid */
#define REPRISE_THREAD_STATE     68  /* uint32_t state */
#define REPRISE_THREAD_RUNNABLE  1
#define REPRISE_THREAD_BLOCKED   2

/* HC_MARK ids: the bench workload brackets its loops with 1 and 2; the
 * kit's dispatcher brackets every workload with these. */
#define REPRISE_MARK_WORKLOAD_START 100
#define REPRISE_MARK_WORKLOAD_END   101
#define REPRISE_MARK_MAX_IDS        64

#define REPRISE_EAGAIN    11
#define REPRISE_ETIMEDOUT 110
#define REPRISE_EINVAL    22
#define REPRISE_EIO       5
#define REPRISE_ENOMEM    12

#define REPRISE_BOOT_MAGIC 0x3145534952504552ULL /* "REPRISE1" little-endian */
#define REPRISE_CMDLINE_MAX 256

#ifndef __ASSEMBLER__
#include <stdint.h>

struct reprise_bootinfo {
	uint64_t magic;        /* REPRISE_BOOT_MAGIC */
	uint64_t mem_bytes;    /* guest RAM size */
	uint32_t timer_hz;     /* tick rate the kernel should program */
	uint32_t ncpus;        /* 1 today */
	char cmdline[REPRISE_CMDLINE_MAX]; /* NUL-terminated: "workload arg=val ..." */
};

/* Written by the VMM only while the vCPU is stopped, at positions it logs;
 * so reads are free and deterministic. */
struct reprise_clock {
	uint64_t ns;       /* guest monotonic time, ns since boot */
	uint64_t ticks;    /* timer interrupts injected so far */
};

/* Software branch counter (docs/architecture.md, "Position sources"): the
 * trace-pc hook increments count and does `outb $REPRISE_PORT_SWBC` when
 * count == target. With the register counter, count is the VMM's at its last
 * stop, and the count now is armed - (r15 - REPRISE_COUNTER_GUARD_TOP). */
struct reprise_swbc {
	uint64_t count;
	uint64_t target;   /* ~0 = never */
	uint64_t armed;    /* register counter: the count r15 was placed to exit at */
};

/* ---- NIC: two rings of REPRISE_NIC_RING descriptors in guest RAM (DMA),
 * indexed by free-running 32-bit counters (descriptor i is ring[i % RING]).
 * RX: the guest fills descriptors with empty buffers (buf, len = capacity,
 * flags 0) and writes the RX tail; the device fills them in order with
 * received Ethernet frames (len = frame length, flags = DONE) only at the
 * moment it injects REPRISE_IRQ_NIC — the position a recording logs. TX:
 * the guest fills descriptors (buf, len) and writes the TX tail; the device
 * takes the frames at that exit and sets DONE. Frames are Ethernet II with
 * IPv4/UDP for the user-mode backend: the guest is REPRISE_NET_GUEST_*, the
 * host side REPRISE_NET_HOST_* (a UDP datagram the guest sends to the host
 * IP goes to 127.0.0.1, same port). No ARP: both MACs are fixed. */
#define REPRISE_NIC_RING      64
#define REPRISE_NIC_FRAME_MAX 1514
#define REPRISE_NIC_DONE      1
#define REPRISE_NET_GUEST_MAC 0x525400123456ULL /* 52:54:00:12:34:56 */
#define REPRISE_NET_HOST_MAC  0x525400000002ULL /* 52:54:00:00:00:02 */
#define REPRISE_NET_GUEST_IP  0x0A00020FU        /* 10.0.2.15 */
#define REPRISE_NET_HOST_IP   0x0A000202U        /* 10.0.2.2 */

/* A disk request (32 bytes). The device reads op..buf at submission and
 * writes status (and tag is the guest's own) at completion. */
struct reprise_disk_req {
	uint32_t op;       /* REPRISE_DISK_READ or _WRITE */
	uint32_t count;    /* sectors, 1..REPRISE_DISK_MAX_SECTORS */
	uint64_t sector;   /* first sector */
	uint64_t buf;      /* GPA of count * 512 bytes */
	uint32_t status;   /* REPRISE_DISK_PENDING until completion */
	uint32_t tag;      /* the guest's cookie, untouched */
};

/* A NIC descriptor (16 bytes). */
struct reprise_nic_desc {
	uint64_t buf;      /* GPA of the frame buffer */
	uint16_t len;      /* RX: capacity, then frame length; TX: frame length */
	uint16_t flags;    /* REPRISE_NIC_DONE when the device is done with it */
	uint32_t pad;
};

/* Register frame the kernel's vector stubs build (lowest address first). */
struct reprise_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;   /* pushed by the CPU */
};
#endif
#endif
