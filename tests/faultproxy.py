"""A fault-injecting, request-counting HTTP proxy for tests against a real S3 server.

``FaultProxy(upstream)`` listens on 127.0.0.1 (an OS-chosen port) and forwards each
HTTP/1.1 request of each client connection to ``upstream`` (moto's server), one fresh
upstream connection per request. It is a real TCP proxy: clients (botocore/aiohttp)
talk to it over sockets exactly as they would to S3, so faults reach the client's
HTTP stack as they would in production.

Every request is classified as an S3 operation (``PutObject``, ``CopyObject``,
``ListObjectsV2`` ...) and counted in :attr:`FaultProxy.counts`. With ``rate > 0`` a
seeded random generator picks a fault for that share of requests, from ``faults``:

``"503"``
    ``503 SlowDown`` (S3's throttling answer), the request is not forwarded.
``"500"``
    ``500 InternalError``, not forwarded.
``"reset"``
    the connection is reset (RST) before the request is forwarded.
``"lost"``
    the request is forwarded (the server acts on it) and the connection reset before
    any response byte: the client cannot know whether it happened.
``"truncate"``
    the request is forwarded and the response sent with its full ``Content-Length``
    but only part of the body, then the connection is closed: a body cut mid-stream.
    Only responses with a body of at least 2 bytes are cut (else no fault).

:attr:`FaultProxy.injected` counts the faults injected, by kind. ``latency`` (seconds)
delays every forwarded request, as a far service's round trip would: what runs
requests one after another then shows in the wall time.
"""

from __future__ import annotations

import http.client
import random
import socket
import socketserver
import struct
import threading
import time
from collections import Counter
from urllib.parse import parse_qs, urlsplit

__all__ = ["FaultProxy", "FAULTS", "classify"]

FAULTS = ("503", "500", "reset", "lost", "truncate")

_SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
_INTERNAL = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
)


def classify(method: str, target: str, headers: dict[str, str]) -> str:
    """The S3 operation an HTTP request is (path-style addressing)."""
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True)
    path = parts.path.strip("/")
    has_key = "/" in path
    if method == "GET":
        if "list-type" in query:
            return "ListObjectsV2"
        if not has_key:
            return "ListObjects" if path else "ListBuckets"
        return "GetObject"
    if method == "HEAD":
        return "HeadObject" if has_key else "HeadBucket"
    if method == "PUT":
        if "x-amz-copy-source" in headers:
            return "UploadPartCopy" if "partNumber" in query else "CopyObject"
        if "partNumber" in query:
            return "UploadPart"
        return "PutObject" if has_key else "CreateBucket"
    if method == "POST":
        if "delete" in query:
            return "DeleteObjects"
        if "uploads" in query:
            return "CreateMultipartUpload"
        if "uploadId" in query:
            return "CompleteMultipartUpload"
    if method == "DELETE":
        return "DeleteObject" if has_key else "DeleteBucket"
    return f"{method} {path}"


class FaultProxy:
    """See the module docstring. Use as a context manager; :attr:`endpoint` is its URL."""

    def __init__(
        self,
        upstream: str,
        *,
        rate: float = 0.0,
        faults: tuple[str, ...] = FAULTS,
        seed: int = 0,
        latency: float = 0.0,
    ) -> None:
        up = urlsplit(upstream)
        self.latency = latency
        self.upstream = (up.hostname or "127.0.0.1", up.port or 80)
        self.rate = rate
        self.faults = tuple(faults)
        unknown = set(self.faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}")
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()
        #: Response body bytes sent to clients, by S3 operation.
        self.body_bytes: Counter[str] = Counter()
        #: ``(start, end, operation, request target)`` of each forwarded request, in
        #: ``time.monotonic()`` seconds: which requests were in flight together.
        self.spans: list[tuple[float, float, str, str]] = []
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.connection, self.rfile)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        host, port = self._server.server_address[:2]
        self.endpoint = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def reset_counts(self) -> None:
        with self._lock:
            self.counts.clear()
            self.injected.clear()
            self.body_bytes.clear()
            self.spans.clear()

    @property
    def total(self) -> int:
        """Requests received (faulted or not)."""
        return sum(self.counts.values())

    # ------------------------------------------------------------------ serving
    def _pick(self, op: str) -> str | None:
        with self._lock:
            self.counts[op] += 1
            if self.rate and self._random.random() < self.rate:
                return self._random.choice(self.faults)
        return None

    def _record(self, fault: str) -> None:
        with self._lock:
            self.injected[fault] += 1

    def _serve(self, conn: socket.socket, rfile: object) -> None:
        while True:
            request = _read_request(rfile, conn)
            if request is None:
                return
            method, target, headers, body = request
            op = classify(method, target, {k.lower(): v for k, v in headers.items()})
            fault = self._pick(op)
            if fault == "truncate" and method == "HEAD":
                fault = None  # no body to cut
            if fault in ("503", "500", "reset"):
                self._record(fault)
            if fault in ("503", "500"):
                body = _SLOWDOWN if fault == "503" else _INTERNAL
                reason = "Slow Down" if fault == "503" else "Internal Server Error"
                head = _head_bytes(
                    int(fault), reason, {"Content-Type": "application/xml"}, len(body)
                )
                conn.sendall(head if method == "HEAD" else head + body)
                continue
            if fault == "reset":
                _reset(conn)
                return
            start = time.monotonic()
            if self.latency:
                time.sleep(self.latency)  # a round trip to a far service
            status, reason, out_headers, payload = self._forward(method, target, headers, body)
            with self._lock:
                self.spans.append((start, time.monotonic(), op, target))
            if fault == "lost":
                self._record(fault)
                _reset(conn)
                return
            if fault == "truncate" and len(payload) >= 2:
                self._record(fault)
                cut = len(payload) // 2
                head = _head_bytes(status, reason, out_headers, len(payload))
                conn.sendall(head + payload[:cut])
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
                return
            if method == "HEAD":
                conn.sendall(_head_bytes(status, reason, out_headers, None))
            else:
                with self._lock:
                    self.body_bytes[op] += len(payload)
                conn.sendall(_head_bytes(status, reason, out_headers, len(payload)) + payload)

    def _forward(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, str, dict[str, str], bytes]:
        upstream = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            upstream.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers.items():
                upstream.putheader(name, value)
            upstream.endheaders(body if body else None)
            response = upstream.getresponse()
            payload = response.read()
            out = {
                k: v
                for k, v in response.getheaders()
                if k.lower() not in ("transfer-encoding", "connection", "content-length")
            }
            if method == "HEAD":
                length = response.getheader("Content-Length")
                if length is not None:
                    out["Content-Length"] = length
            return response.status, response.reason, out, payload
        finally:
            upstream.close()


def _read_request(
    rfile: object, conn: socket.socket
) -> tuple[str, str, dict[str, str], bytes] | None:
    try:
        line = rfile.readline(65537)  # type: ignore[attr-defined]
    except OSError:
        return None
    if not line or not line.strip():
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        raw = rfile.readline(65537)  # type: ignore[attr-defined]
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip()] = value.strip()
    lower = {k.lower(): v for k, v in headers.items()}
    if lower.get("expect", "").lower() == "100-continue":
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    if lower.get("transfer-encoding", "").lower() == "chunked":
        body = _read_chunked(rfile)
        headers = {k: v for k, v in headers.items() if k.lower() != "transfer-encoding"}
        headers["Content-Length"] = str(len(body))
    else:
        body = rfile.read(int(lower.get("content-length", "0") or 0))  # type: ignore[attr-defined]
    headers = {k: v for k, v in headers.items() if k.lower() not in ("connection", "expect")}
    return method, target, headers, body


def _read_chunked(rfile: object) -> bytes:
    out = bytearray()
    while True:
        size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)  # type: ignore[attr-defined]
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):  # type: ignore[attr-defined]
                pass
            return bytes(out)
        out += rfile.read(size)  # type: ignore[attr-defined]
        rfile.readline()  # type: ignore[attr-defined]


def _head_bytes(status: int, reason: str, headers: dict[str, str], length: int | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "content-length"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    elif "Content-Length" in headers:
        lines.append(f"Content-Length: {headers['Content-Length']}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _send(
    conn: socket.socket, status: int, reason: str, headers: dict[str, str], body: bytes
) -> None:
    conn.sendall(_head_bytes(status, reason, headers, len(body)) + body)


def _reset(conn: socket.socket) -> None:
    """Close with RST (SO_LINGER 0): the peer sees 'connection reset by peer'."""
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        conn.close()
