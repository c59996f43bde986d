#!/usr/bin/env python3
"""Local upstream servers for the network tests: HTTP, HTTPS (test CA) and a raw TCP echo, all
on 127.0.0.1. Every request/connection is appended to LOGDIR/{http,https,echo}.log so tests can
assert what reached (and what never reached) an upstream. Usage: net-upstreams.py LOGDIR CERT KEY
Prints "HTTP HTTPS ECHO" ports on stdout once listening."""
import http.server, os, random, socket, socketserver, ssl, sys, threading

logdir, cert, key = sys.argv[1:4]

def log(name, line):
    with open(os.path.join(logdir, name + ".log"), "a") as f:
        f.write(line + "\n")

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    logname = "http"
    def log_message(self, *a):
        pass
    def reply(self):
        n = int(self.headers.get("Content-Length") or 0)
        body_in = self.rfile.read(n) if n else b""
        log(self.logname, "%s %s host=%s len=%d" % (self.command, self.path, self.headers.get("Host"), len(body_in)))
        if self.path.startswith("/bytes/"):  # N bytes anyone can recompute: random.Random(N)
            n = int(self.path[7:])
            body = random.Random(n).randbytes(n)
        else:
            body = ("hello from %s %s\n" % (self.logname, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_HEAD = reply

class HS(H):
    logname = "https"

class TS(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        log("echo", "connect")
        while True:
            d = self.request.recv(65536)
            if not d:
                return
            self.request.sendall(d)

class ES(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # tests open hundreds of connections at once

h = TS(("127.0.0.1", 0), H)
s = TS(("127.0.0.1", 0), HS)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
e = ES(("127.0.0.1", 0), Echo)
for srv in (h, s, e):
    threading.Thread(target=srv.serve_forever, daemon=True).start()
print(h.server_address[1], s.server_address[1], e.server_address[1], flush=True)
threading.Event().wait()
