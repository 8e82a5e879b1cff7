"""A web server that dies mid-response, for oxprof's "server killed mid-read" test.

    python3 scripts/ci/objstore-dying-server.py FILE PORTFILE

Serves FILE at /<its name> with HEAD and ranged GET (206, ETag), but the first GET sends
its headers and half its body, then the process exits: the client sees the connection
cut mid-transfer and every retry refused. Writes the port it listens on to PORTFILE.
"""
import http.server
import os
import sys

path, portfile = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
name = "/" + os.path.basename(path)
etag = '"%x-%x"' % (len(data), int(os.path.getmtime(path)))


class Handler(http.server.BaseHTTPRequestHandler):
    def _headers(self, status, length):
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", self.date_time_string(int(os.path.getmtime(path))))
        self.send_header("Accept-Ranges", "bytes")

    def do_HEAD(self):
        if self.path != name:
            self.send_error(404)
            return
        self._headers(200, len(data))
        self.end_headers()

    def do_GET(self):
        if self.path != name:
            self.send_error(404)
            return
        start, end = 0, len(data) - 1
        spec = self.headers.get("Range", "")
        if spec.startswith("bytes="):
            first, _, last = spec[6:].partition("-")
            start, end = int(first), min(int(last or end), end)
        body = data[start : end + 1]
        self._headers(206 if spec else 200, len(body))
        if spec:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        os._exit(0)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(portfile, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
