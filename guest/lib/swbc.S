/*
 * The software branch counter hook (docs/architecture.md, "Position
 * sources"). All CPL3 code of kit-tracepc.elf is built with
 * -fsanitize-coverage=trace-pc, which calls this at every basic block
 * (kit.elf counts in r15 instead, see tools/count.awk); it counts in the
 * per-vCPU swbc page and makes a synchronous exit (outb to REPRISE_PORT_SWBC,
 * opened to CPL3 by the TSS I/O bitmap) when the count reaches the target the
 * VMM wrote. kit-plain.elf does not link it: an image without this symbol
 * keeps no branch counter.
 *
 * Three properties matter, and the order of the instructions gives them:
 *
 * - The count is stored BEFORE it is compared with the target. The recorder
 *   sets target = count + 1 at an arbitrary instant; wherever that lands in
 *   this sequence, the next store-then-compare meets it. (Comparing first
 *   misses a target set between the compare and the store, forever.) Once
 *   the compare has met the target, the exit follows without reading it
 *   again: the VMM must not move a target the count has reached before the
 *   guest has stopped there (the recorder's engine.arm), or the exit comes at a count
 *   it no longer expects — a kick can land between the compare and the
 *   out, for as long as the host keeps the vCPU thread preempted there.
 * - The state left behind depends on the count alone, never on the target,
 *   which the VMM writes at different moments in record and replay: flags
 *   and registers survive the return and end up in trap frames in RAM.
 *   Both paths end in the same `add $0` on the count.
 * - Taking the exit changes nothing either: a replay also exits where the
 *   recording did not (samples), so the exit path touches no register but
 *   rax's low byte, which already holds the count (`out %al, $imm8` needs
 *   no port in dx, hence a port below 0x100), and writes no memory.
 *
 * Fast path: 6 instructions and ret. No frame is built, so a sampler whose
 * RIP is in here finds the instrumented caller's return address at [rsp].
 */
#include <reprise/abi.h>

	.text
	.globl	__sanitizer_cov_trace_pc
	.type	__sanitizer_cov_trace_pc, @function
__sanitizer_cov_trace_pc:
	mov	REPRISE_SWBC, %rax		/* count */
	lea	1(%rax), %rax			/* count + 1 */
	mov	%rax, REPRISE_SWBC		/* store first, then compare */
	cmp	REPRISE_SWBC + 8, %rax		/* at the target? */
	je	2f
1:	add	$0, %rax			/* flags from the count alone */
	ret
2:	out	%al, $REPRISE_PORT_SWBC		/* exit: the VMM takes over here */
	jmp	1b
	.size	__sanitizer_cov_trace_pc, . - __sanitizer_cov_trace_pc
	.section .note.GNU-stack, "", @progbits
