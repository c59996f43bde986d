#!/usr/bin/env python3
"""tests/registry/mkimage.py — generates small OCI images for the image tests (no network).

  mkimage.py layout DIR [options]       an OCI layout: index.json -> image index (manifest list)
                                        with linux/amd64 and linux/arm64 entries, ref name "v1"
  mkimage.py docker-save FILE [options] a `docker save` tarball tagged test/app:v1

The amd64 image has two layers that exercise the applier:
  layer 1: etc/hello, etc/gone, olddir/{a,b}, keep/x, bin/ (and --add-file files)
  layer 2: etc/.wh.gone (whiteout), olddir/.wh..wh..opq + olddir/new (opaque dir),
           etc/hello2 + hard link etc/hello-link -> etc/hello2, a 0750 script
Options:
  --evil dotdot|abs-symlink|device   add a hostile third layer (../ entry; a symlink to an
                                     absolute host path then a file through it; a device node)
  --escape-target PATH               the absolute path abs-symlink points at
  --add-file SRC:DEST                put a host file into layer 1 (e.g. a static binary)
  --symlink NAME:TARGET              put a symlink into layer 1 (e.g. tmp:/some/host/dir)
  --big-mb N                         add a third layer with an N MiB file (big/data), written
                                     straight to disk (OCI layout only), for benchmarks
  --gzip                             compress layers (OCI layout only)
  --forge                            the manifest's layer 2 is another tar (with etc/planted)
                                     while the config (and its digest) stays the honest one
"""
import argparse, gzip, hashlib, io, json, os, sys, tarfile, time


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def add_file(t, name, data, mode=0o644, **kw):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = mode
    ti.mtime = 1700000000
    for k, v in kw.items():
        setattr(ti, k, v)
    t.addfile(ti, io.BytesIO(data))


def add_dir(t, name, mode=0o755):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.DIRTYPE
    ti.mode = mode
    ti.mtime = 1700000000
    t.addfile(ti)


def add_link(t, name, target, hard=False):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    ti.linkname = target
    ti.mtime = 1700000000
    t.addfile(ti)


class ZeroReader(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def readinto(self, b):
        k = min(len(b), self.left)
        # not all zeros: a repeating pattern, so the size is real file data
        b[:k] = (b"paddock-bench-" * (k // 14 + 1))[:k]
        self.left -= k
        return k


def layer(build):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        build(t)
    return buf.getvalue()


def layer1(args):
    def build(t):
        add_dir(t, "etc")
        add_file(t, "etc/hello", b"hello from layer 1\n")
        add_file(t, "etc/gone", b"whited out by layer 2\n")
        add_dir(t, "olddir")
        add_file(t, "olddir/a", b"a\n")
        add_file(t, "olddir/b", b"b\n")
        add_dir(t, "keep")
        add_file(t, "keep/x", b"x\n")
        add_dir(t, "bin")
        for spec in args.add_file or []:
            src, dest = spec.split(":", 1)
            data = open(src, "rb").read()
            parts = dest.strip("/").split("/")
            for i in range(1, len(parts)):
                add_dir(t, "/".join(parts[:i]))
            add_file(t, dest.strip("/"), data, mode=os.stat(src).st_mode & 0o7777)
        for spec in args.symlink or []:
            name, target = spec.split(":", 1)
            add_link(t, name, target)
    return layer(build)


def layer2(args):
    def build(t):
        add_file(t, "etc/.wh.gone", b"")
        add_file(t, "olddir/.wh..wh..opq", b"")
        add_file(t, "olddir/new", b"new\n")
        add_file(t, "etc/hello2", b"hello from layer 2\n")
        add_link(t, "etc/hello-link", "etc/hello2", hard=True)
        add_file(t, "bin/script", b"#!/bin/sh\necho script\n", mode=0o750)
    return layer(build)


def layer_evil(kind, target):
    def build(t):
        if kind == "dotdot":
            add_file(t, "../../escaped-dotdot", b"pwned\n")
        elif kind == "abs-symlink":
            add_link(t, "escape", target)
            add_file(t, "escape/pwned", b"pwned\n")
        elif kind == "device":
            ti = tarfile.TarInfo("dev-null-copy")
            ti.type = tarfile.CHRTYPE
            ti.devmajor, ti.devminor = 1, 3
            ti.mode = 0o666
            t.addfile(ti)
    return layer(build)


CONFIG_USER = None  # --user: the config's User


def config_for(diff_ids, arch="amd64"):
    config = {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "IMAGE_TEST=1"],
              "Cmd": ["/bin/busybox", "echo", "image-default-cmd"], "WorkingDir": "/keep"}
    if CONFIG_USER is not None:
        config["User"] = CONFIG_USER
    return json.dumps({
        "architecture": arch, "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "created": "2026-01-01T00:00:00Z",
    }, sort_keys=True).encode()


def layers_for(args):
    ls = [layer1(args), layer2(args)]
    if args.evil:
        ls.append(layer_evil(args.evil, args.escape_target or "/tmp"))
    return ls


def big_layer(blobs, mb):
    """A layer with one mb MiB file, streamed to disk: (digest, size)."""
    tmp = os.path.join(blobs, "big.tmp")
    with open(tmp, "wb") as f:
        with tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT) as t:
            add_dir(t, "big")
            ti = tarfile.TarInfo("big/data")
            ti.size = mb << 20
            ti.mode = 0o644
            t.addfile(ti, ZeroReader(ti.size))
    h = hashlib.sha256()
    with open(tmp, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    d = "sha256:" + h.hexdigest()
    size = os.path.getsize(tmp)
    os.rename(tmp, os.path.join(blobs, d[7:]))
    return d, size


def write_blob(blobs, data):
    d = sha(data)
    with open(os.path.join(blobs, d[7:]), "wb") as f:
        f.write(data)
    return d


def make_layout(args):
    out = args.out
    blobs = os.path.join(out, "blobs", "sha256")
    os.makedirs(blobs, exist_ok=True)
    raw = layers_for(args)
    diff_ids = [sha(l) for l in raw]
    if args.forge:
        def planted(t):
            add_dir(t, "etc")
            add_file(t, "etc/planted", b"forged\n")
        raw[1] = layer(planted)
    if args.gzip:
        stored = [gzip.compress(l, mtime=0) for l in raw]
        lmt = "application/vnd.oci.image.layer.v1.tar+gzip"
    else:
        stored, lmt = raw, "application/vnd.oci.image.layer.v1.tar"
    descs = [{"mediaType": lmt, "digest": write_blob(blobs, l), "size": len(l)} for l in stored]
    if args.big_mb:
        bd, bsize = big_layer(blobs, args.big_mb)
        diff_ids.append(bd)
        descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": bd, "size": bsize})
    manifests = {}
    for arch in ("amd64", "arm64"):
        cfg = config_for(diff_ids if arch == "amd64" else [diff_ids[0]], arch)
        cd = write_blob(blobs, cfg)
        m = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": len(cfg)},
            "layers": descs if arch == "amd64" else descs[:1],
        }).encode()
        manifests[arch] = (write_blob(blobs, m), len(m))
    # arm64 first: the pick must look at the platform, not the order
    idx = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifests[a][0],
                       "size": manifests[a][1], "platform": {"os": "linux", "architecture": a}}
                      for a in ("arm64", "amd64")],
    }).encode()
    idx_d = write_blob(blobs, idx)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.index.v1+json", "digest": idx_d, "size": len(idx),
            "annotations": {"org.opencontainers.image.ref.name": "v1"}}]}, f)
    # what the tests compare against
    with open(os.path.join(out, "digests.json"), "w") as f:
        json.dump({"index": idx_d, "amd64": manifests["amd64"][0], "arm64": manifests["arm64"][0]}, f)


def make_docker_save(args):
    raw = layers_for(args)
    diff_ids = [sha(l) for l in raw]
    cfg = config_for(diff_ids)
    cfg_name = sha(cfg)[7:] + ".json"
    with tarfile.open(args.out, "w", format=tarfile.PAX_FORMAT) as t:
        add_file(t, cfg_name, cfg)
        paths = []
        for i, l in enumerate(raw):
            d = "%064x" % (i + 1)
            add_dir(t, d)
            add_file(t, d + "/layer.tar", l)
            add_file(t, d + "/VERSION", b"1.0")
            paths.append(d + "/layer.tar")
        # an old-docker duplicate: a symlinked layer.tar pointing at the first one
        add_dir(t, "%064x" % 99)
        add_link(t, "%064x/layer.tar" % 99, "../%064x/layer.tar" % 1)
        add_file(t, "manifest.json", json.dumps([{
            "Config": cfg_name, "RepoTags": [args.repo_tag or "test/app:v1"], "Layers": paths}]).encode())
        add_file(t, "repositories", json.dumps({"test/app": {"v1": "%064x" % len(raw)}}).encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["layout", "docker-save"])
    ap.add_argument("out")
    ap.add_argument("--evil", choices=["dotdot", "abs-symlink", "device"])
    ap.add_argument("--escape-target")
    ap.add_argument("--add-file", action="append")
    ap.add_argument("--symlink", action="append")
    ap.add_argument("--big-mb", type=int, default=0)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--forge", action="store_true")
    ap.add_argument("--user")
    ap.add_argument("--repo-tag")
    args = ap.parse_args()
    global CONFIG_USER
    CONFIG_USER = args.user
    (make_layout if args.kind == "layout" else make_docker_save)(args)


if __name__ == "__main__":
    main()
