#!/bin/sh
# test-start-users.sh TEST-BINARY — runs the ns integration test as two ordinary users: pdtest
# (with /etc/subuid and /etc/subgid ranges: boxes have a root user) and pdtest2 (without:
# boxes have only the agent). Needs root, to delegate their cgroups as
# `paddock system setup --user` does. Creates the users only when
# PADDOCK_TEST_CREATE_USERS=1; otherwise skips if they are missing.
set -eu
bin=$(readlink -f "$1")
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
command -v su >/dev/null || { echo "skip: no su"; exit 77; }

make_user() { # NAME WITH_SUBIDS
	id "$1" >/dev/null 2>&1 && return 0
	[ "${PADDOCK_TEST_CREATE_USERS:-0}" = 1 ] || { echo "skip: user $1 missing (PADDOCK_TEST_CREATE_USERS=1 creates it)"; exit 77; }
	useradd -m -s /bin/sh "$1"
	if [ "$2" = no ]; then
		for f in subuid subgid; do sed -i "/^$1:/d" /etc/$f; done
	fi
}

make_user pdtest yes
make_user pdtest2 no
grep -q '^pdtest:' /etc/subuid || { echo "pdtest has no /etc/subuid range"; exit 1; }
! grep -q '^pdtest2:' /etc/subuid || { echo "pdtest2 must not have a /etc/subuid range"; exit 1; }

status=0
for u in pdtest pdtest2; do
	"$bin" --setup-user "$u"
	echo "== as $u"
	(cd / && su "$u" -s /bin/sh -c "$bin") || status=1
done
exit $status
