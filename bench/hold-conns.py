#!/usr/bin/env python3
"""hold-conns.py HOST PORT N SECONDS: opens N TCP connections to HOST:PORT, sends each an
unfinished HTTP request (so the server keeps it open), prints "held N" once all are open,
keeps them SECONDS, then closes them. Used by bench/egress.sh inside a box; exits 1 if
fewer than N could be opened."""
import resource
import socket
import sys
import time


def main():
    host, port, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, n + 64) if hard != resource.RLIM_INFINITY else n + 64
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: %s\r\n" % host.encode())
        socks.append(s)
    print("held %d" % len(socks), flush=True)
    time.sleep(secs)
    for s in socks:
        s.close()


if __name__ == "__main__":
    sys.exit(main())
