#!/usr/bin/env python3
"""A WebDAV-style HTTP object store on loopback that serves a real logdir beside hostile
objects, for scripts/ci/load-serve.py (issue #38: one request must never crash, exhaust or
outlive the server, object stores included).

    scripts/ci/hostile-store.py PORTFILE --map logs/plugins/profile/run/h.xplane.pb=FILE ...
                             [--hostile] [--seconds 600]

Answers HEAD, ranged GET (206, ETag, Last-Modified) and PROPFIND (Depth: 1 multistatus)
for the mapped files and the directories above them. With --hostile it also lists, under
logs/plugins/profile/, runs whose single object misbehaves the way finding 5 found:

    hostile_lying     GET ignores Range: 200 with Content-Length 64 GiB, then zeros
    hostile_oversize  206 claiming 64 GiB for a small range, then zeros
    hostile_endless   200 without Content-Length, zeros until the connection closes
    hostile_stall     headers, then nothing for as long as the client waits

Every endless body stops after 8 GiB or when the client hangs up, and the whole server
exits by itself after --seconds. Binds 127.0.0.1 only; writes its port to PORTFILE.
Counts bytes sent per object in PORTFILE + ".stats.json" when it exits.
"""

import argparse
import email.utils
import hashlib
import http.server
import json
import os
import socketserver
import sys
import threading
import time
from urllib.parse import unquote

HOSTILE = ["hostile_lying", "hostile_oversize", "hostile_endless", "hostile_stall"]
ENDLESS_CAP = 8 << 30
CHUNK = b"\0" * (1 << 20)


def build_tree(mappings, hostile):
    """`{virtual path: real file or hostile kind}` and the set of virtual directories."""
    files = {}
    for m in mappings:
        virtual, _, real = m.partition("=")
        files[virtual.strip("/")] = real
    if hostile:
        for kind in HOSTILE:
            files[f"logs/plugins/profile/{kind}/host0.xplane.pb"] = "@" + kind
    dirs = {""}
    for path in files:
        parts = path.split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    return files, dirs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("portfile")
    ap.add_argument("--map", action="append", default=[], help="VIRTUAL=REAL")
    ap.add_argument("--hostile", action="store_true")
    ap.add_argument("--seconds", type=float, default=600)
    args = ap.parse_args()
    files, dirs = build_tree(args.map, args.hostile)
    sent = {}
    lock = threading.Lock()
    started = time.time()

    def count(path, n):
        with lock:
            sent[path] = sent.get(path, 0) + n

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _path(self):
            return unquote(self.path.split("?", 1)[0]).strip("/")

        def _meta(self, real):
            st = os.stat(real)
            etag = '"%s"' % hashlib.sha1(f"{real}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
            return st.st_size, etag, email.utils.formatdate(st.st_mtime, usegmt=True)

        def _endless(self, path, limit=ENDLESS_CAP):
            n = 0
            try:
                while n < limit and time.time() - started < args.seconds:
                    self.wfile.write(CHUNK)
                    n += len(CHUNK)
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass
            count(path, n)
            self.close_connection = True

        def _hostile(self, path, kind):
            if kind == "hostile_lying":
                self.send_response(200)
                self.send_header("Content-Length", str(64 << 30))
                self.end_headers()
                self._endless(path)
            elif kind == "hostile_oversize":
                self.send_response(206)
                self.send_header("Content-Range", "bytes 0-999/1000")
                self.send_header("Content-Length", str(64 << 30))
                self.end_headers()
                self._endless(path)
            elif kind == "hostile_endless":
                self.send_response(200)
                self.send_header("Connection", "close")
                self.end_headers()
                self._endless(path)
            else:  # hostile_stall: headers, then silence until the client gives up
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.flush()
                while time.time() - started < args.seconds:
                    time.sleep(0.5)
                    try:
                        self.connection.settimeout(0.01)
                        if self.connection.recv(1) == b"":
                            break
                    except (TimeoutError, BlockingIOError, OSError) as e:
                        if not isinstance(e, (TimeoutError, BlockingIOError)):
                            break
                self.close_connection = True

        def do_HEAD(self):
            self._get(head=True)

        def do_GET(self):
            self._get(head=False)

        def _get(self, head):
            path = self._path()
            real = files.get(path)
            if real is None:
                self.send_error(404)
                return
            if real.startswith("@"):
                if head:
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.send_header("ETag", '"%s"' % real[1:])
                    self.send_header("Last-Modified", email.utils.formatdate(started, usegmt=True))
                    self.end_headers()
                else:
                    self._hostile(path, real[1:])
                return
            size, etag, modified = self._meta(real)
            start, end = 0, size - 1
            spec = self.headers.get("Range", "")
            if spec.startswith("bytes="):
                first, _, last = spec[6:].partition("-")
                if first == "":
                    start = max(0, size - int(last))
                else:
                    start, end = int(first), min(int(last or end), end)
            length = max(0, end - start + 1)
            self.send_response(206 if spec else 200)
            self.send_header("Content-Length", str(length))
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", modified)
            self.send_header("Accept-Ranges", "bytes")
            if spec:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
            self.end_headers()
            if head:
                return
            with open(real, "rb") as f:
                f.seek(start)
                left = length
                try:
                    while left > 0:
                        block = f.read(min(left, 1 << 20))
                        if not block:
                            break
                        self.wfile.write(block)
                        left -= len(block)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
            count(path, length - left)

        def do_PROPFIND(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(min(length, 1 << 16))
            path = self._path()
            if path not in dirs:
                self.send_error(404)
                return
            prefix = path + "/" if path else ""
            children = set()
            for p in list(files) + list(dirs):
                if p.startswith(prefix) and p != path:
                    rest = p[len(prefix):]
                    children.add(rest.split("/")[0] + ("/" if "/" in rest or p in dirs else ""))
            entries = [self._entry("/" + prefix, None)]
            for child in sorted(children):
                entries.append(self._entry("/" + prefix + child, files.get(prefix + child.rstrip("/"))))
            body = ('<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:">'
                    + "".join(entries) + "</D:multistatus>").encode()
            self.send_response(207)
            self.send_header("Content-Type", 'application/xml; charset="utf-8"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _entry(self, href, real):
            modified = email.utils.formatdate(started, usegmt=True)
            if href.endswith("/") or real is None:
                prop = "<D:resourcetype><D:collection/></D:resourcetype>"
            elif real.startswith("@"):
                prop = '<D:resourcetype/><D:getcontentlength>1000</D:getcontentlength><D:getetag>"%s"</D:getetag>' % real[1:]
            else:
                size, etag, modified = self._meta(real)
                prop = "<D:resourcetype/><D:getcontentlength>%d</D:getcontentlength><D:getetag>%s</D:getetag>" % (size, etag)
            return ("<D:response><D:href>%s</D:href><D:propstat><D:prop>%s<D:getlastmodified>%s</D:getlastmodified>"
                    "</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>") % (href, prop, modified)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    with open(args.portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.portfile + ".tmp", args.portfile)
    threading.Timer(args.seconds, server.shutdown).start()
    try:
        server.serve_forever()
    finally:
        with open(args.portfile + ".stats.json", "w") as f:
            json.dump(sent, f)


if __name__ == "__main__":
    sys.exit(main())
