# One tiny function per instruction class, for the site decoder's tests.
#include "fn.h"

	.text
FN i_nop
	nop
END i_nop
FN i_push
	push %rbp
END i_push
FN i_movabs
	movabs $0x1122334455667788, %rax
	ret
END i_movabs
	# A function symbol in the middle of i_movabs's immediate.
	.globl i_alias
	.type i_alias, @function
	.set i_alias, i_movabs + 2
	.size i_alias, 9
FN i_ret
	ret
END i_ret
FN i_ret_imm
	ret $8
END i_ret_imm
FN i_call_rel
	call i_ret
END i_call_rel
FN i_call_reg
	call *%rax
END i_call_reg
FN i_call_rip
	call *fptr(%rip)
END i_call_rip
FN i_call_rsp
	call *8(%rsp)
END i_call_rsp
FN i_jmp_rel8
	jmp 1f
1:	ret
END i_jmp_rel8
FN i_jmp_rel32
	.byte 0xe9
	.long 0
END i_jmp_rel32
FN i_jmp_reg
	jmp *%rax
END i_jmp_reg
FN i_jcc8
	je 1f
1:	ret
END i_jcc8
FN i_jcc32
	.byte 0x0f, 0x85
	.long 0
END i_jcc32
FN i_jcc_hint
	.byte 0x3e, 0x74, 0x00
END i_jcc_hint
FN i_loop
	loop 1f
1:	ret
END i_loop
FN i_jrcxz
	jrcxz 1f
1:	ret
END i_jrcxz
FN i_loop67
	.byte 0x67, 0xe2, 0x00
END i_loop67
FN i_jmp16
	.byte 0x66, 0xe9, 0x00, 0x00, 0x00, 0x00	# Intel: rel32 (6 bytes); AMD: rel16 (4)
END i_jmp16
FN i_lea_rip
	lea counter(%rip), %rax
END i_lea_rip
FN i_cmp_rip_imm
	cmpl $5, counter(%rip)
END i_cmp_rip_imm
FN i_avx_rip
	vmovdqu counter(%rip), %ymm0
END i_avx_rip
FN i_lea_eip
	lea counter(%eip), %rax
END i_lea_eip
FN i_int3
	int3
END i_int3
FN i_int80
	int $0x80
END i_int80
FN i_syscall
	syscall
END i_syscall
FN i_ud2
	ud2
END i_ud2
FN i_hlt
	hlt
END i_hlt
FN i_iretq
	iretq
END i_iretq
FN i_xbegin
	xbegin 1f
1:	ret
END i_xbegin
FN i_bad
	.byte 0x66, 0xe9, 0x00, 0x00	# truncated: the function ends here
END i_bad
FN i_bad2
	.byte 0x06			# push %es: invalid in 64-bit mode
	ret
END i_bad2

	.globl untyped
untyped:
	ret

	.data
	.globl fptr
	.type fptr, @object
fptr:
	.quad i_ret
	.size fptr, 8
