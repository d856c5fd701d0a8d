#!/usr/bin/env bash
# Two revisions of reprise side by side: builds each, then runs the same
# Linux workloads with both in alternation (A, B, A, B ...), so host noise
# falls on both alike, and prints each workload's median wall time per
# revision and the ratio B/A. For a reshaping that must not change speed,
# or a change that claims to.
#
#   bench/compare.sh [--rounds N] [--only "NAME ..."] REV_A [REV_B]
#
# NAMEs: true true-1G fork-exec-300 sort-300k gzip-8M getpid+pread
# record-fork-exec replay-fork-exec (the default), and python3-start and
# split-db.
# REV_B defaults to the working tree. Needs busybox-static and musl-gcc.
set -u
rounds=7
only=
while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	-h|--help) sed -n '2,10p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
[[ $# -ge 1 ]] || { echo "usage: bench/compare.sh [--rounds N] REV_A [REV_B]" >&2; exit 2; }
rev_a=$1 rev_b=${2:-}

root=$(git rev-parse --show-toplevel) || exit 2
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/a" >/dev/null 2>&1; [[ -n $rev_b ]] && git -C "$root" worktree remove --force "$work/b" >/dev/null 2>&1; rm -rf "$work"' EXIT
build() { # REV DIR: reprise built from REV (or the working tree for "") into DIR/reprise
	local src=$root
	if [[ -n $1 ]]; then
		git -C "$root" worktree add -q --detach "$2" "$1" || exit 2
		src=$2
	fi
	mkdir -p "$2"
	(cd "$src" && go build -o "$2/reprise" ./cmd/reprise) || exit 2
}
build "$rev_a" "$work/a"
build "$rev_b" "$work/b"

bb=$(command -v busybox) || { echo "compare: busybox-static is needed" >&2; exit 2; }
mkdir -p "$work/t"
musl-gcc -static -O2 -o "$work/syscalls" "$root/linux/testdata/syscalls.c" || exit 2
head -c 4096 /dev/zero >"$work/f"
head -c $((8 << 20)) /dev/urandom >"$work/big"
loop='i=0; while [ $i -lt 300 ]; do echo x$i > '"$work"'/t/f; cat '"$work"'/t/f >/dev/null; i=$((i+1)); done'

# The workloads: w_NAME REV_DIR runs one with REV_DIR/reprise.
names=(true true-1G fork-exec-300 sort-300k gzip-8M getpid+pread record-fork-exec replay-fork-exec)
[[ -n $only ]] && read -ra names <<<"$only"
w_true() { "$1/reprise" run -- "$bb" true; }
w_true-1G() { "$1/reprise" run --mem 1G -- /bin/true; }
# python3-start (not run unless named): a dynamic program's start, its
# loader mapping some 50 libraries and modules.
w_python3-start() { "$1/reprise" run -- /usr/bin/python3 -c pass; }
w_fork-exec-300() { "$1/reprise" run --file "$work/t" -- "$bb" sh -c "$loop"; }
w_sort-300k() { "$1/reprise" run -- "$bb" sh -c "$bb seq 1 300000 | $bb sort -rn | $bb md5sum"; }
w_gzip-8M() { "$1/reprise" run --file "$work/big" -- "$bb" gzip -c "$work/big"; }
w_getpid+pread() { "$1/reprise" run --file "$work/f:/data/f" -- "$work/syscalls" /data/f; }
w_record-fork-exec() { rm -f "$1/loop.tape"* && "$1/reprise" record -o "$1/loop.tape" --file "$work/t" -- "$bb" sh -c "$loop"; }
w_replay-fork-exec() { "$1/reprise" replay -q "$1/loop.tape"; }
# split-db (not run unless named): a kit recording's replay with lock probes
# and a sample every 20 000 counts into a DB, its segments two at a time.
# The tape and its checkpoints (one a second) are made once, untimed, by A.
w_split-db() { rm -rf "$1/split.db" && "$1/reprise" replay -q --locks --sample 20000 --jobs 2 --checkpoints "$work/long.ckpt" --db "$1/split.db" "$work/long.tape"; }
if [[ " ${names[*]} " == *" split-db "* ]]; then
	"$work/a/reprise" record -o "$work/long.tape" syn_cont iters=500 work=200000 >/dev/null 2>&1 &&
		"$work/a/reprise" replay -q --checkpoint-every 1s --checkpoints "$work/long.ckpt" "$work/long.tape" >/dev/null 2>&1 ||
		{ echo "compare: recording split-db's tape failed" >&2; exit 1; }
fi
run() { # NAME REV_DIR: its wall time in seconds
	local s e
	s=$(date +%s.%N)
	"w_$1" "$2" >/dev/null 2>"$work/err" || { echo "compare: $1 failed with $2/reprise: $(tail -2 "$work/err")" >&2; exit 1; }
	e=$(date +%s.%N)
	echo "$e - $s" | bc
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

declare -A ta tb
for ((r = 1; r <= rounds; r++)); do
	for n in "${names[@]}"; do
		ta[$n]+="$(run "$n" "$work/a") "
		tb[$n]+="$(run "$n" "$work/b") "
	done
done
printf 'A = %s, B = %s, %d rounds in alternation\n' "$rev_a" "${rev_b:-working tree}" "$rounds"
printf '%-18s %10s %10s %8s\n' WORKLOAD "A (s)" "B (s)" B/A
for n in "${names[@]}"; do
	ma=$(tr ' ' '\n' <<<"${ta[$n]}" | grep . | median)
	mb=$(tr ' ' '\n' <<<"${tb[$n]}" | grep . | median)
	printf '%-18s %10.3f %10.3f %8.3f\n' "$n" "$ma" "$mb" "$(echo "$mb / $ma" | bc -l)"
done
