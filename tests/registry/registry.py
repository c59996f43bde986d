#!/usr/bin/env python3
"""tests/registry/registry.py — a small OCI distribution registry for tests, on loopback.

  registry.py LAYOUT_DIR PORTFILE [--auth] [--corrupt] [--log FILE]

Serves the blobs of an OCI layout (tests/registry/mkimage.py) under any repository name:
  GET /v2/                                  200 (401 with --auth and no token)
  GET /v2/REPO/manifests/TAG|DIGEST         TAG "v1" = the layout's index (a manifest list),
                                            "single" = the amd64 manifest itself
  GET /v2/REPO/blobs/DIGEST                 the blob
  GET /token?service=…&scope=…              {"token": …} (with --auth)
With --auth every /v2/ request needs "Authorization: Bearer TOKEN", else 401 with
"WWW-Authenticate: Bearer realm=…/token,service=test-registry,scope=repository:REPO:pull".
With --corrupt, layer blobs are served with one byte changed (digest mismatch).
With --tls CERT KEY, it speaks HTTPS (PEM files).
With --redirect, blobs answer 307 to /direct/DIGEST (which never asks for a token).
Writes the port it listens on to PORTFILE; logs one line per request to --log.
"""
import argparse, json, os, secrets, ssl, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
TOKEN = secrets.token_hex(16)


def blob_path(digest):
    if not digest.startswith("sha256:") or len(digest) != 71 or any(c not in "0123456789abcdef" for c in digest[7:]):
        return None
    p = os.path.join(ARGS.layout, "blobs", "sha256", digest[7:])
    return p if os.path.isfile(p) else None


def media_type(data):
    try:
        return json.loads(data).get("mediaType", "application/vnd.oci.image.manifest.v1+json")
    except ValueError:
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        if ARGS.log:
            with open(ARGS.log, "a") as f:
                f.write("%s %s auth=%s\n" % (self.command, self.path, "yes" if self.headers.get("Authorization") else "no"))

    def send(self, code, body=b"", ctype="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized(self, repo):
        if not ARGS.auth:
            return True
        if self.headers.get("Authorization") == "Bearer " + TOKEN:
            return True
        host = "127.0.0.1:%d" % self.server.server_address[1]
        scope = ",scope=\"repository:%s:pull\"" % repo if repo else ""
        self.send(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                  extra=[("WWW-Authenticate", 'Bearer realm="http://%s/token",service="test-registry"%s' % (host, scope))])
        return False

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/token":
            return self.send(200, json.dumps({"token": TOKEN, "expires_in": 300}).encode())
        if path.startswith("/direct/"):
            return self.serve_blob(path[len("/direct/"):])
        if path in ("/v2", "/v2/"):
            return self.send(200, b"{}") if self.authorized(None) else None
        if not path.startswith("/v2/"):
            return self.send(404, b"{}")
        rest = path[4:]
        for kind in ("/manifests/", "/blobs/"):
            if kind in rest:
                repo, ref = rest.rsplit(kind, 1)
                if not self.authorized(repo):
                    return
                return self.manifest(ref) if kind == "/manifests/" else self.blob(ref)
        self.send(404, b"{}")

    do_HEAD = do_GET

    def manifest(self, ref):
        digests = json.load(open(os.path.join(ARGS.layout, "digests.json")))
        d = digests["index"] if ref == "v1" else digests["amd64"] if ref == "single" else ref
        p = blob_path(d)
        if not p:
            return self.send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
        data = open(p, "rb").read()
        self.send(200, data, ctype=media_type(data) or "application/octet-stream",
                  extra=[("Docker-Content-Digest", d)])

    def blob(self, digest):
        if ARGS.redirect:
            return self.send(307, b"", extra=[("Location", "/direct/" + digest)])
        self.serve_blob(digest)

    def serve_blob(self, digest):
        p = blob_path(digest)
        if not p:
            return self.send(404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}')
        data = open(p, "rb").read()
        if ARGS.corrupt and media_type(data) is None and len(data) > 512:
            data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
        self.send(200, data, ctype="application/octet-stream")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("layout")
    ap.add_argument("portfile")
    ap.add_argument("--auth", action="store_true")
    ap.add_argument("--corrupt", action="store_true")
    ap.add_argument("--redirect", action="store_true")
    ap.add_argument("--log")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if ARGS.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*ARGS.tls)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(ARGS.portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(ARGS.portfile + ".tmp", ARGS.portfile)
    srv.serve_forever()


if __name__ == "__main__":
    main()
