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
# runuser (util-linux) rather than sudo: a fresh Debian set up as root may have no sudo
as_user=()
[ "$user" = root ] || as_user=(runuser -u "$user" -- env HOME="$(getent passwd "$user" | cut -d: -f6)")
exec "${as_user[@]}" "$PD" run --rm -- sh -c '
	echo "hello from $(hostname), uid $(id -u) ($(id -un)), pid $$"
	echo "home: $HOME ($(ls -A "$HOME" | wc -l) entries), host /home visible: $(ls /home)"
	echo "network interfaces: $(sed -n "3,\$ s/:.*//p" /proc/net/dev | tr -d " " | tr "\n" " ")"
	echo "capabilities: $(grep CapEff /proc/self/status)"
'
