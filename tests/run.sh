#!/bin/bash
# tests/run.sh — the whole test suite: installs dependencies, builds paddock twice (normal and
# ASan+UBSan), runs the unit tests of both builds, then the integration and escape suites
# against the real binary as root and as an ordinary user. Ends with "N passed, N failed".
#
#   tests/run.sh            everything
#   PD_QUICK=1 tests/run.sh skip the ASan build's integration pass
#   PD_FILTER=REGEX         only integration/escape tests whose name matches
#   PD_VM=0                 skip the vm backend's pass (see vm_setup, vm_suites)
#   PD_ONLY_VM=1            only the vm backend's pass (the builds of an earlier run are used)
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
RESULTS=$(mktemp /tmp/pd-results.XXXXXX)
chmod 0666 "$RESULTS"
export PD_RESULTS=$RESULTS
PD_TEST_USER=${PD_TEST_USER:-pdtest}
# undefined behaviour is a failure, not a warning
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

say() { printf '\n=== %s\n' "$*"; }
record() { echo "$1 $2" >>"$RESULTS"; }

setup() {
	say "dependencies"
	scripts/install-deps.sh >/tmp/pd-install.log 2>&1 || { cat /tmp/pd-install.log; return 1; }
	say "build (normal and asan+ubsan)"
	# boxes of ordinary users open /dev/net/tun inside their own network namespace: Debian
	# ships it 0666; some images narrow it to 0600
	[ "$(id -u)" = 0 ] && [ -c /dev/net/tun ] && chmod 0666 /dev/net/tun
	[ -d build ] || meson setup build >/dev/null || return 1
	[ -d build-asan ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false >/dev/null || return 1
	ninja -C build >/tmp/pd-build.log 2>&1 || { tail -40 /tmp/pd-build.log; return 1; }
	ninja -C build-asan >/tmp/pd-build-asan.log 2>&1 || { tail -40 /tmp/pd-build-asan.log; return 1; }
}

# Unit tests: every cmocka executable of a build's meson suite SUITE (default: unit), run with
# TAP output; one result per case. The "integration" suite holds the ns runtime's own tests
# (test-ns-start: boxes started through the runtime API, as root and as two ordinary users).
unit_tests() {
	local dir=$1 label=$2 suite=${3:-unit}
	say "meson suite $suite ($label)"
	python3 - "$dir" "$label" "$RESULTS" "$suite" <<'PY'
import json, os, subprocess, sys
build, label, results, suite = sys.argv[1:5]
tests = json.load(open(os.path.join(build, "meson-info", "intro-tests.json")))
out = open(results, "a")
for t in tests:
    if suite not in t.get("suite", []) and not any(s.endswith(":" + suite) for s in t.get("suite", [])):
        continue
    env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT="TAP", **t.get("env", {}))
    try:
        p = subprocess.run(t["cmd"], env=env, cwd=t.get("workdir") or build,
                           capture_output=True, text=True, timeout=t.get("timeout", 120) or 120)
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        text, rc = "", -1
    cases, who = 0, ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("== as "):  # test-start-users.sh runs the cases once per user
            who = s[6:] + "/"
        if s.startswith("ok ") or s.startswith("not ok "):
            cases += 1
            ok = s.startswith("ok ")
            name = s.split(" - ", 1)[-1] if " - " in s else s
            out.write("%s %s-%s/%s/%s%s\n" % ("pass" if ok else "fail", suite, label, t["name"], who, name))
            print("%s %s-%s/%s/%s%s" % ("ok  " if ok else "FAIL", suite, label, t["name"], who, name))
    if cases == 0 or rc != 0:
        # a crash, a sanitizer report or a non-TAP failure counts as one failure
        out.write("fail %s-%s/%s/exit-%d\n" % (suite, label, t["name"], rc))
        print("FAIL %s-%s/%s (exit %d)\n%s" % (suite, label, t["name"], rc, text[-3000:]))
PY
}

# Every libFuzzer target (clang, ASan+UBSan) built and run for PD_FUZZ_SECONDS (default 10) from
# its seed corpus in tests/fuzz/corpus; a crash, leak or sanitizer report is a failure. New
# inputs go to a scratch directory, never into the repository.
fuzz_smoke() {
	[ "${PD_FUZZ:-1}" = 0 ] && return 0
	say "fuzz targets (${PD_FUZZ_SECONDS:-10} s each)"
	if ! { [ -d build-fuzz ] || CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false >/tmp/pd-build-fuzz.log 2>&1; } ||
		! ninja -C build-fuzz >>/tmp/pd-build-fuzz.log 2>&1; then
		tail -30 /tmp/pd-build-fuzz.log
		record fail fuzz/build
		return 0
	fi
	local t name seed scratch label
	for t in $(find build-fuzz/src -name 'fuzz-*' -type f -perm -u+x | sort); do
		name=${t##*/fuzz-}
		label=fuzz/${t#build-fuzz/src/}
		seed=
		for seed in tests/fuzz/corpus/{,ws-,oci-}$name ''; do [ -d "$seed" ] && break; done
		scratch=$(mktemp -d /tmp/pd-fuzz.XXXXXX)
		if "$t" -max_total_time="${PD_FUZZ_SECONDS:-10}" -timeout=10 -rss_limit_mb=2048 \
			"$scratch" ${seed:+"$seed"} >"$scratch.log" 2>&1; then
			record pass "$label"
			echo "ok   $label ($(grep -c . "$scratch.log") log lines)"
		else
			record fail "$label"
			echo "FAIL $label"
			grep -A20 -E 'ERROR|runtime error|SUMMARY' "$scratch.log" | head -40
		fi
		rm -rf "$scratch" "$scratch.log"
	done
}

# Integration and escape suites against one binary, as the current user.
suites() {
	local bin=$1 probe=$2 label=$3
	say "integration + escape ($label)"
	local f
	for f in tests/integration/*.sh tests/escape/*.sh; do
		[ -e "$f" ] || continue
		case "$f" in */selfcheck.sh|*/escape-lib.sh) continue ;; esac
		PADDOCK=$bin PD_PROBE=$probe PD_SUITE_LABEL=$label bash "$f"
	done
}

# The same suites as an ordinary user: copy the binaries and tests where that user can read.
as_user() {
	local build=$1 label=$2
	id "$PD_TEST_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$PD_TEST_USER" || return 1
	"$build/src/cli/paddock" system setup --user "$PD_TEST_USER" || { record fail "setup/$label-user-cgroups"; return 1; }
	local tmp
	tmp=$(mktemp -d /tmp/pd-user.XXXXXX)
	cp -r tests "$tmp/"
	cp "$build/src/cli/paddock" "$tmp/paddock"
	cp "$build/tests/probe/paddock-probe" "$tmp/paddock-probe" 2>/dev/null || true
	chmod -R a+rX "$tmp"
	su -s /bin/bash "$PD_TEST_USER" -c "cd '$tmp' && env PD_RESULTS='$RESULTS' PD_FILTER='${PD_FILTER:-}' \
		ASAN_OPTIONS='${ASAN_OPTIONS:-}' UBSAN_OPTIONS='$UBSAN_OPTIONS' PD_BACKEND='${PD_USER_BACKEND:-ns}' \
		PADDOCK_VM_CACHE_HOME='${PADDOCK_VM_CACHE_HOME:-}' PADDOCK_VM_TEMPLATE_DIR=/var/tmp/paddock-vm-templates-$PD_TEST_USER bash -c '
		for f in ${PD_USER_FILES:-tests/integration/*.sh tests/escape/*.sh}; do
			[ -e \"\$f\" ] || continue
			case \"\$f\" in */selfcheck.sh|*/escape-lib.sh) continue ;; esac
			PADDOCK=$tmp/paddock PD_PROBE=$tmp/paddock-probe PD_SUITE_LABEL=$label-user bash \"\$f\"
		done'"
	rm -rf "$tmp"
}

# The vm backend needs a guest kernel (fetched through apt on first use) and a base image
# (mmdebstrap): built once into PD_VM_CACHE and reused by later runs on the same machine (the
# image again when its script changed). Every test's PADDOCK_HOME shares that cache through
# PADDOCK_VM_CACHE_HOME. One warm-up box fetches the kernel, writes the initramfs and the
# accelerator verdict as root; the cache is then made readable for the ordinary user's pass.
vm_setup() {
	[ "${PD_VM:-1}" != 0 ] && [ "$(id -u)" = 0 ] || return 1
	say "vm backend: guest kernel and base image (cache ${PD_VM_CACHE:-/var/tmp/paddock-vm-cache})"
	export PADDOCK_VM_CACHE_HOME=${PD_VM_CACHE:-/var/tmp/paddock-vm-cache}
	local img=$PADDOCK_VM_CACHE_HOME/cache/vm-rootfs/rootfs.img t0=$SECONDS sha
	sha=$(sha256sum scripts/vm-build-rootfs.sh | cut -d' ' -f1)
	if [ "$(cat "$img.script" 2>/dev/null)" != "$sha" ] || [ ! -e "$img" ]; then
		scripts/vm-build-rootfs.sh "$img" >/tmp/pd-vm-image.log 2>&1 || { cat /tmp/pd-vm-image.log; return 1; }
		echo "$sha" >"$img.script"
		echo "base image built in $((SECONDS - t0)) s"
	fi
	t0=$SECONDS
	local home
	home=$(mktemp -d /tmp/pd-vmwarm.XXXXXX)
	# fresh boxes are restored from templates of booted guests (vm_template.h): one directory
	# per user for the whole pass, so that a template built once serves every later test
	export PADDOCK_VM_TEMPLATE_DIR=/var/tmp/paddock-vm-templates-$(id -un)
	# from an empty directory of its own: `run` copies the current directory, and a copy of
	# paddock's own state is refused
	mkdir "$home/cwd"
	(cd "$home/cwd" && PADDOCK_HOME=$home "$ROOT/build/src/cli/paddock" run --rm --backend vm -- true) || { rm -rf "$home"; return 1; }
	rm -rf "$home"
	echo "kernel, initramfs and first boot in $((SECONDS - t0)) s"
	# the warm-up box's template is being built in the background; most tests use it
	for _ in $(seq 240); do compgen -G "$PADDOCK_VM_TEMPLATE_DIR/*.state" >/dev/null && break; sleep 0.5; done
	echo "template: $(ls "$PADDOCK_VM_TEMPLATE_DIR" | grep -c '\.state$') ready after $((SECONDS - t0)) s"
	chmod 0755 "$PADDOCK_VM_CACHE_HOME" "$PADDOCK_VM_CACHE_HOME/cache"
	chmod -R a+rX "$PADDOCK_VM_CACHE_HOME/cache"
}

# The suites that run on vm too, most important first: every escape category, then the
# integration suites of the issue. Tests that only make sense on ns say so with pd_only and end
# as "skip". TCG boots take seconds (far more on a loaded host), so the vm pass has a time
# budget (PD_VM_BUDGET seconds, default 45 min, for root and user together, and never past
# 75 min into the run): files it cannot start in time are listed as skipped — never as passed —
# and the run stays inside CI's 90 min.
PD_VM_FILES="tests/integration/vm.sh tests/escape/fs.sh tests/escape/proc.sh tests/escape/syscalls.sh
	tests/escape/resources.sh tests/escape/tty.sh tests/escape/workspace.sh tests/escape/net-local.sh
	tests/escape/net-egress.sh tests/escape/build.sh tests/integration/net.sh tests/integration/run.sh
	tests/integration/lifecycle.sh tests/integration/workspace.sh"
# as the ordinary user: QEMU, the shared cache and TCG (no /dev/kvm) are all it needs
PD_VM_USER_FILES="tests/integration/vm.sh tests/escape/net-local.sh tests/integration/run.sh"
PD_VM_DEADLINE=0
vm_in_budget() {
	[ "$SECONDS" -lt "$PD_VM_DEADLINE" ] && return 0
	echo "vm pass: time budget (PD_VM_BUDGET=${PD_VM_BUDGET:-2700} s) spent; not run: $1"
	echo "skip vm-budget/$1" >>"$RESULTS"
	return 1
}
vm_suites() {
	local bin=$1 probe=$2 label=$3 f
	say "integration + escape on the vm backend ($label)"
	for f in $PD_VM_FILES; do
		vm_in_budget "$label/$f" || continue
		# a file started in budget is still cut 85 min into the run
		PD_BACKEND=vm PADDOCK=$bin PD_PROBE=$probe PD_SUITE_LABEL=$label timeout -k 30 $((5100 - SECONDS)) bash "$f" ||
			echo "vm pass: $f cut at the run's time limit"
	done
}
vm_user_suites() {
	local f files=""
	for f in $PD_VM_USER_FILES; do vm_in_budget "vm-user/$f" && files="$files $f"; done
	[ -n "$files" ] && PD_USER_FILES="$files" PD_USER_BACKEND=vm as_user build vm-user
}

main() {
	if [ -n "${PD_ONLY_VM:-}" ]; then # the vm pass alone (a rerun; needs the builds of a full run)
		vm_setup || record fail setup/vm-kernel-and-image
		PD_VM_DEADLINE=$((SECONDS + ${PD_VM_BUDGET:-2700}))
		vm_suites "$ROOT/build/src/cli/paddock" "$ROOT/build/tests/probe/paddock-probe" vm-root
		vm_user_suites
	elif ! setup; then
		record fail setup/build
	else
		unit_tests build normal
		unit_tests build-asan asan
		if [ "$(id -u)" = 0 ]; then
			PADDOCK_TEST_CREATE_USERS=1 unit_tests build normal integration
		fi
		suites "$ROOT/build/src/cli/paddock" "$ROOT/build/tests/probe/paddock-probe" root
		if [ "$(id -u)" = 0 ]; then
			as_user build user
		fi
		if [ -z "${PD_QUICK:-}" ]; then
			ASAN_OPTIONS=detect_leaks=1 suites "$ROOT/build-asan/src/cli/paddock" "$ROOT/build/tests/probe/paddock-probe" asan-root
		fi
		fuzz_smoke
		if vm_setup; then
			# the budget, and never past 75 min into the run (CI stops at 90)
			PD_VM_DEADLINE=$((SECONDS + ${PD_VM_BUDGET:-2700}))
			[ "$PD_VM_DEADLINE" -le 4500 ] || PD_VM_DEADLINE=4500
			vm_suites "$ROOT/build/src/cli/paddock" "$ROOT/build/tests/probe/paddock-probe" vm-root
			vm_user_suites
		elif [ "${PD_VM:-1}" != 0 ] && [ "$(id -u)" = 0 ]; then
			record fail setup/vm-kernel-and-image
		fi
	fi
	local pass fail skip
	skip=$(grep -c '^skip ' "$RESULTS")
	[ "$skip" -gt 0 ] && { say "skipped ($skip, never counted as passed)"; grep '^skip ' "$RESULTS" | sed 's/^skip /  /'; }
	pass=$(grep -c '^pass ' "$RESULTS")
	fail=$(grep -c '^fail ' "$RESULTS")
	if [ "$fail" -gt 0 ]; then
		say "failures"
		grep '^fail ' "$RESULTS" | sed 's/^fail /  /'
	fi
	rm -f "$RESULTS"
	echo
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
}
main
