#!/bin/bash
# scripts/quickstart.sh — the README's first command: installs what paddock needs, builds it,
# and runs a real sandbox on the default backend. Run with sudo from a fresh clone; the
# sandbox itself runs as the user who called sudo (paddock needs no root at run time).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
PD=$PWD/build/src/cli/paddock
user=${SUDO_USER:-root}
if [ "$user" != root ]; then
	# an ordinary user needs a delegated cgroup for the box's memory/pids/cpu limits
	"$PD" system setup --user "$user"
fi
echo "paddock built: $PD"
echo "running: paddock run --rm -- sh -c '…'   (as $user)"
exec sudo -u "$user" -H "$PD" run --rm -- sh -c '
	echo "hello from $(hostname), uid $(id -u) ($(id -un)), pid $$"
	echo "home: $HOME ($(ls -A "$HOME" | wc -l) entries), host /home visible: $(ls /home)"
	echo "network: $(ls /sys/class/net 2>/dev/null | tr "\n" " " || echo loopback only)"
	echo "capabilities: $(grep CapEff /proc/self/status)"
'
