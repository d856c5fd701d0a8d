package kvmtest

// Bare CPL0 guests (for AsmImage) that use the disk the way a driver other
// than the kit's may: several requests in flight, or a flood of them with
// interrupts off. They exit with a count the test checks.

// DiskInFlightAsm submits eight one-sector reads at once (request i reads
// sector i to 0x800000 + 512 i), then takes disk interrupts until it has
// seen eight, and exits with the number of requests whose status is OK.
// A VMM that loses completions leaves it waiting for ever.
var DiskInFlightAsm = `
.globl _start, reprise_vectors
_start:
	lea reqs(%rip), %rdi
	xor %ecx, %ecx
1:	movl $1, 0(%rdi)          /* REPRISE_DISK_READ */
	movl $1, 4(%rdi)          /* one sector */
	mov %rcx, 8(%rdi)         /* sector i */
	mov %rcx, %rax
	shl $9, %rax
	add $0x800000, %rax
	mov %rax, 16(%rdi)        /* buf */
	movl $0, 24(%rdi)         /* status: pending */
	mov %edi, %eax
	mov $0x550, %dx
	out %eax, %dx             /* submit */
	add $32, %rdi
	inc %ecx
	cmp $8, %ecx
	jb 1b
2:	sti
	hlt
	cli
	cmpq $8, irqs(%rip)
	jb 2b
	lea reqs(%rip), %rdi
	xor %eax, %eax
	xor %ecx, %ecx
3:	cmpl $1, 24(%rdi)         /* REPRISE_DISK_OK */
	jne 4f
	inc %eax
4:	add $32, %rdi
	inc %ecx
	cmp $8, %ecx
	jb 3b
	mov $0x501, %dx
	out %eax, %dx
` + Vectors(0x22, `	incq irqs(%rip)           /* vector 0x22: the disk */
	iretq`) + `
.data
.balign 32
reqs: .fill 8*32, 1, 0
irqs: .quad 0
`

// DiskFloodAsm submits 1000 reads of 128 KiB with interrupts off, so none
// can complete, and exits with how many the disk refused at once (status
// REPRISE_DISK_ERROR right after the submitting write): 1000 minus the
// requests a disk keeps in flight.
const DiskFloodAsm = `
.globl _start
_start:
	lea req(%rip), %rdi
	movl $1, 0(%rdi)          /* REPRISE_DISK_READ */
	movl $256, 4(%rdi)        /* 128 KiB */
	movq $0, 8(%rdi)
	movq $0x800000, 16(%rdi)
	xor %ebx, %ebx
	mov $1000, %ecx
1:	movl $0, 24(%rdi)
	mov %edi, %eax
	mov $0x550, %dx
	out %eax, %dx
	cmpl $2, 24(%rdi)         /* REPRISE_DISK_ERROR */
	jne 2f
	inc %ebx
2:	dec %ecx
	jnz 1b
	mov %ebx, %eax
	mov $0x501, %dx
	out %eax, %dx
.data
.balign 32
req: .fill 32, 1, 0
`
