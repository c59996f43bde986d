#!/bin/sh
# vm-bench.sh [BUILD_DIR] [RUNS] — the vm boot benchmark (src/runtime/vm/vm-bench.c): raw QEMU
# anchor vs runtime_vm start → HELLO and start → exec true → exit, medians. Uses the cached
# kernel, base image and KVM verdict in $PADDOCK_HOME (default /var/tmp/paddock-vm-test; run
# `meson test --suite vm` once first to fetch the kernel).
set -eu
build=${1:-build}
runs=${2:-5}
vm=$build/src/runtime/vm
export PADDOCK_HOME=${PADDOCK_HOME:-/var/tmp/paddock-vm-test}
# Until paddock-init's main calls vmboot(), the guest runs the test build of it.
export PADDOCK_TESTING=1
exec "$vm/vm-bench" "$vm/vm-bench-poweroff-init" "$runs"
