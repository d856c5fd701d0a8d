# count.awk: the register branch counter's instrumentation pass
# (docs/architecture.md, "Position sources") over the compiler's assembly
# output (cc -S, AT&T syntax). It inserts
#     lea -1(%r15), %r15; movzbl (%r15), %r14d
# (neither touches the flags, so they fit anywhere) at every function entry,
# at every loop head (a label some later jump in the file goes back to),
# and before every indirect jump: every loop iteration and every call then
# counts at least once, so a count target is reached in bounded time, and
# the count is the same at the same point of every run. The code must be
# built with -ffixed-r14 -ffixed-r15. After a label, the pair goes before
# its first instruction, past the directives (.loc, .cfi_startproc) that
# -g puts there: the pair is then the function's first line and inside its
# call frame information, so a debugger sees one entry per function.
#
#     awk -f count.awk in.s in.s > out.s     (two passes over the same file)

function label(line) {
	if (match(line, /^[A-Za-z_.$][A-Za-z0-9_.$]*:/))
		return substr(line, 1, RLENGTH - 1)
	return ""
}

NR == FNR {
	if ($1 == ".type" && $3 == "@function") {
		name = $2
		sub(/,$/, "", name)
		fn[name] = 1
	}
	l = label($0)
	if (l != "")
		at[l] = FNR
	else if ($1 ~ /^j[a-z]+$/ && $2 ~ /^\.L/ && ($2 in at))
		head[$2] = 1   # defined above: a backward jump
	next
}

function count(n) {
	for (; n > 0; n--)
		print "\tlea\t-1(%r15), %r15\n\tmovzbl\t(%r15), %r14d"
}

{
	l = label($0)
	if (l == "" && $1 !~ /^\./ && NF > 0) {   # an instruction
		count(pending)
		pending = 0
		if ($1 == "jmp" && $2 ~ /^\*/)
			count(1)
	}
	print
	if (l != "" && ((l in fn) || (l in head)))
		pending++
}
