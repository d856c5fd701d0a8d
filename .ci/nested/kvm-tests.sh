#!/usr/bin/env bash
# Runs the KVM tests that .ci/nested/tests names inside software-emulated
# VMs with a nested KVM (run.sh): what .ci/run does on a host that has no
# /dev/kvm. Each package's test binary is built here, then each line of the
# list runs in a fresh one-CPU VM (so a VM that hangs loses only its own
# line) with CI=true, so a test that cannot reach KVM there fails instead
# of skipping; as many VMs run at once as the host has CPUs. A line's output
# is printed when all have ended. Exits non-zero if any line fails or
# outlives its time budget. NESTED_TESTS=FILE runs another list, of the
# same form.
#
# One emulated CPU a VM: with two, a kick from one to the other sometimes
# never leaves the nested guest and the whole VM locks up (QEMU 7.2's TCG;
# seen with TestDebugReverse); with one it has not.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
# The VMs see the host's / (9p), so the binaries can live in any host folder
# but /tmp, which the tests get a tmpfs of their own over (NESTED_TMPFS).
work=$(mktemp -d /var/tmp/reprise-nested-tests.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$here/build.sh" 2>&1 | sed 's/^/nested: /'
# cmd/reprise's tests run this reprise rather than build one in the VM.
go build -o "$work/reprise" ./cmd/reprise

# run NAME PKG PATTERN BUDGET: one line's tests in one VM; its output goes to
# $work/NAME.log, its verdict to $work/NAME.verdict. The VM's /tmp is a tmpfs,
# as on most hosts: over the host's, shared by 9p (second-granular times, no
# renameat2 flags, no fallocate, 9p's statfs), the tests that compare a
# program with the same program run on the host compared with 9p.
run() {
	local name=$1 pkg=$2 pattern=$3 budget=$4 start=$SECONDS rc=0
	NESTED_ONESHOT=1 NESTED_SMP=1 NESTED_TMPFS=1 NESTED_TIMEOUT=$budget "$here/run.sh" \
		"ip link set lo up && cd $(printf %q "$root/$pkg") && CI=true REPRISE_TEST_BINARY=$(printf %q "$work/reprise") $(printf %q "$work/$name.test") -test.count=1 -test.v -test.run $(printf %q "$pattern")" \
		>"$work/$name.log" 2>&1 || rc=$?
	if ((rc == 0)); then
		echo "passed in $((SECONDS - start)) s" >"$work/$name.verdict"
	else
		echo "FAILED: exit $rc after $((SECONDS - start)) s (124: over its ${budget} s budget; 255: the VM failed)" >"$work/$name.verdict"
	fi
}

# A line is a package, a -run pattern and a budget in seconds; a package
# may have several lines (several VMs).
lines=()
while read -r pkg pattern budget; do
	[[ -z $pkg || $pkg == \#* ]] && continue
	name=$(printf '%02d-%s' ${#lines[@]} "${pkg//\//_}")
	[ -e "$work/${pkg//\//_}.test" ] || go test -c -o "$work/${pkg//\//_}.test" "./$pkg"
	ln -s "${pkg//\//_}.test" "$work/$name.test"
	lines+=("$name $pkg")
	while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
	run "$name" "$pkg" "$pattern" "$budget" &
done <"${NESTED_TESTS:-$here/tests}"
wait

failed=()
for line in "${lines[@]}"; do
	read -r name pkg <<<"$line"
	echo "=== nested KVM: ./$pkg ($name)"
	cat "$work/$name.log"
	echo "=== nested KVM: ./$pkg ($name) $(cat "$work/$name.verdict")"
	grep -q '^passed' "$work/$name.verdict" || failed+=("$name")
done
if ((${#failed[@]})); then
	echo "nested KVM tests failed in: ${failed[*]}" >&2
	exit 1
fi
echo "nested KVM tests passed: ${#lines[@]} VMs"
