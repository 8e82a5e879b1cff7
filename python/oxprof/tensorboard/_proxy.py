"""The WSGI route that serves oxprof's UI inside TensorBoard: requests below the tab's
prefix (`/data/plugin/oxprof/ui/...`) go to the `oxprof serve` child on 127.0.0.1, and its
answers come back through TensorBoard's own origin, which is the only one TensorBoard's pages
may frame (their CSP says `frame-src 'self'`).

It is not an open proxy: the target is always the child's loopback address, and only the
path below the prefix and the query are taken from the request. GET, HEAD and POST only;
a POST must come from TensorBoard's own origin (its `Origin`) with a body of at most
`MAX_REQUEST_BODY` bytes; the `Host` must be one TensorBoard answers to (loopback names, the
`--host` it was given; any with `--bind_all`), against DNS rebinding. Answers stream through
(a trace can be large) with a timeout on each read.
"""

from __future__ import annotations

import gzip
import http.client
import ipaddress
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import quote

from ._child import ChildServer, ServerError

# The largest request body forwarded (the UI's POSTs carry a few parameters at most).
MAX_REQUEST_BODY = 1 << 20
# The largest HTML page rewritten (the UI's index.html is under 1 KiB).
MAX_PAGE_BYTES = 1 << 20
# Connecting to the child on loopback; then each read of its answer (the first analysis of a
# large profile may take minutes before its first byte).
CONNECT_SECONDS = 10.0
READ_SECONDS = 600.0
CHUNK = 1 << 16

_REQUEST_HEADERS = ("Accept", "Accept-Encoding", "Content-Type", "X-Oxprof-Token", "Sec-Fetch-Site")
_RESPONSE_HEADERS = (
    "Content-Type",
    "Content-Encoding",
    "Content-Length",
    "Content-Disposition",
    "Content-Security-Policy",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "Cache-Control",
    "Vary",
)

StartResponse = Callable[..., object]


def _host_name(host_header: str) -> str:
    host = host_header.strip()
    if host.startswith("["):
        return host[1 : host.find("]")].lower() if "]" in host else host.lower()
    return host.rsplit(":", 1)[0].lower().rstrip(".") if host.count(":") == 1 else host.lower().rstrip(".")


def is_loopback_name(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Proxy:
    """WSGI app forwarding `prefix/...` to the child's `/...`."""

    def __init__(self, child: ChildServer, prefix: str, hosts: Sequence[str] = (), any_host: bool = False) -> None:
        self._child = child
        self._prefix = prefix.rstrip("/")
        self._hosts = {h.lower().rstrip(".") for h in hosts if h}
        self._any_host = any_host

    def host_allowed(self, host_header: str) -> bool:
        name = _host_name(host_header)
        return bool(name) and (self._any_host or is_loopback_name(name) or name in self._hosts)

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET").upper()
        host = environ.get("HTTP_HOST", "")
        if method not in ("GET", "HEAD", "POST"):
            return _text(start_response, 405, f"{method} is not forwarded to oxprof (GET, HEAD and POST are)")
        if not self.host_allowed(host):
            return _text(
                start_response,
                403,
                f"Host {host!r} is not allowed: the oxprof tab answers loopback names and TensorBoard's --host "
                "(start TensorBoard with --host NAME or --bind_all to serve other names)",
            )
        script = environ.get("SCRIPT_NAME", "")
        path = environ.get("PATH_INFO", "")
        if not path.startswith(self._prefix):
            return _text(start_response, 404, "not below the oxprof tab's prefix")
        rest = path[len(self._prefix) :]
        if rest == "":
            # The UI's relative links need the trailing slash.
            location = quote(script + self._prefix + "/", safe="/")
            query = environ.get("QUERY_STRING", "")
            start_response("302 Found", [("Location", location + ("?" + query if query else "")), *_SECURITY])
            return [b""]
        if not rest.startswith("/") or any(ord(c) < 0x21 or ord(c) == 0x7F for c in rest):
            return _text(start_response, 400, "bad path")
        origin = environ.get("HTTP_ORIGIN")
        scheme = environ.get("wsgi.url_scheme", "http")
        if method == "POST" and origin is not None and origin.lower() != f"{scheme}://{host}".lower():
            return _text(start_response, 403, f"cross-origin request from {origin!r} refused")
        body = b""
        if method == "POST":
            length = environ.get("CONTENT_LENGTH") or "0"
            if not length.isdigit():
                return _text(start_response, 411, "a POST needs a Content-Length")
            if int(length) > MAX_REQUEST_BODY:
                return _text(start_response, 413, f"request body over {MAX_REQUEST_BODY} bytes")
            body = environ["wsgi.input"].read(int(length)) if int(length) else b""
        try:
            address = self._child.address()
        except ServerError as e:
            return _text(start_response, 502, f"oxprof's server is not running: {e}")
        target = quote(rest, safe="/:@!$&'()*+,;=-._~%")
        query = environ.get("QUERY_STRING", "")
        if query:
            target += "?" + query
        headers = {}
        for name in _REQUEST_HEADERS:
            value = environ.get("HTTP_" + name.upper().replace("-", "_")) or (
                environ.get("CONTENT_TYPE") if name == "Content-Type" else None
            )
            if value:
                headers[name] = value
        if "Accept-Encoding" in headers:
            # gzip or nothing: the one encoding the UI's page can be rewritten from.
            gzip_ok = "gzip" in headers["Accept-Encoding"].lower()
            headers["Accept-Encoding"] = "gzip" if gzip_ok else "identity"
        if origin is not None:
            # Checked above (for POST): the child sees its own origin, as from its own page.
            headers["Origin"] = f"http://{address[0]}:{address[1]}"
        try:
            connection = http.client.HTTPConnection(address[0], address[1], timeout=CONNECT_SECONDS)
            connection.connect()
            if connection.sock is not None:
                connection.sock.settimeout(READ_SECONDS)
            connection.request(method, target, body=body if method == "POST" else None, headers=headers)
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as e:
            return _text(start_response, 502, f"oxprof's server did not answer: {e}")
        kept = [(k, v) for k, v in response.getheaders() if k.title() in _RESPONSE_HEADERS]
        status = f"{response.status} {response.reason}"
        content_type = response.getheader("Content-Type", "")
        if content_type.startswith("text/html") and method != "HEAD":
            # The UI's page: its scripts are at /assets/... from the child's root.
            page = response.read(MAX_PAGE_BYTES + 1)
            connection.close()
            if len(page) > MAX_PAGE_BYTES:
                return _text(start_response, 502, f"oxprof's page is over {MAX_PAGE_BYTES} bytes")
            if (response.getheader("Content-Encoding") or "").lower() == "gzip":
                page = gzip.decompress(page)
            external = (script + self._prefix).encode()
            page = page.replace(b'="/assets/', b'="' + external + b"/assets/")
            kept = [(k, v) for k, v in kept if k.title() not in ("Content-Length", "Content-Encoding")]
            start_response(status, [*kept, ("Content-Length", str(len(page)))])
            return [page]
        start_response(status, kept)
        return _stream(connection, response)


def _stream(connection: http.client.HTTPConnection, response: http.client.HTTPResponse) -> Iterator[bytes]:
    try:
        while True:
            chunk = response.read(CHUNK)
            if not chunk:
                break
            yield chunk
    finally:
        connection.close()


_SECURITY: List[Tuple[str, str]] = [
    ("X-Content-Type-Options", "nosniff"),
    ("Cache-Control", "no-store"),
]


def _text(start_response: StartResponse, status: int, message: str, extra: Optional[list] = None) -> List[bytes]:
    reasons = {302: "Found", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed"}
    reasons.update({411: "Length Required", 413: "Content Too Large", 502: "Bad Gateway"})
    body = (message + "\n").encode("utf-8")
    headers = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))), *_SECURITY]
    start_response(f"{status} {reasons.get(status, '')}".strip(), headers + (extra or []))
    return [body]
