// Package probes is the pure part of replay probes (docs/architecture.md,
// "Probes and sampling"): the spec language, resolution against the guest
// image, and the plan the VMM executes. During a replay only, the VMM writes
// int3 over each Site of the plan; a hit reports the site's probes with their
// arguments, read from the guest's registers and memory at that point. The
// recorded run never paid for any of it.
//
// # Specs
//
// One probe per command-line spec:
//
//	spec    := [NAME '='] SYMBOL ['+' OFF] ['%return'] {blank (ARG | FILTER)}
//	ARG     := ARGNAME '=' EXPR
//	FILTER  := '@tid=' N {',' N}           thread ids (32-bit); repeatable
//	EXPR    := sum
//	sum     := sized {('+' | '-') OFF}     address arithmetic, modulo 2^64
//	sized   := unary [':' ('1'|'2'|'4'|'8')]  width in bytes, only after '*'
//	unary   := '*' unary | primary         '*' reads 8 bytes (little-endian)
//	primary := REG | 'arg0'..'arg5' | 'retval' | '(' sum ')'
//	REG     := rax rbx rcx rdx rsi rdi rbp rsp r8 ... r15 rip
//	OFF, N  := decimal | 0x hex
//
// NAME defaults to SYMBOL, SYMBOL+0xOFF or SYMBOL_return. argN are the
// SysV integer argument registers (rdi, rsi, rdx, rcx, r8, r9), meaningful
// at a function's entry; retval is rax and only allowed at %return. Blanks
// inside parentheses do not split the spec. A width binds to the whole
// dereference before it: **rdi:4 reads 8 bytes at rdi, then 4 at that
// address. Examples:
//
//	mutex_lock lock=rdi
//	acq=mutex_lock%return lock=rdi ok=retval @tid=2,3
//	mutex_lock+0x14 count=*(arg0+8):4 owner=**rdi
//
// Errors are *SpecError: the text, the column and the reason (unknown
// register, bad width, empty name, duplicate probe or argument name,
// retval not at %return, unbalanced parentheses, trailing junk, offset
// overflow ...).
//
// # Files
//
// ParseFile reads a list of probes as YAML (.yaml, .yml) or JSON (.json;
// other names are sniffed). Each entry is {name, at, return, args,
// threads}; only at is required, args keep their order:
//
//	# probes.yaml
//	- name: acquire
//	  at: mutex_lock            # SYMBOL[+OFF], may end in %return
//	  args:
//	    lock: rdi
//	    count: "*(arg0+8):4"    # quote expressions that start with '*'
//	  threads: [2, 3]
//	- at: mutex_lock
//	  return: true              # named mutex_lock_return
//	  args: {ok: retval}
//
// The same in JSON:
//
//	[{"name": "acquire", "at": "mutex_lock",
//	  "args": {"lock": "rdi", "count": "*(arg0+8):4"}, "threads": [2, 3]},
//	 {"at": "mutex_lock", "return": true, "args": {"ok": "retval"}}]
//
// # Resolution
//
// Resolve checks each spec against the image: SYMBOL must be one function
// (unknown names get suggestions), SYMBOL+OFF must lie in its code and in
// an executable segment, and must start an instruction, which is checked
// by decoding the function from its start. A %return probe has no offset:
// its site is the function's entry. Probes at one address share one Site,
// and ChoosePatches says how each site is patched.
//
// # What the VMM does with a Site
//
// Install: check that guest memory holds Orig at Addr (and, for an exit
// patch, each of Displaced), then patch as Patch says (ChoosePatches):
// 0xCC over Orig[0], or `out %al, $imm8` to the probe port over the first
// ExitPatchLen bytes, whose out-of-line copy holds the site's instruction
// and Displaced. A #BP whose address (trap RIP-1) matches no int3 site is
// the guest's own and is reinjected; an out to the probe port at no exit
// site does nothing. At a hit, before anything else, report
// the site's probes: for each id, skip it unless WantsThread(current tid),
// present the registers with RIP = Addr and evaluate its Args (a
// *ReadError makes that argument missing, nothing more). For a Return
// probe, read the return address at [rsp], get its site from
// Plan.ReturnSite and keep it pending for (thread, rsp+8); that return
// hit is reported when RIP is the return address and rsp equals the saved
// value (recursion and other threads pass through), pending entries whose
// rsp the thread has already popped past are dropped (longjmp, exit).
//
// Then the instruction must take effect exactly as in place. Branch
// decides how:
//
//   - BranchNone: copy Orig out of line, patch the RIPRelDispOff
//     displacement (if not -1) so it still reaches Next()+disp from the
//     copy (the copy must be within ±2 GiB of that target), then jmp
//     Next(). Exceptions and interrupts taken on the copy would show its
//     address to the guest: the VMM injects nothing there, and the
//     instructions that enter the guest kernel (int n, int3, ud2, syscall,
//     hlt ...) are refused at resolution.
//   - BranchJmp relative: jmp Target. Indirect (jmp *reg, jmp *mem): the
//     copy works as is (RIP-relative displacement patched); no jmp back.
//   - BranchCall relative: push Next() (push imm32 sign-extends: Next()
//     must be below 2^31), jmp Target. Indirect (Inst.Args[0] is a
//     register or memory operand): emulate it, reading the target before
//     pushing Next(), since the operand may be rsp-based. Copying it as is
//     would push the copy's address, which the guest could see on its
//     stack.
//   - BranchJcc: jcc (Cond) to a jmp Target, else jmp Next(). Decide by
//     Branch and Cond, not by opcode bytes: a jcc may carry prefixes
//     (branch hints, bnd).
//   - BranchRet: the copy works as is (ret and ret imm16 pop an absolute
//     address).
//   - BranchOther (loop, loope, loopne, jrcxz, jecxz; rel8 only): the
//     original opcode with rel8 = 5 over "jmp Next()" (5 bytes) followed
//     by "jmp Target".
//
// Instructions a probe cannot take are refused at resolution, with the
// reason: int3, int n, int1, into, ud0/ud1/ud2 (the guest kit's system
// call), syscall, sysenter, far transfers and iret, hlt, xbegin, relative
// operands of non-branches, a 0x67 address-size prefix on a RIP-relative
// operand or an rcx-counting branch, and a 0x66 operand-size prefix on a
// branch.
package probes
