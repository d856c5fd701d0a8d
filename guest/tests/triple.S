/*
 * triple.elf: a minimal image that triple-faults, to test the VMM's fault
 * report: load a zero-limit IDT, then ud2 -> #UD cannot be delivered -> #GP
 * cannot -> #DF cannot -> triple fault (shutdown).
 */
	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	lidt idtr(%rip)
	ud2
1:	hlt
	jmp 1b

	.section .rodata
	.balign 8
idtr:
	.word 0         /* limit 0 */
	.quad 0         /* base */

	.section .note.GNU-stack, "", @progbits
