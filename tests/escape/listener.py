#!/usr/bin/python3
"""listener.py — host-side network canary for the escape tests.

Listens on one port number for TCP and UDP on every host address (0.0.0.0 and [::], so host
loopback and the LAN addresses alike), on an abstract unix socket and on a pathname unix
socket; logs every connection or datagram it sees to DIR/log (one line each) and answers
UDP with an echo. When everything is bound it writes DIR/ready:
    port=PORT abstract=NAME path=PATH
An escape test asserts DIR/log stays empty. Stops on SIGTERM/SIGINT.
"""
import argparse
import os
import secrets
import selectors
import signal
import socket
import sys


def bind_inet(port):
    """Binds TCP+UDP on 0.0.0.0 and [::] (v6only) to one port; port 0 picks a free one."""
    socks = []
    tcp4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp4.bind(("0.0.0.0", port))
    port = tcp4.getsockname()[1]
    socks.append(tcp4)
    tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    tcp6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    tcp6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp6.bind(("::", port))
    socks.append(tcp6)
    for s in (tcp4, tcp6):
        s.listen(64)
    udp4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp4.bind(("0.0.0.0", port))
    udp6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    udp6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    udp6.bind(("::", port))
    socks += [udp4, udp6]
    return port, socks


def bind_all():
    for _ in range(20):
        try:
            return bind_inet(0)
        except OSError:
            continue  # the v6 or udp side of the port was taken: pick another
    sys.exit("listener: no free port")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    log = open(os.path.join(args.dir, "log"), "a", buffering=1)
    port, socks = bind_all()
    name = "pdtest-canary-" + secrets.token_hex(6)
    abst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abst.bind("\0" + name)
    abst.listen(16)
    path = os.path.join(args.dir, "canary.sock")
    unx = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unx.bind(path)
    os.chmod(path, 0o777)
    unx.listen(16)
    socks += [abst, unx]

    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(os.path.join(args.dir, "ready.tmp"), "w") as f:
        f.write(f"port={port} abstract={name} path={path}\n")
    os.rename(os.path.join(args.dir, "ready.tmp"), os.path.join(args.dir, "ready"))
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            if s.type == socket.SOCK_STREAM:
                conn, peer = s.accept()
                log.write(f"accept {s.family.name} {s.getsockname()!r} from {peer!r}\n")
                conn.close()
            else:
                data, peer = s.recvfrom(4096)
                log.write(f"datagram {s.family.name} {s.getsockname()!r} from {peer!r}: {data[:64]!r}\n")
                if peer:
                    s.sendto(data, peer)


if __name__ == "__main__":
    main()
