#!/bin/bash
# tests/integration/image.sh — the image store: import (docker save, OCI layout), pull from a
# registry started here on loopback (anonymous, token auth, redirects, a mirror), layers
# applied right (whiteouts, opaque dirs, hard links) and safely (../, absolute symlinks),
# digests verified, ls/inspect/rm/gc, concurrent use.
. "$(dirname "$0")/../lib.sh"
REG=$(cd "$(dirname "$0")/../registry" && pwd)

mk() { python3 "$REG/mkimage.py" "$@"; }
rootfs_of() { pd image inspect "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])'; }
blob_count() { find "$PADDOCK_HOME/images/blobs/sha256" -type f | wc -l; }

# start_registry LAYOUT [registry.py options]: sets PORT and REG_PID; stopped by the EXIT trap
start_registry() {
	local layout=$1; shift
	rm -f "$PADDOCK_HOME/port"
	python3 "$REG/registry.py" "$layout" "$PADDOCK_HOME/port" --log "$PADDOCK_HOME/reg.log" "$@" &
	REG_PID=$!
	trap 'kill $REG_PID 2>/dev/null || true; pd_cleanup_home' EXIT
	for _ in $(seq 100); do [ -s "$PADDOCK_HOME/port" ] && break; sleep 0.05; done
	PORT=$(cat "$PADDOCK_HOME/port")
}

# the two layers of mkimage.py applied: whiteout, opaque dir, hard link, modes
check_tree() {
	local r=$1
	assert_eq "$(cat "$r/etc/hello")" "hello from layer 1"
	[ ! -e "$r/etc/gone" ] || fail "whiteout not applied: etc/gone exists"
	assert_eq "$(ls "$r/olddir" | tr '\n' ' ')" "new " "opaque dir keeps only layer 2's entries"
	assert_eq "$(cat "$r/keep/x")" "x"
	assert_eq "$(stat -c %i "$r/etc/hello2")" "$(stat -c %i "$r/etc/hello-link")" "hard link"
	assert_eq "$(stat -c %a "$r/bin/script")" "750"
	[ ! -e "$r/etc/.wh.gone" ] && [ ! -e "$r/olddir/.wh..wh..opq" ] || fail "whiteout markers left in the tree"
}

t_import_docker_save() {
	mk docker-save "$PADDOCK_HOME/app.tar"
	pd image import "$PADDOCK_HOME/app.tar"
	local ls
	ls=$(pd image ls)
	assert_contains "$ls" "docker.io/test/app:v1"
	assert_contains "$ls" "linux/amd64, 2 layers"
	check_tree "$(rootfs_of test/app:v1)"
}

t_import_oci_layout_dir_and_tar() {
	mk layout "$PADDOCK_HOME/lay" --gzip
	pd image import --name local/lay:1 "$PADDOCK_HOME/lay"
	check_tree "$(rootfs_of local/lay:1)"
	# the amd64 entry of the index was picked (listed after arm64)
	local want
	want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["amd64"])' "$PADDOCK_HOME/lay/digests.json")
	assert_eq "$(pd image inspect local/lay:1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')" "$want"
	(cd "$PADDOCK_HOME/lay" && tar cf ../lay.tar .)
	pd image import --tag v1 "$PADDOCK_HOME/lay.tar"
	assert_contains "$(pd image ls)" "localhost/lay:v1"
}

t_import_refuses_dotdot_layer() {
	mk docker-save "$PADDOCK_HOME/evil.tar" --evil dotdot
	local out
	out=$(pd image import "$PADDOCK_HOME/evil.tar" 2>&1) && fail "import of a ../ layer succeeded"
	assert_contains "$out" '".."'
	[ ! -e "$PADDOCK_HOME/escaped-dotdot" ] && [ ! -e "$PADDOCK_HOME/images/escaped-dotdot" ] || fail "file escaped"
	assert_eq "$(pd image ls | wc -l)" "1" "no record"
	assert_eq "$(ls -A "$PADDOCK_HOME/images/tmp")" "" "nothing half-built left"
	assert_eq "$(ls -A "$PADDOCK_HOME/images/rootfs")" ""
}

t_import_refuses_write_through_absolute_symlink() {
	mkdir "$PADDOCK_HOME/target"
	mk layout "$PADDOCK_HOME/evil" --evil abs-symlink --escape-target "$PADDOCK_HOME/target"
	assert_status 125 pd image import "$PADDOCK_HOME/evil"
	assert_eq "$(ls -A "$PADDOCK_HOME/target")" "" "host directory unchanged"
	assert_eq "$(ls -A "$PADDOCK_HOME/images/rootfs")" ""
}

t_import_device_node_neutralised() {
	mk layout "$PADDOCK_HOME/dev" --evil device
	pd image import --name local/dev:1 "$PADDOCK_HOME/dev"
	local r
	r=$(rootfs_of local/dev:1)
	if [ "$(id -u)" != 0 ]; then
		[ ! -e "$r/dev-null-copy" ] || fail "an ordinary user's import created a device node"
	else
		# root may keep it: trees are only ever mounted nodev inside boxes
		[ ! -e "$r/dev-null-copy" ] || [ -c "$r/dev-null-copy" ] || fail "device entry became something else"
	fi
}

# An archive that holds one path twice is refused (tar and docker's loader take the last copy,
# a lookup the first): what the user inspects is what is imported. The name in the message
# is shown escaped.
t_import_refuses_a_path_held_twice() {
	python3 - "$PADDOCK_HOME/dup.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name, data in (("manifest.json", b"[]"), ("x\x1b[31m", b"1"), ("x\x1b[31m", b"2")):
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
PY
	local out
	out=$(pd image import --name local/dup:1 "$PADDOCK_HOME/dup.tar" 2>&1) && fail "imported: $out"
	assert_contains "$out" "holds 'x\\x1b[31m' twice"
	[[ "$out" != *$'\e'* ]] || fail "an escape sequence reached the terminal: $out"
	assert_status 125 pd image inspect local/dup:1
}

# a docker-save tag that is no image name is said, and the name made from the file is given
t_import_says_when_the_archive_tag_is_not_a_name() {
	mk docker-save "$PADDOCK_HOME/badtag.tar" --repo-tag 'BAD TAG!!'
	local out
	out=$(pd image import "$PADDOCK_HOME/badtag.tar" 2>&1)
	assert_contains "$out" "the archive's tag 'BAD TAG!!' is not a valid image name; named localhost/badtag:latest"
	assert_contains "$(pd image ls)" "localhost/badtag:latest"
}

t_import_refuses_tampered_oci_blob() {
	mk layout "$PADDOCK_HOME/lay"
	local layer
	layer=$(ls -S "$PADDOCK_HOME/lay/blobs/sha256" | head -1)
	printf 'X' | dd of="$PADDOCK_HOME/lay/blobs/sha256/$layer" bs=1 seek=200 conv=notrunc 2>/dev/null
	local out
	out=$(pd image import "$PADDOCK_HOME/lay" 2>&1) && fail "tampered layout imported"
	assert_contains "$out" "digest mismatch"
	assert_eq "$(pd image ls | wc -l)" "1"
}

# a layer that is not the one its config names (the config is the honest image's, so the tree
# would be stored under the honest config's key for a later honest pull to reuse): refused,
# nothing unpacked; the honest image imported afterwards has none of the forged content
t_import_refuses_layers_the_config_does_not_name() {
	mk layout "$PADDOCK_HOME/forged" --forge --gzip
	local out
	out=$(pd image import --name local/forged:1 "$PADDOCK_HOME/forged" 2>&1) && fail "forged layer imported"
	assert_contains "$out" "the config says"
	assert_eq "$(ls "$PADDOCK_HOME/images/rootfs" 2>/dev/null | wc -l)" "0"
	mk layout "$PADDOCK_HOME/honest" --gzip
	pd image import --name local/honest:1 "$PADDOCK_HOME/honest" >/dev/null
	local r
	r=$(rootfs_of local/honest:1)
	check_tree "$r"
	[ ! -e "$r/etc/planted" ] || fail "forged content in the honest image's tree"
}

# a manifest whose layers claim more than any real image: refused before a layer is fetched
t_import_refuses_an_oversized_image() {
	mk layout "$PADDOCK_HOME/huge"
	python3 - "$PADDOCK_HOME/huge" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]; b = os.path.join(d, "blobs", "sha256")
def put(obj):
    data = json.dumps(obj).encode(); h = hashlib.sha256(data).hexdigest()
    open(os.path.join(b, h), "wb").write(data)
    return "sha256:" + h, len(data)
top = json.load(open(os.path.join(d, "index.json")))
idx = json.load(open(os.path.join(b, top["manifests"][0]["digest"][7:])))
for e in idx["manifests"]:
    if e["platform"]["architecture"] == "amd64":
        m = json.load(open(os.path.join(b, e["digest"][7:])))
        m["layers"][0]["size"] = 70 << 30
        e["digest"], e["size"] = put(m)
top["manifests"][0]["digest"], top["manifests"][0]["size"] = put(idx)
json.dump(top, open(os.path.join(d, "index.json"), "w"))
PY
	local out
	out=$(pd image import --name local/huge:1 "$PADDOCK_HOME/huge" 2>&1) && fail "oversized image imported"
	assert_contains "$out" "add up to"
	assert_eq "$(ls "$PADDOCK_HOME/images/rootfs" 2>/dev/null | wc -l)" "0"
}

t_pull_manifest_list_anonymous() {
	mk layout "$PADDOCK_HOME/lay"
	start_registry "$PADDOCK_HOME/lay"
	pd image pull "127.0.0.1:$PORT/test/app:v1"
	check_tree "$(rootfs_of "127.0.0.1:$PORT/test/app:v1")"
	local want
	want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["amd64"])' "$PADDOCK_HOME/lay/digests.json")
	assert_contains "$(pd image ls --json)" "\"digest\":	\"$want\""
	# a second pull fetches only the manifest (everything else is cached by digest)
	: >"$PADDOCK_HOME/reg.log"
	pd image pull "127.0.0.1:$PORT/test/app:v1"
	assert_not_contains "$(cat "$PADDOCK_HOME/reg.log")" "/blobs/"
}

t_pull_token_auth_and_redirect() {
	mk layout "$PADDOCK_HOME/lay"
	start_registry "$PADDOCK_HOME/lay" --auth --redirect
	pd image pull "127.0.0.1:$PORT/test/app:single"
	local log
	log=$(cat "$PADDOCK_HOME/reg.log")
	assert_contains "$log" "GET /token?service=test-registry&scope=repository%3Atest%2Fapp%3Apull"
	assert_contains "$log" "GET /v2/test/app/manifests/single auth=yes"
	assert_contains "$log" "GET /direct/"
	check_tree "$(rootfs_of "127.0.0.1:$PORT/test/app:single")"
}

# a reference that cannot be one is a usage error, said before any connection; so is a
# --registry-mirror that cannot be one, and a base image paddock does not build (both were
# 125, paddock's own failure)
t_pull_of_a_bad_reference_is_a_usage_error() {
	assert_status 2 pd image pull 'Bad Ref'
	assert_status 2 pd image pull 'a/b:c:d'
	local m
	for m in notaurl ftp://x http:// "http://127.0.0.1:1@example.com" http://mirror.example.com; do
		assert_status 2 pd image pull --registry-mirror "$m" test/app:v1
	done
	assert_contains "$(pd image pull --registry-mirror notaurl test/app:v1 2>&1)" "is not an http(s) URL"
	assert_status 2 pd image build debian:sid
	assert_contains "$(pd image build debian:sid 2>&1)" "is not a base image paddock builds"
	assert_eq "$(pd image ls --json)" "[]"
}

t_pull_refuses_digest_mismatch() {
	mk layout "$PADDOCK_HOME/lay"
	start_registry "$PADDOCK_HOME/lay" --corrupt
	local out
	out=$(pd image pull "127.0.0.1:$PORT/test/app:v1" 2>&1) && fail "corrupt layer accepted"
	assert_contains "$out" "digest mismatch"
	assert_eq "$(pd image ls | wc -l)" "1" "no record"
	assert_eq "$(ls -A "$PADDOCK_HOME/images/tmp")" "" "no partial blob left"
	assert_eq "$(ls -A "$PADDOCK_HOME/images/rootfs")" ""
}

t_pull_through_mirror() {
	mk layout "$PADDOCK_HOME/lay"
	start_registry "$PADDOCK_HOME/lay"
	pd image pull --registry-mirror "http://127.0.0.1:$PORT" test/app:v1
	PADDOCK_REGISTRY_MIRROR="http://127.0.0.1:$PORT" pd image pull --name mirrored/app:1 docker.io/test/app:single
	assert_contains "$(pd image ls)" "docker.io/test/app:v1"
	assert_contains "$(pd image ls)" "docker.io/mirrored/app:1"
	# the config key, when neither the flag nor the variable is given
	mkdir -p "$PADDOCK_HOME/cfg/paddock"
	printf '{"registryMirror": "http://127.0.0.1:%s"}\n' "$PORT" >"$PADDOCK_HOME/cfg/paddock/images.json"
	XDG_CONFIG_HOME="$PADDOCK_HOME/cfg" pd image pull --name fromconfig/app:1 test/app:single
	printf '{"registryMirror": 5}' >"$PADDOCK_HOME/cfg/paddock/images.json"
	assert_status 125 env XDG_CONFIG_HOME="$PADDOCK_HOME/cfg" "$PADDOCK" image pull test/app:single
	# a config file's errors say file:line:col
	assert_contains "$(XDG_CONFIG_HOME="$PADDOCK_HOME/cfg" pd image pull test/app:single 2>&1)" \
		"images.json:1:20: registryMirror: expected a URL string"
	printf '{\n  "registryMirror": "x",\n}' >"$PADDOCK_HOME/cfg/paddock/images.json"
	assert_contains "$(XDG_CONFIG_HOME="$PADDOCK_HOME/cfg" pd image pull test/app:single 2>&1)" \
		"images.json:3:1: invalid JSON"
	# userinfo in a mirror is refused (it made curl's host another than the one checked)
	assert_status 2 pd image pull --registry-mirror "http://127.0.0.1:$PORT@example.com" test/app:v1
	# plain http to a mirror off loopback is refused
	assert_status 2 pd image pull --registry-mirror http://mirror.example.com test/app:v1
	# (the variable is no option: its errors are paddock's to report)
	assert_status 125 env PADDOCK_REGISTRY_MIRROR=http://mirror.example.com "$PADDOCK" image pull test/app:v1
}

t_pull_over_tls_with_a_private_ca() {
	mk layout "$PADDOCK_HOME/lay"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$PADDOCK_HOME/key.pem" -out "$PADDOCK_HOME/cert.pem" 2>/dev/null
	start_registry "$PADDOCK_HOME/lay" --tls "$PADDOCK_HOME/cert.pem" "$PADDOCK_HOME/key.pem"
	local out
	out=$(pd image pull --registry-mirror "https://127.0.0.1:$PORT" test/app:v1 2>&1) && fail "an unknown CA was trusted"
	assert_contains "$out" "certificate"
	pd image pull --registry-mirror "https://127.0.0.1:$PORT" --ca-file "$PADDOCK_HOME/cert.pem" test/app:v1
	check_tree "$(rootfs_of test/app:v1)"
}

t_pull_unknown_tag_and_no_registry() {
	mk layout "$PADDOCK_HOME/lay"
	start_registry "$PADDOCK_HOME/lay"
	local out
	out=$(pd image pull "127.0.0.1:$PORT/test/app:nope" 2>&1) && fail "unknown tag pulled"
	assert_contains "$out" "HTTP 404"
	kill "$REG_PID"; wait "$REG_PID" 2>/dev/null || true
	assert_status 125 pd image pull "127.0.0.1:$PORT/test/app:v1"
}

t_ls_inspect_rm_gc() {
	mk docker-save "$PADDOCK_HOME/app.tar"
	pd image import "$PADDOCK_HOME/app.tar"
	pd image import --name other/app:2 "$PADDOCK_HOME/app.tar"
	pd image ls --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
assert [i["name"] for i in v] == ["docker.io/other/app:2", "docker.io/test/app:v1"], v
assert all(i["unpacked"] > 0 and i["size"] > 0 and len(i["layers"]) == 2 for i in v), v'
	local digest
	digest=$(pd image inspect test/app:v1 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["imageConfig"]["os"]=="linux"; print(d["digest"])')
	# both names share blobs and the tree: removing one keeps them (the archive's loose files,
	# like manifest.json, were never referenced and go)
	local layers
	layers=$(pd image inspect test/app:v1 | python3 -c 'import json,sys; print(" ".join(l[7:] for l in json.load(sys.stdin)["layers"]))')
	assert_contains "$(pd image rm other/app:2)" "0 unpacked trees"
	for l in $layers; do [ -f "$PADDOCK_HOME/images/blobs/sha256/$l" ] || fail "shared layer removed"; done
	pd image inspect "${digest:7:12}" >/dev/null
	assert_contains "$(pd image rm "${digest:7:12}")" "1 unpacked tree"
	assert_eq "$(blob_count)" "0"
	assert_status 125 pd image inspect test/app:v1
	assert_status 125 pd image rm nothing:here
	assert_status 2 pd image frobnicate
}

# one image under two names: its digest picks it (inspect) and removes it with every name
# (rm); a bad --name is a usage error before anything is fetched
t_digest_of_an_image_with_two_names() {
	mk layout "$PADDOCK_HOME/lay" >/dev/null
	pd image import --name local/a:1 "$PADDOCK_HOME/lay" >/dev/null
	pd image import --name other/b:1 "$PADDOCK_HOME/lay" >/dev/null
	local d
	d=$(pd image ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["digest"])')
	assert_status 0 pd image inspect "$d"
	local out
	out=$(pd image rm "$d")
	assert_contains "$out" "removed docker.io/local/a:1"
	assert_contains "$out" "removed docker.io/other/b:1"
	assert_eq "$(pd image ls --json)" "[]"
	assert_status 2 pd image import --name 'a b' "$PADDOCK_HOME/lay"
	assert_status 2 pd image import --name '' "$PADDOCK_HOME/lay"
	assert_eq "$(find "$PADDOCK_HOME/images/blobs" -type f 2>/dev/null | wc -l)" "0"
}

# importing under a name that names another image moves the name, and says so
t_import_over_a_name_says_so() {
	mk docker-save "$PADDOCK_HOME/a.tar"
	mk docker-save --add-file "$PADDOCK_HOME/a.tar:extra" "$PADDOCK_HOME/b.tar"
	local out old
	out=$(pd image import --name local/x:1 "$PADDOCK_HOME/a.tar" 2>&1)
	assert_not_contains "$out" "note:"
	old=$(pd image inspect local/x:1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
	out=$(pd image import --name local/x:1 "$PADDOCK_HOME/a.tar" 2>&1)
	assert_not_contains "$out" "note:" "the same image again"
	out=$(pd image import --name local/x:1 "$PADDOCK_HOME/b.tar" 2>&1)
	assert_contains "$out" "note: docker.io/local/x:1 named $old; it now names sha256:"
	assert_ne "$(pd image inspect local/x:1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')" "$old"
}

t_gc_keeps_trees_of_existing_boxes() {
	mk docker-save "$PADDOCK_HOME/app.tar"
	pd image import "$PADDOCK_HOME/app.tar"
	local cfg
	cfg=$(pd image inspect test/app:v1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"])')
	# what `run --image` records for a box (image store's uses/BOX), for a box that exists
	mkdir -p "$PADDOCK_HOME/boxes/b1"
	printf '%s' "$cfg" >"$PADDOCK_HOME/images/uses/b1"
	pd image rm test/app:v1
	[ -d "$PADDOCK_HOME/images/rootfs/${cfg:7}" ] || fail "tree of an existing box removed"
	rmdir "$PADDOCK_HOME/boxes/b1"
	# a use younger than an hour may be a box still being made (its directory comes after
	# its use): kept; an old one whose box is gone is dropped with its tree
	pd image gc
	[ -d "$PADDOCK_HOME/images/rootfs/${cfg:7}" ] || fail "tree of a young use removed"
	touch -d '2 hours ago' "$PADDOCK_HOME/images/uses/b1"
	pd image gc
	[ ! -e "$PADDOCK_HOME/images/rootfs/${cfg:7}" ] || fail "tree of a removed box kept"
	[ ! -e "$PADDOCK_HOME/images/uses/b1" ] || fail "stale use kept"
}

t_concurrent_imports_and_gc() {
	mk docker-save "$PADDOCK_HOME/app.tar"
	local i pids=()
	for i in 1 2 3 4; do
		pd image import --name "par/app:$i" "$PADDOCK_HOME/app.tar" >/dev/null 2>&1 & pids+=($!)
		pd image gc >/dev/null & pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "a concurrent import or gc failed"; done
	assert_eq "$(pd image ls | grep -c par/app)" "4"
	for i in 1 2 3 4; do check_tree "$(rootfs_of "par/app:$i")"; done
	pd image gc
	check_tree "$(rootfs_of par/app:1)"
}

# an image with a static busybox as /bin/busybox
mk_bb() { mk layout "$PADDOCK_HOME/bb" --add-file /bin/busybox:/bin/busybox "$@"; pd image import --name local/bb:1 "$PADDOCK_HOME/bb"; }
bb_run() { pd run --rm -T --backend ns --workspace none --image local/bb:1 "$@"; }
bb_run_img() { local i=$1; shift; pd run --rm -T --backend ns --workspace none --image "$i" "$@"; }

t_run_from_image_root_is_the_image() {
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	mk_bb
	local out r
	out=$(bb_run -- /bin/busybox sh -c 'cat /etc/hello; ls /olddir; [ -e /usr/bin/env ] && echo HOSTUSR; echo changed >/tmp/t; cat /tmp/t; echo $0')
	assert_contains "$out" "hello from layer 1"
	assert_contains "$out" "new"
	assert_contains "$out" "changed"
	assert_not_contains "$out" "HOSTUSR"
	# without a command, the image's Entrypoint + Cmd run, in its WorkingDir
	assert_eq "$(bb_run)" "image-default-cmd"
	assert_eq "$(bb_run -- /bin/busybox pwd)" "/keep"
	# the image config's Env applies; -e wins over it
	assert_eq "$(bb_run -- /bin/busybox sh -c 'echo $IMAGE_TEST')" "1"
	assert_eq "$(bb_run -e IMAGE_TEST=2 -- /bin/busybox sh -c 'echo $IMAGE_TEST')" "2"
	# the image's owners: host root's trees are shifted into its boxes' range (files are
	# root's inside); an ordinary user's trees are that user's (files are the agent's inside).
	# Either way writes go to the box's layer, never to the stored tree.
	local who=agent
	[ "$(id -u)" = 0 ] && who=root
	out=$(bb_run --user $who -- /bin/busybox sh -c 'echo box >/etc/hello && rm /etc/hello2 && cat /etc/hello')
	assert_eq "$out" "box"
	r=$(rootfs_of local/bb:1)
	assert_eq "$(cat "$r/etc/hello")" "hello from layer 1"
	[ -e "$r/etc/hello2" ] || fail "box removed a file of the stored tree"
	assert_status 125 pd run --rm --backend ns --image nope:1 -- true
	# ended --rm boxes leave no record that they use the image
	assert_eq "$(ls -A "$PADDOCK_HOME/images/uses")" "" "uses/ after run --rm"
}

t_run_from_image_skeleton_symlinks_do_not_reach_the_host() {
	mkdir -m 0700 "$PADDOCK_HOME/target"
	mk_bb --symlink "tmp:$PADDOCK_HOME/target" --symlink "home:$PADDOCK_HOME/target" --symlink "etc/passwd:$PADDOCK_HOME/target/passwd"
	bb_run -- /bin/busybox sh -c 'echo x >/tmp/escape; ls -ld /tmp /home' || true
	assert_eq "$(ls -A "$PADDOCK_HOME/target")" "" "nothing written into the host directory"
	assert_eq "$(stat -c %a "$PADDOCK_HOME/target")" "700" "host directory mode unchanged"
}

# Attack: a box of an image writes beneath /proc — a PSI trigger (/proc/pressure is 0666), its
# own processes' knobs. Landlock's rule for the image's / (its new top-level directories must
# be writable) reaches /proc, so /proc itself is mounted read-only: blocked for the agent and
# for root, as in the host view. /proc/self/fd/N leads to the file itself and still writes; a
# new top-level directory still takes files.
t_run_from_image_proc_is_not_writable() {
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	mk_bb
	local who out users=(agent)
	pd_root_available && users+=(root)
	for who in "${users[@]}"; do
		out=$(bb_run --user "$who" -- /bin/busybox sh -c '
			[ -e /proc/pressure/memory ] && echo HAVE-PSI
			echo "some 500000 2000000" >/proc/pressure/memory && echo WROTE-PSI
			echo 0 >/proc/self/oom_score_adj && echo WROTE-OOM
			echo x >/proc/self/comm && echo WROTE-COMM
			exec 3>/tmp/f && echo via-fd >/proc/self/fd/3 && cat /tmp/f
			echo done' 2>&1)
		assert_not_contains "$out" "WROTE-"
		assert_contains "$out" "via-fd"
		assert_contains "$out" "done"
		[ -d /proc/pressure ] && assert_contains "$out" "HAVE-PSI"
	done
	if pd_root_available; then
		out=$(bb_run --user root -- /bin/busybox sh -c 'mkdir /app && echo app >/app/marker && cat /app/marker')
		assert_eq "$out" "app"
	fi
}

# An image's User is not applied (docs/images.md): the box says so, with the name escaped,
# and runs the command as agent; --user root is not told about it.
t_image_user_is_noted_not_applied() {
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	mk layout "$PADDOCK_HOME/bb" --add-file /bin/busybox:/bin/busybox --user $'node\e[31m'
	pd image import --name local/bbu:1 "$PADDOCK_HOME/bb" >/dev/null
	local out
	out=$(bb_run_img local/bbu:1 -- /bin/busybox id -u 2>&1)
	assert_contains "$out" "the image's User 'node\\x1b[31m' is not applied"
	assert_contains "$out" "1000"
	out=$(bb_run_img local/bbu:1 --user root -- /bin/busybox id -u 2>&1)
	assert_not_contains "$out" "not applied"
	assert_eq "$out" "0"
}

t_image_of_a_box_survives_rm_and_gc() {
	mk_bb
	pd create --backend ns --workspace none --image local/bb:1 imgbox >/dev/null
	pd image rm local/bb:1
	pd image gc
	assert_eq "$(pd exec imgbox -- /bin/busybox cat /keep/x)" "x"
	[ -e "$PADDOCK_HOME/images/uses/imgbox" ] || fail "the box's use is not recorded"
	pd rm -f imgbox
	[ ! -e "$PADDOCK_HOME/images/uses/imgbox" ] || fail "rm left the box's use behind"
	assert_contains "$(pd image gc)" "1 unpacked tree"
	assert_eq "$(ls -A "$PADDOCK_HOME/images/rootfs")" ""
}

# `image build` with a stand-in mmdebstrap on PATH (the real one takes minutes through the
# mirror): the tar it writes on stdout becomes a one-layer image; a failing run leaves nothing
fake_mmdebstrap() {
	mkdir -p "$PADDOCK_HOME/fakebin" "$PADDOCK_HOME/fakeroot/etc" "$PADDOCK_HOME/fakeroot/bin"
	echo 12.99 >"$PADDOCK_HOME/fakeroot/etc/debian_version"
	cp /bin/busybox "$PADDOCK_HOME/fakeroot/bin/busybox"
	cat >"$PADDOCK_HOME/fakebin/mmdebstrap" <<EOF
#!/bin/sh
echo "\$*" >"$PADDOCK_HOME/mmdebstrap.args"
tar -C "$PADDOCK_HOME/fakeroot" -cf - .
exit \${FAKE_STATUS:-0}
EOF
	chmod +x "$PADDOCK_HOME/fakebin/mmdebstrap"
}

t_image_build_debian_base_through_mmdebstrap() {
	fake_mmdebstrap
	PATH="$PADDOCK_HOME/fakebin:$PATH" pd image build debian:bookworm-slim
	assert_eq "$(cat "$PADDOCK_HOME/mmdebstrap.args")" "--variant=minbase --format=tar bookworm -"
	assert_contains "$(pd image ls)" "docker.io/library/debian:bookworm-slim"
	assert_eq "$(cat "$(rootfs_of debian:bookworm-slim)/etc/debian_version")" "12.99"
	assert_eq "$(bb_run_img debian:bookworm-slim -- /bin/busybox cat /etc/debian_version)" "12.99"
	assert_status 2 pd image build debian:sid # a base it does not build: a usage error
}

t_image_build_failing_mmdebstrap_leaves_nothing() {
	fake_mmdebstrap
	local out
	out=$(FAKE_STATUS=3 PATH="$PADDOCK_HOME/fakebin:$PATH" pd image build debian:bookworm 2>&1) && fail "a failed build was stored"
	assert_contains "$out" "status 3"
	assert_eq "$(pd image ls | wc -l)" "1"
	assert_eq "$(ls -A "$PADDOCK_HOME/images/tmp")" ""
}

run_tests
