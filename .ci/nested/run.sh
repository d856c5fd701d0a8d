#!/bin/bash
# run.sh: run a shell command as root inside a QEMU TCG (software-emulated)
# x86-64 VM whose kernel has a working /dev/kvm (AMD SVM emulated by TCG),
# chrooted into the host's / (shared read-write over 9p), so every host path
# (/work, /usr/local/go, /tmp, ...) is the same inside.
#
# Usage:
#   run.sh 'SHELL COMMAND'   run it (bash -c) in the VM; prints its stdout and
#                            stderr, exits with its exit status. Uses the
#                            persistent VM if one is running (run.sh --start),
#                            otherwise boots a fresh VM for this command
#                            (~9 s) and powers it off afterwards.
#   run.sh --start           boot the persistent VM (reused by later runs)
#   run.sh --stop            power it off
#   run.sh --status          say whether it is running
#
# The command runs in the caller's working directory (if it exists; else /),
# with HOME=/root, GOFLAGS=-buildvcs=false,
# PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# and stdin from /dev/null. Exit status 255 and a console excerpt on stderr
# mean the VM itself failed (did not boot, died, or the job vanished).
#
# Environment knobs:
#   NESTED_TIMEOUT=SECONDS  kill the command (its process group) after this;
#                           exit 124 then. 0 (default) = no limit.
#   NESTED_ONESHOT=1        boot a fresh VM even if the persistent one runs.
#   NESTED_TMPFS=1          with NESTED_ONESHOT: the VM's /tmp is a tmpfs of
#                           its own, not the host's (job directories stay
#                           shared); give the command paths outside /tmp.
#   NESTED_CPU=max          QEMU -cpu model (needs svm,npt; default max).
#   NESTED_MEM=6G NESTED_SMP=1   (two emulated CPUs have locked the VM up: a kick
#                           that never left the nested guest)
#   NESTED_VERBOSE=1        print the VM console log to stderr afterwards.
#   NESTED_STATE=DIR        persistent VM's state dir (default /var/tmp/reprise-nested/state).
#   NESTED_BUILD=DIR        boot files (default /var/tmp/reprise-nested/build).
#   NESTED_9P_CACHE=loose   how the guest caches the host's files: loose (default;
#                           several times faster for compilers; each command
#                           starts with the guest's caches dropped and ends
#                           with a sync, so runs see each other's writes) or
#                           mmap (no caching: also sees host writes made while
#                           the command runs). Takes effect at boot.
#
# Each command gets a job directory /tmp/nested-jobs/job.XXXXXX (its script,
# stdout, stderr, status), shared uncached; removed when the status arrived,
# kept for a post-mortem when the VM failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${NESTED_BUILD:-/var/tmp/reprise-nested/build}
state=${NESTED_STATE:-/var/tmp/reprise-nested/state}
export NESTED_BUILD=$build
cpu=${NESTED_CPU:-max}
mem=${NESTED_MEM:-6G}
smp=${NESTED_SMP:-1}
cache=${NESTED_9P_CACHE:-loose}
jobroot=/tmp/nested-jobs
mkdir -p "$jobroot"

ensure_built() {
	local f
	for f in vmlinuz initramfs.gz qemu/bin/qemu-system-x86_64; do
		if [ ! -s "$build/$f" ] || [ "$here/init.sh" -nt "$build/initramfs.gz" ] || [ "$here/build.sh" -nt "$build/$f" ] ||
			[ /usr/bin/qemu-system-x86_64 -nt "$build/qemu/bin/qemu-system-x86_64" ]; then
			"$here/build.sh" >&2 || { echo "run.sh: build.sh failed" >&2; exit 255; }
			return
		fi
	done
}

# qemu_args APPEND: the VM's QEMU command line (without chardevs of the agent).
qemu_args() {
	printf '%s\0' "$build/qemu/bin/qemu-system-x86_64" -nodefaults -no-user-config \
		-accel tcg,thread=multi -cpu "$cpu" -smp "$smp" -m "$mem" \
		-display none -no-reboot -monitor none \
		-kernel "$build/vmlinuz" -initrd "$build/initramfs.gz" \
		-append "console=ttyS0 loglevel=4 panic=-1 nested.cache=$cache $1" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap \
		-virtfs local,path="$jobroot",mount_tag=hostjobs,security_model=passthrough \
		-device virtio-rng-pci
}

vm_pid() {
	local pid
	pid=$(cat "$state/qemu.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ -e "$state/ready" ] &&
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "nested.agent=1" && echo "$pid"
}

start_vm() {
	if vm_pid >/dev/null; then echo "run.sh: persistent VM already running (pid $(vm_pid))" >&2; return 0; fi
	ensure_built
	mkdir -p "$state"
	exec 9>"$state/lock"
	flock 9
	if vm_pid >/dev/null; then return 0; fi
	rm -f "$state/ready" "$state/qemu.pid" "$state/ctl.in" "$state/ctl.out"
	mkfifo "$state/ctl.in" "$state/ctl.out"
	local t0=$SECONDS args
	mapfile -d '' args < <(qemu_args "nested.agent=1")
	"${args[@]}" -serial "file:$state/console.log" \
		-device virtio-serial-pci -chardev "pipe,id=ctl,path=$state/ctl" \
		-device virtserialport,chardev=ctl,name=nested.ctl \
		-daemonize -pidfile "$state/qemu.pid" </dev/null >"$state/qemu.out" 2>&1 9>&- ||
		{ echo "run.sh: QEMU failed to start:" >&2; cat "$state/qemu.out" >&2; return 255; }
	local line=
	if ! line=$(timeout 300 head -n1 "$state/ctl.out") || [ "$line" != ready ]; then
		echo "run.sh: the persistent VM did not come up; console:" >&2
		tail -20 "$state/console.log" >&2
		stop_vm
		return 255
	fi
	touch "$state/ready"
	echo "run.sh: persistent VM up (pid $(cat "$state/qemu.pid")) in $((SECONDS - t0)) s; stop it with $0 --stop" >&2
}

stop_vm() {
	local pid
	pid=$(cat "$state/qemu.pid" 2>/dev/null)
	rm -f "$state/ready"
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
		echo "run.sh: persistent VM (pid $pid) stopped" >&2
	fi
	rm -f "$state/qemu.pid" "$state/ctl.in" "$state/ctl.out"
}

case "${1:-}" in
--start) start_vm; exit ;;
--stop) stop_vm; exit 0 ;;
--status)
	if pid=$(vm_pid); then echo "persistent VM running, pid $pid"; else echo "no persistent VM"; exit 1; fi
	exit 0 ;;
"" | -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
[ $# -eq 1 ] || { echo "run.sh: give the command as one argument: run.sh 'SHELL COMMAND'" >&2; exit 2; }
cmd=$1

ensure_built
mkdir -p "$jobroot"
job=$(mktemp -d "$jobroot/job.XXXXXX")
: >"$job/stdout"
: >"$job/stderr"
cwd=$PWD
[ -d "$cwd" ] || cwd=/
timeout_s=${NESTED_TIMEOUT:-0}
cat >"$job/wrap.sh" <<EOF
# Written by run.sh; run by the VM's /init chrooted in the host's /.
job=$(printf %q "$job")
# The guest caches the host's files (9p cache=loose) unless NESTED_9P_CACHE=mmap:
# forget what an earlier command cached, so this one sees the host as it is now.
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
cd $(printf %q "$cwd") 2>/dev/null || cd /
export HOME=/root GOFLAGS=-buildvcs=false LANG=C.UTF-8 TERM=dumb USER=root LOGNAME=root
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
setsid bash -c $(printf %q "$cmd") >"\$job/stdout" 2>"\$job/stderr" </dev/null &
pid=\$!
(
	start=\$SECONDS
	while kill -0 \$pid 2>/dev/null; do
		if [ -e "\$job/cancel" ] || { [ $timeout_s -gt 0 ] && [ \$((SECONDS - start)) -ge $timeout_s ]; }; then
			[ -e "\$job/cancel" ] || : >"\$job/timedout"
			kill -TERM -- -\$pid 2>/dev/null
			sleep 5
			kill -KILL -- -\$pid 2>/dev/null
			break
		fi
		sleep 1
	done
) &
watcher=\$!
wait \$pid
rc=\$?
kill \$watcher 2>/dev/null
# The command's writes reach the host's files before run.sh returns, and the
# guest lets go of the files it cached (QEMU keeps a file open while the
# guest caches it: the host could not exec one the command wrote, ETXTBSY).
sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
[ -e "\$job/timedout" ] && rc=124
echo \$rc >"\$job/status.tmp" && mv "\$job/status.tmp" "\$job/status"
EOF

qpid=
persistent=
if [ "${NESTED_ONESHOT:-0}" != 1 ] && qpid=$(vm_pid); then
	persistent=1
	console=$state/console.log
	if ! printf '%s\n' "$job" | timeout 10 tee "$state/ctl.in" >/dev/null; then
		echo "run.sh: cannot reach the persistent VM's agent" >&2
		exit 255
	fi
else
	console=$job/console.log
	mapfile -d '' args < <(qemu_args "nested.job=$job${NESTED_TMPFS:+ nested.tmp=tmpfs}")
	"${args[@]}" -serial "file:$console" </dev/null >"$job/qemu.out" 2>&1 &
	qpid=$!
fi

cancelled=
on_signal() {
	cancelled=1
	: >"$job/cancel"
}
trap on_signal INT TERM HUP

# Stream the job's output while it runs: the waiter exits when the status
# file appears or QEMU dies; tail exits after a last read once it has.
(
	trap '' INT TERM HUP
	while [ ! -e "$job/status" ] && kill -0 "$qpid" 2>/dev/null; do
		if [ -n "$persistent" ] && [ ! -e "$state/ready" ]; then break; fi
		sleep 0.2
	done
) &
waiter=$!
tail_opts=(-n +1 -f -s 0.2 --pid="$waiter")
tail ---disable-inotify --version >/dev/null 2>&1 && tail_opts+=(---disable-inotify)
tail "${tail_opts[@]}" "$job/stdout" &
t1=$!
tail "${tail_opts[@]}" "$job/stderr" >&2 &
t2=$!
# Backstops for a one-shot VM that does not power off by itself: 10 s after
# a cancel, or 120 s past NESTED_TIMEOUT (counting the boot). backstop N
# kills QEMU after N seconds unless killed first (its sleep goes too).
backstop() {
	(
		trap 'kill $s 2>/dev/null; exit 0' TERM
		sleep "$1" &
		s=$!
		wait $s && kill "$qpid" 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
	killer=$!
}
killer=
if [ -z "$persistent" ] && [ "$timeout_s" -gt 0 ]; then
	backstop $((timeout_s + 120))
fi
while ! wait "$waiter"; do
	if [ -n "$cancelled" ] && [ -z "$persistent" ]; then
		[ -n "$killer" ] && kill "$killer" 2>/dev/null
		backstop 10
	fi
done
[ -n "$killer" ] && kill "$killer" 2>/dev/null
wait "$t1" "$t2"

if [ -z "$persistent" ]; then
	# One-shot: /init powers off right after writing the status.
	for _ in $(seq 100); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.1; done
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
fi

if [ -s "$job/status" ]; then
	rc=$(cat "$job/status")
	[ "${NESTED_VERBOSE:-0}" = 1 ] && { echo "--- VM console ($console) ---" >&2; cat "$console" >&2; }
	rm -rf "$job"
	exit "$rc"
fi
echo "run.sh: the VM ended without the command's exit status (job dir kept: $job); console:" >&2
tail -30 "$console" >&2
[ -s "$job/qemu.out" ] && cat "$job/qemu.out" >&2
exit 255
