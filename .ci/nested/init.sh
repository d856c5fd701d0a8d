#!/bin/sh
# /init of the nested-KVM VM's initramfs (busybox). Loads virtio, 9p and
# kvm_amd, mounts the host's / (9p tag hostroot) at /mnt with the guest's
# proc/sys/dev over it, then either
#   nested.job=DIR    runs DIR/wrap.sh chrooted in /mnt, then powers off, or
#   nested.agent=1    serves jobs: reads job directories, one a line, from
#                     the virtio-serial port named nested.ctl and runs each
#                     DIR/wrap.sh chrooted, in the background, for ever.
# wrap.sh (written by run.sh) redirects the command's output into DIR and
# writes DIR/status; if wrap.sh could not even run, this writes the status.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
hostname nested

say() { echo "nested-init: $*" >/dev/console; }
die() { say "FATAL: $*"; sync; poweroff -f; sleep 5; echo o >/proc/sysrq-trigger; }

for ko in $(cat /modules.order); do
	insmod "$ko" 2>/dev/null || say "insmod $ko failed"
done
[ -c /dev/kvm ] && say "/dev/kvm present" || say "NO /dev/kvm (kvm_amd: $(dmesg | grep -i -E 'kvm|svm' | tail -3))"

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -1; }
cache=$(arg nested.cache)
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=${cache:-mmap},access=client hostroot /mnt ||
	die "cannot mount the 9p share hostroot"
# nested.tmp=tmpfs: a /tmp of the VM's own, as most hosts have, rather
# than the host's over 9p.
if [ "$(arg nested.tmp)" = tmpfs ]; then
	mount -t tmpfs -o mode=1777 tmpfs /mnt/tmp && mkdir -p /mnt/tmp/nested-jobs ||
		die "cannot mount a tmpfs at /tmp"
fi
# run.sh's job directories (command, output, status, cancel) are shared
# apart, never cached, so both sides see each other's writes at once.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap,access=client hostjobs /mnt/tmp/nested-jobs ||
	die "cannot mount the 9p share hostjobs"
mount -t proc proc /mnt/proc
mount -t sysfs sysfs /mnt/sys
mount -t devtmpfs devtmpfs /mnt/dev
mkdir -p /mnt/dev/pts /mnt/dev/shm
# The links udev makes on a host, which devtmpfs has not: tests compare a
# program's /dev/fd and /dev/stdin with the host's.
ln -sfn /proc/self/fd /mnt/dev/fd
for i in 0:stdin 1:stdout 2:stderr; do ln -sfn "/proc/self/fd/${i%%:*}" "/mnt/dev/${i#*:}"; done
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /mnt/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /mnt/dev/shm
[ -d /mnt/sys/kernel/debug ] && mount -t debugfs debugfs /mnt/sys/kernel/debug 2>/dev/null
[ -d /mnt/sys/kernel/tracing ] && mount -t tracefs tracefs /mnt/sys/kernel/tracing 2>/dev/null
dmesg >/mnt/tmp/nested-dmesg.txt 2>/dev/null

runjob() {
	j=$1
	case $j in /*) ;; *) return ;; esac
	[ -f "/mnt$j/wrap.sh" ] || { say "no job at $j"; return; }
	chroot /mnt /bin/bash "$j/wrap.sh" </dev/null
	rc=$?
	if [ ! -f "/mnt$j/status" ]; then
		echo "$rc" >"/mnt$j/status.tmp" && mv "/mnt$j/status.tmp" "/mnt$j/status"
	fi
}

job=$(arg nested.job)
if [ -n "$job" ]; then
	runjob "$job"
	sync
	poweroff -f
	sleep 5
	echo o >/proc/sysrq-trigger
fi

if [ "$(arg nested.agent)" = 1 ]; then
	port=
	for p in /sys/class/virtio-ports/*; do
		[ "$(cat "$p/name" 2>/dev/null)" = nested.ctl ] && port=/dev/${p##*/}
	done
	[ -n "$port" ] || die "no virtio-serial port named nested.ctl"
	say "agent ready on $port"
	echo ready >"$port"
	while :; do
		while read -r job; do
			[ -n "$job" ] && (runjob "$job" &)
		done <"$port"
		sleep 0.2
	done
fi
die "neither nested.job nor nested.agent on the kernel command line"
