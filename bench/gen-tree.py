#!/usr/bin/env python3
"""Writes a deterministic tree of N files totalling B bytes (bench/workspace.sh).

    gen-tree.py DIR [--files 50000] [--bytes 1073741824] [--seed 1]

Layout: dNN/sM/fIIIII.{txt,bin} (50 top directories x 10 sub-directories x 100 files for
the default 50,000). File sizes are log-normal, scaled so they sum to exactly B bytes. One
file in four is binary, the rest printable text in lines. Contents come from one seeded
16 MiB pool, each file starting with its own index so no two files are equal. Modes 0644
(every 97th file 0755), every mtime 2023-11-14T22:13:20Z. Same arguments => same bytes.
"""
import argparse
import os
import random

POOL = 16 << 20
MTIME = 1_700_000_000


def sizes(rng, n, total):
    w = [rng.lognormvariate(0.0, 1.5) for _ in range(n)]
    s = sum(w)
    out = [int(x / s * total) for x in w]
    out[-1] += total - sum(out)
    return out


def pools(seed):
    raw = random.Random(seed).randbytes(POOL)
    table = bytes((b"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789(){};=+-*/_.,"
                   b"\n" * 4)[i % 66] for i in range(256))
    return raw, raw.translate(table)


def content(i, size, raw, text):
    pool = raw if i % 4 == 0 else text
    head = b"file %d\n" % i
    off = (i * 7919 * 64) % POOL
    body = bytearray(head)
    while len(body) < size:
        chunk = pool[off:off + size - len(body)]
        body += chunk
        off = 0
    return bytes(body[:size])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--files", type=int, default=50000)
    ap.add_argument("--bytes", type=int, default=1 << 30)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    raw, text = pools(a.seed)
    for i, size in enumerate(sizes(rng, a.files, a.bytes)):
        ext = "bin" if i % 4 == 0 else "txt"
        d = os.path.join(a.dir, "d%02d" % (i // 1000), "s%d" % ((i // 100) % 10))
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "f%05d.%s" % (i, ext))
        with open(p, "wb") as f:
            f.write(content(i, size, raw, text))
        os.chmod(p, 0o755 if i % 97 == 0 else 0o644)
        os.utime(p, (MTIME, MTIME))


if __name__ == "__main__":
    main()
