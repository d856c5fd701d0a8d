# Sites for ChoosePatches: which a 2-byte exit may patch, which keep int3.
#include "fn.h"

	.text
FN x_entry		# push (1 byte) + mov: an exit displacing the mov
	push %rbp
	mov %rsp, %rbp
	pop %rbp
	ret
END x_entry
FN x_long		# one 5-byte instruction
	mov $1, %eax
	ret
END x_long
FN x_ret		# a 1-byte ret: what follows need not run after it
	ret
END x_ret
FN x_loop		# the instruction after the push is a loop's head
	push %rbp
1:	dec %edi
	jnz 1b
	pop %rbp
	ret
END x_loop
FN x_table		# jumps through a register: targets unknown
	push %rbp
	mov %rsp, %rbp
	jmp *%rax
END x_table
FN x_table_long		# the same, but its 3-byte entry displaces nothing
	mov %rsp, %rbp
	jmp *%rax
END x_table_long
FN x_port		# +2: right after a port write
	out %al, $0x80
	mov $1, %eax
	ret
END x_port
FN x_inport		# a port read among the displaced instructions
	push %rbp
	in $0x80, %al
	pop %rbp
	ret
END x_inport
FN x_pair		# two 2-byte sites back to back
	xor %eax, %eax
	xor %ecx, %ecx
	ret
END x_pair
FN _start
	call x_entry
	hlt
END _start
