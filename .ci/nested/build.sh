#!/bin/bash
# Builds the nested-KVM VM's boot files into $NESTED_BUILD
# (default /var/tmp/reprise-nested/build):
#   vmlinuz        Debian's kernel (linux-image-amd64)
#   initramfs.gz   busybox-static + the kernel modules for kvm_amd, 9p and
#                  virtio, and /init (init.sh beside this script)
# Installs the Debian packages it needs if they are missing. Idempotent:
# run.sh calls it when a boot file is missing or older than its inputs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${NESTED_BUILD:-/var/tmp/reprise-nested/build}

need=()
for pkg in qemu-system-x86 busybox-static kmod linux-image-amd64 cpio; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "build.sh: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || true
	apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The newest installed Debian kernel.
kver=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -1)
[ -n "$kver" ] && [ -f /boot/vmlinuz-$kver ] || { echo "build.sh: no Debian kernel found" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,proc,sys,dev,mnt,tmp,etc,lib/modules/$kver}
cp /bin/busybox "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
cp "$here/init.sh" "$stage/init"
chmod 755 "$stage/init"

# Modules in load order (modprobe --show-depends lists dependencies first).
: >"$stage/modules.order"
for m in virtio_pci virtio_console virtio_rng 9pnet_virtio 9p kvm_amd; do
	modprobe -S "$kver" --show-depends "$m" | awk '$1=="insmod"{print $2}'
done | awk '!seen[$0]++' | while read -r ko; do
	rel=${ko#/lib/modules/$kver/}
	mkdir -p "$stage/lib/modules/$kver/$(dirname "$rel")"
	case $ko in
	*.ko.xz) xz -dc "$ko" >"$stage/lib/modules/$kver/${rel%.xz}"; rel=${rel%.xz} ;;
	*.ko.zst) zstd -qdc "$ko" >"$stage/lib/modules/$kver/${rel%.zst}"; rel=${rel%.zst} ;;
	*) cp "$ko" "$stage/lib/modules/$kver/$rel" ;;
	esac
	echo "/lib/modules/$kver/$rel" >>"$stage/modules.order"
done

mkdir -p "$out"

# QEMU's TCG checks a CPL3 IN/OUT against the TSS I/O bitmap only if TR's
# cached type is 9 (available TSS); real CPUs accept the busy type 11 too,
# which is what TR holds after LTR and what a VMM (KVM_SET_SREGS) gives its
# guest, so under nested KVM every CPL3 port access the bitmap allows #GPs
# instead. Patch a private copy of QEMU: in helper_check_io,
#   shr $8,%eax; and $0xf,%eax; cmp $9,%eax   ->   and $0xd,%eax
# (type & ~2 == 9: accepts 9 and 11). The pattern must occur exactly once.
cp /usr/bin/qemu-system-x86_64 "$out/qemu-system-x86_64.tmp"
if perl -0777 -i -pe '
	$n = s/\xc1\xe8\x08\x83\xe0\x0f(\x83\xf8\x09(?:\x0f\x85....|\x75.)\x83\xbf..\x00\x00\x66)/\xc1\xe8\x08\x83\xe0\x0d$1/gs;
	END { exit($n == 1 ? 0 : 1) }' "$out/qemu-system-x86_64.tmp"; then
	echo "build.sh: patched QEMU's TSS I/O-bitmap check (busy TSS accepted)" >&2
else
	rm -f "$out/qemu-system-x86_64.tmp"
	echo "build.sh: QEMU's helper_check_io pattern not found (another QEMU build?): unpatched," \
		"every CPL3 IN/OUT a busy TSS's I/O bitmap allows would #GP in nested guests" >&2
	exit 1
fi
# Debian's QEMU finds its modules (TCG itself) and firmware relative to its
# own directory: give the copy a /usr-like tree of links.
mkdir -p "$out/qemu/bin"
for d in share lib libexec; do ln -sfn /usr/$d "$out/qemu/$d"; done
mv "$out/qemu-system-x86_64.tmp" "$out/qemu/bin/qemu-system-x86_64"
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initramfs.gz.tmp"
mv "$out/initramfs.gz.tmp" "$out/initramfs.gz"
cp /boot/vmlinuz-$kver "$out/vmlinuz"
echo "$kver" >"$out/kver"
echo "build.sh: built $out (kernel $kver, $(wc -l <"$stage/modules.order") modules)" >&2
