#!/usr/bin/env bash
# Determinism under host load: records fork+exec-heavy Linux programs and
# replays each many times, runs a fork+exec loop live many times, and
# counts divergences, faults and wrong outputs, all while stress-ng keeps
# the host busy. Optionally runs .ci/run from fresh clones under the same
# load. Prints a summary; exits 1 if anything diverged, faulted or printed
# the wrong thing.
#
#   bench/stress.sh [--replays N] [--live N] [--ci N] [--load "stress-ng args"] [--no-load]
#
# Defaults: 50 replays of each of 4 recordings (200), 100 live runs of the
# 1000-iteration loop, no CI runs, load "--cpu 2 --vm 1".
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

replays=50 live=100 ci=0 load="--cpu 2 --vm 1"
while (($#)); do
	case $1 in
	--replays) replays=$2; shift 2 ;;
	--live) live=$2; shift 2 ;;
	--ci) ci=$2; shift 2 ;;
	--load) load=$2; shift 2 ;;
	--no-load) load=""; shift ;;
	*) echo "usage: $0 [--replays N] [--live N] [--ci N] [--load ARGS] [--no-load]" >&2; exit 2 ;;
	esac
done
for tool in busybox gcc tar gzip ${load:+stress-ng}; do
	command -v "$tool" >/dev/null || { echo "stress: $tool is needed" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'kill $stress 2>/dev/null; rm -rf "$work"' EXIT
stress=
reprise=$work/reprise
go build -o "$reprise" ./cmd/reprise || exit 2
start=$(date +%s)
if [[ -n $load ]]; then
	# shellcheck disable=SC2086
	stress-ng $load --timeout 0 >/dev/null 2>&1 &
	stress=$!
fi
fails=0
note() { echo "stress: $*"; }
failed() { note "FAILED: $*"; fails=$((fails + 1)); }

# The recordings: a busybox fork+exec loop, tar listing a gzip archive
# (tar forks and execs gzip), the pipeline program (threads, a forked
# child, pipes, signals), and xstate (vector registers across switches).
bb=$(command -v busybox)
mkdir -p "$work/t" "$work/src"
echo seed >"$work/t/seed"
for i in $(seq 1 100); do head -c $((i * 300)) /dev/urandom | base64 >"$work/src/f$i"; done
tar -czf "$work/x.tgz" -C "$work" src
gcc -O1 -pthread -o "$work/pipeline" internal/cprog/testdata/pipeline.c || exit 2
gcc -O1 -static -pthread -o "$work/xstate" internal/cprog/testdata/xstate.c || exit 2
loop() { echo "i=0; while [ \$i -lt $1 ]; do echo x\$i > $work/t/f; cat $work/t/f >/dev/null; i=\$((i+1)); done; echo done \$i"; }
gzip=$(command -v gzip) tar=$(command -v tar)
libs=()
for lib in $(ldd "$tar" "$gzip" | awk '$3 ~ /^\// {print $3}' | sort -u); do libs+=(--file "$lib"); done
record() { # NAME TAPE: record workload NAME
	case $1 in
	busybox) "$reprise" record -o "$2" --file "$work/t" -- "$bb" sh -c "$(loop 200)" ;;
	tar) "$reprise" record -o "$2" --file "$work/x.tgz" --file "$gzip" "${libs[@]}" -- "$tar" -tvzf "$work/x.tgz" ;;
	pipeline) "$reprise" record -o "$2" -- "$work/pipeline" 40 ;;
	xstate) "$reprise" record -o "$2" -- "$work/xstate" ;;
	esac
}
# What each recording must print: a recording is of a correct run.
declare -A expect=(
	[busybox]="done 200"
	[tar]="$(tar -tvzf "$work/x.tgz" | tail -1)"
	[pipeline]="child 7 sigchld 1"
	[xstate]="registers kept: 9 of 9 threads"
)
total=0 diverged=0
for name in busybox tar pipeline xstate; do
	tp=$work/$name.tape
	if ! record "$name" "$tp" >"$work/$name.rec" 2>"$work/$name.rec.err"; then
		failed "recording $name: $(tail -3 "$work/$name.rec.err")"
		continue
	fi
	if ! grep -qF -e "${expect[$name]}" "$work/$name.rec"; then
		failed "recording $name printed $(head -c 200 "$work/$name.rec"), not ${expect[$name]}"
		continue
	fi
	for ((i = 0; i < replays; i++)); do
		total=$((total + 1))
		if ! "$reprise" replay "$tp" >"$work/out" 2>"$work/err"; then
			diverged=$((diverged + 1))
			failed "replay $i of $name: $(tail -1 "$work/err")"
		elif ! cmp -s "$work/out" "$work/$name.rec"; then
			diverged=$((diverged + 1))
			failed "replay $i of $name printed other output"
		fi
	done
done
note "replays: $total, diverged: $diverged"

runs=0 faults=0 stale=0
want="done 1000"
for ((i = 0; i < live; i++)); do
	runs=$((runs + 1))
	out=$("$reprise" run --stats --file "$work/t" -- "$bb" sh -c "$(loop 1000)" 2>"$work/err")
	if [[ $? -ne 0 || $out != "$want" ]]; then
		faults=$((faults + 1))
		keep=${TMPDIR:-/tmp}/stress-live-$i.err
		cp "$work/err" "$keep"
		failed "live run $i (stderr in $keep): $(grep -v -e '^exits:' -e '^interrupts' -e '^system calls:' -e 'elapsed$' "$work/err" | head -c 400) ${out:0:100}"
	fi
	# Faults of the host's stale translations, retried (linux/stale.go).
	n=$(sed -n 's/^faults of stale host translations retried: //p' "$work/err")
	stale=$((stale + ${n:-0}))
done
note "live runs of the 1000-iteration fork+exec loop: $runs, failed: $faults, stale host translations retried: $stale"

for ((i = 0; i < ci; i++)); do
	clone=$work/clone$i
	git clone -q "$repo" "$clone"
	if (cd "$clone" && bash .ci/run) >"$work/ci$i.log" 2>&1; then
		note "fresh-clone .ci/run $i: passed"
	else
		keep=${TMPDIR:-/tmp}/stress-ci-$i.log
		cp "$work/ci$i.log" "$keep"
		failed ".ci/run $i (log in $keep): $(grep -E '^(--- FAIL|FAIL|panic)' "$work/ci$i.log" | head -5)"
	fi
	rm -rf "$clone"
done

note "load: ${load:-none}; $(($(date +%s) - start)) s; failures: $fails"
((fails == 0))
