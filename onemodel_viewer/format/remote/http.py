"""HTTP(S) range requests with every check a hostile server calls for (standard library only).

:class:`HttpSource` answers ``first(n)`` (the first request: up to ``n`` bytes, plus the file's size,
ETag and Last-Modified from ``Content-Range`` and the headers) and ``fetch(start, end)``. Each answer
is checked:

* ``206`` with ``Content-Range: bytes start-end/size`` exactly as asked, and a body of exactly that
  length; a ``200`` (the server ignored ``Range``) is :class:`RangeIgnored` (an Io problem unless the
  caller downloads the file: ``--download``);
* the size, ETag and Last-Modified the same as at the first answer, else Io "the file changed on the
  server";
* redirects (at most :data:`MAX_REDIRECTS`) only to http or https;
* connect and read timeouts; idempotent range requests retried (at most :data:`RETRIES` times, with
  backoff) on 5xx answers, resets and truncated bodies.

Connections are kept alive, one per thread and host. Messages never show credentials
(:func:`.urls.redact`). The client is a small HTTP/1.1 one on a socket (:class:`_Conn`): the standard
library's ``http.client`` brings ``email``, ``ssl`` and IDNA codecs into every process (~30 ms of a
``--check``), and only HTTPS needs ``ssl``.
"""

from __future__ import annotations

import re
import socket
import threading
import time
import urllib.parse

from ..errors import FormatError, Kind
from .urls import redact

MAX_REDIRECTS = 5
RETRIES = 3
BACKOFF = 0.1
"""Seconds before the first retry; doubled each time."""
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0
CHANGED = "the file changed on the server since it was opened; reload it"
_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
_UNSATISFIED = re.compile(r"^bytes \*/(\d+)$")
_USER_AGENT = "onemodel-view"


def _ascii(target: str) -> str:
    """The request target as ASCII (anything else percent-encoded, as a browser sends it)."""
    try:
        target.encode("ascii")
        return target
    except UnicodeEncodeError:
        return urllib.parse.quote(target, safe="/?&=%:@!$'()*+,;~-._")


class RangeIgnored(FormatError):
    """The server answered a range request with the whole file (``200``)."""


class _Retry(Exception):
    """A transient failure: try again (the message says what)."""


class _Broken(Exception):
    """The connection broke or the server spoke something other than HTTP/1.x."""


class _Incomplete(Exception):
    def __init__(self, partial: bytes) -> None:
        super().__init__(f"{len(partial)} bytes")
        self.partial = partial


def _idle_loss(e: BaseException) -> bool:
    """``e`` is what a request on a connection the server closed while idle meets: a reset, a broken pipe,
    or the end of the stream where the status line should be."""
    return isinstance(e, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)) or \
        (isinstance(e, _Broken) and str(e) == "the server closed the connection")


class _Conn:
    """One HTTP/1.1 connection (plain or TLS), kept alive between requests while the server allows."""

    def __init__(self, scheme: str, host: str, port: int | None, connect_timeout: float, read_timeout: float) -> None:
        tls = scheme == "https"
        port = port or (443 if tls else 80)
        self.host = host if port == (443 if tls else 80) else f"{host}:{port}"
        if ":" in host and not host.startswith("["):  # an IPv6 literal
            self.host = f"[{host}]" + ("" if port == (443 if tls else 80) else f":{port}")
        # an ASCII name as bytes: getaddrinfo would encode a str with the IDNA codec (its import: ~5 ms)
        sock = socket.create_connection((host.encode() if host.isascii() else host, port), timeout=connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls:
                import ssl

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
            sock.settimeout(read_timeout)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.rfile = sock.makefile("rb")
        self.reusable = True
        self.answered = 0
        """Answers read on this connection: a kept-alive one may have been closed by the server meanwhile."""

    def request(self, target: str, headers: dict) -> "_Response":
        lines = [f"GET {target} HTTP/1.1", f"Host: {self.host}", *(f"{k}: {v}" for k, v in headers.items())]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status_line = self.rfile.readline(65537)
        if not status_line:
            raise _Broken("the server closed the connection")
        m = re.match(rb"HTTP/1\.[01] (\d{3})(?: ([^\r\n]*))?\r?\n$", status_line)
        if m is None:
            raise _Broken("not an HTTP/1.x answer")
        hdrs: dict[str, str] = {}
        for _ in range(200):
            line = self.rfile.readline(65537)
            if line in (b"\r\n", b"\n"):
                break
            if not line or b":" not in line:
                raise _Broken("bad header line")
            k, _sep, v = line.decode("latin-1").partition(":")
            hdrs[k.strip().lower()] = v.strip()
        else:
            raise _Broken("too many header lines")
        if hdrs.get("connection", "").lower() == "close":
            self.reusable = False
        self.answered += 1
        return _Response(self, int(m.group(1)), (m.group(2) or b"").decode("latin-1"), hdrs)

    def close(self) -> None:
        self.reusable = False
        try:
            self.rfile.close()
            self.sock.close()
        except OSError:
            pass


class _Response:
    """What :meth:`_Conn.request` returns: status, reason, headers, and the body read by Content-Length."""

    def __init__(self, conn: _Conn, status: int, reason: str, headers: dict) -> None:
        self.conn, self.status, self.reason, self.headers = conn, status, reason, headers
        cl = headers.get("content-length", "")
        self.left = int(cl) if cl.isdigit() else None
        if self.left is None or "chunked" in headers.get("transfer-encoding", "").lower():
            self.left = None
            conn.reusable = False  # the body's end is the connection's

    def getheader(self, name: str, default=None):
        return self.headers.get(name.lower(), default)

    def read(self, amt: int | None = None) -> bytes:
        if self.left is None:
            return self.conn.rfile.read(amt) if amt is not None else self.conn.rfile.read()
        n = self.left if amt is None else min(amt, self.left)
        data = self.conn.rfile.read(n)
        self.left -= len(data)
        if len(data) < n:
            self.conn.reusable = False
            raise _Incomplete(data)
        return data

    def readinto(self, b: memoryview) -> int:
        n = self.conn.rfile.readinto(b[: self.left] if self.left is not None else b)
        if self.left is not None:
            self.left -= n
        return n

    def drain(self) -> None:
        """Done with an answer whose body is not wanted: read a small one (the connection stays), else drop it."""
        if self.left is not None and self.left <= 65536:
            try:
                self.read()
                return
            except (_Incomplete, OSError):
                pass
        self.conn.close()  # not left open with a body unread: the server would go on sending it

    def close(self) -> None:
        self.conn.close()


class HttpSource:
    """One file on an HTTP(S) server, read by ranges. Thread-safe."""

    def __init__(self, url: str, *, connect_timeout: float = CONNECT_TIMEOUT, read_timeout: float = READ_TIMEOUT,
                 retries: int = RETRIES, backoff: float = BACKOFF, headers: dict | None = None) -> None:
        self.url = url
        self.shown = redact(url)
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.retries = retries
        self.backoff = backoff
        self.headers = dict(headers or {})
        self.size: int | None = None
        self.etag: str | None = None
        self.modified: str | None = None
        self.requests = 0
        self.received = 0
        self.cancelled = threading.Event()
        self._local = threading.local()
        self._lock = threading.Lock()

    # -- the public side
    def first(self, n: int) -> bytes:
        """The first ``min(n, size)`` bytes; sets ``size``, ``etag`` and ``modified``."""
        return self._request(0, n, first=True)

    def fetch(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` (within the size ``first`` learnt), checked."""
        if self.size is None:
            raise RuntimeError("first() comes first")
        if start < 0 or end > self.size or start >= end:
            raise FormatError(Kind.MALFORMED, "file", start, f"range {start}..{end} outside {self.size} bytes")
        return self._request(start, end - start)

    def fetch_into(self, start: int, end: int, into: memoryview) -> None:
        """:meth:`fetch`, read straight into ``into`` (``end - start`` bytes long)."""
        if self.size is None or start < 0 or end > self.size or start >= end or len(into) != end - start:
            raise FormatError(Kind.MALFORMED, "file", start, f"range {start}..{end} outside {self.size} bytes")
        self._request(start, end - start, into=into)

    def close(self) -> None:
        self.cancelled.set()
        conns = getattr(self._local, "conns", {})
        for c in conns.values():
            c.close()
        conns.clear()

    # -- one request, retried
    def _request(self, start: int, length: int, first: bool = False, into: memoryview | None = None) -> bytes:
        delay = self.backoff
        last = ""
        for attempt in range(self.retries + 1):
            if self.cancelled.is_set():
                raise FormatError(Kind.IO, "file", None, f"{self.shown}: cancelled")
            try:
                return self._once(start, length, first, into)
            except _Retry as e:
                last = str(e)
                self._drop_connections()
                if attempt < self.retries:
                    time.sleep(delay)
                    delay *= 2
        raise FormatError(Kind.IO, "file", None, f"{self.shown}: {last} (after {self.retries + 1} attempts)")

    def _once(self, start: int, length: int, first: bool, into: memoryview | None = None) -> bytes:
        url = self.url
        for _hop in range(MAX_REDIRECTS + 1):
            parts = urllib.parse.urlsplit(url)
            conn = self._connection(parts)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            headers = {"Range": f"bytes={start}-{start + length - 1}", "User-Agent": _USER_AGENT,
                       "Accept-Encoding": "identity", **self.headers}
            if parts.username or parts.password:
                import base64

                token = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
                headers["Authorization"] = "Basic " + base64.b64encode(token.encode()).decode()
            resp = self._send(conn, parts, _ascii(target), headers)
            status = resp.status
            if status in (301, 302, 303, 307, 308):
                where = resp.getheader("Location") or ""
                resp.drain()
                url = urllib.parse.urljoin(url, where)
                sch = urllib.parse.urlsplit(url).scheme.lower()
                if sch not in ("http", "https"):
                    raise FormatError(Kind.IO, "file", None, f"{self.shown}: redirected to a {sch or 'relative'}:// URL; "
                                      "only http and https redirects are followed")
                continue
            return self._answer(resp, status, start, length, first, into)
        raise FormatError(Kind.IO, "file", None, f"{self.shown}: more than {MAX_REDIRECTS} redirects")

    def _send(self, conn: _Conn, parts, target: str, headers: dict):
        """The answer's status and headers. A kept-alive connection the server closed while it was idle fails
        before any answer: the request is sent again at once on a new connection, not counted as a retry (the
        server never saw it; a real server drops idle connections after seconds)."""
        for fresh in (False, True):
            with self._lock:
                self.requests += 1
            reused = conn.answered > 0
            try:
                return conn.request(target, headers)
            except (socket.timeout, TimeoutError) as e:
                raise _Retry("timed out") from e
            except (ConnectionError, _Broken, OSError) as e:
                if fresh or not reused or not _idle_loss(e):
                    raise _Retry(f"connection failed: {e}") from e
            conn.close()
            conn = self._connection(parts)
        raise AssertionError("unreachable")  # pragma: no cover

    def _answer(self, resp, status: int, start: int, length: int, first: bool, into: memoryview | None = None) -> bytes:
        if status >= 500:
            resp.drain()
            raise _Retry(f"server error {status}")
        if status == 416 and first:
            resp.drain()
            m = _UNSATISFIED.match(resp.getheader("Content-Range") or "")
            if m and int(m.group(1)) == 0:  # an empty file: no range of it exists
                self._learn(0, resp)
                return b""
            raise FormatError(Kind.IO, "file", None, f"{self.shown}: range not satisfiable (416)")
        if status == 200:
            resp.close()
            self._drop_connections()
            raise RangeIgnored(Kind.IO, "file", None, f"{self.shown}: the server ignores range requests (it sent the whole "
                               "file); give --download to fetch it once to a temporary file")
        if status != 206:
            resp.drain()
            what = {401: "unauthorized", 403: "forbidden", 404: "not found", 410: "gone", 416: "range not satisfiable"}
            raise FormatError(Kind.IO, "file", None, f"{self.shown}: cannot open: HTTP {status} {what.get(status, resp.reason or '')}".rstrip())
        m = _RANGE.match(resp.getheader("Content-Range") or "")
        if m is None or m.group(3) == "*":
            resp.drain()
            raise FormatError(Kind.IO, "file", None, f"{self.shown}: the server sent no valid Content-Range for bytes "
                              f"{start}..{start + length}")
        lo, hi, total = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if first:
            self._learn(total, resp)
            length = min(length, total)
        else:
            self._same(total, resp)
        if lo != start or hi != start + length - 1:
            resp.drain()
            raise FormatError(Kind.IO, "file", start, f"{self.shown}: asked for bytes {start}..{start + length}, the server "
                              f"sent {lo}..{hi + 1} (wrong Content-Range)")
        declared = resp.getheader("Content-Length")
        if declared is not None and (not declared.isdigit() or int(declared) != length):
            resp.close()
            self._drop_connections()
            raise FormatError(Kind.IO, "file", start, f"{self.shown}: Content-Length {declared[:40]!r} for {length} bytes "
                              f"at {start}: {CHANGED}")
        if into is not None and declared is not None:  # the length is right: read into place
            return self._read_into(resp, start, length, into)
        try:
            body = resp.read(length + 1) if declared is None else resp.read()
        except _Incomplete as e:
            raise _Retry(f"the connection closed after {len(e.partial)} of {length} bytes") from e
        except (socket.timeout, TimeoutError) as e:
            raise _Retry("timed out reading the body") from e
        except (ConnectionError, OSError) as e:
            raise _Retry(f"connection lost: {e.__class__.__name__}") from e
        if declared is None and len(body) > length:
            resp.close()
            self._drop_connections()
        with self._lock:
            self.received += len(body)
        if len(body) != length:
            raise FormatError(Kind.IO, "file", start, f"{self.shown}: {len(body)} bytes sent for {length} asked at {start}: "
                              f"{CHANGED}")
        return body

    def _read_into(self, resp, start: int, length: int, into: memoryview) -> bytes:
        got = 0
        try:
            while got < length:
                n = resp.readinto(into[got:length])
                if not n:
                    break
                got += n
        except _Incomplete as e:
            raise _Retry(f"the connection closed after {got + len(e.partial)} of {length} bytes") from e
        except (socket.timeout, TimeoutError) as e:
            raise _Retry("timed out reading the body") from e
        except (ConnectionError, OSError) as e:
            raise _Retry(f"connection lost: {e.__class__.__name__}") from e
        with self._lock:
            self.received += got
        if got != length:
            raise _Retry(f"the connection closed after {got} of {length} bytes")
        return b""

    # -- the file's identity
    def _learn(self, total: int, resp) -> None:
        with self._lock:
            if self.size is None:
                self.size = total
                self.etag = resp.getheader("ETag")
                self.modified = resp.getheader("Last-Modified")
                return
        self._same(total, resp)

    def _same(self, total: int, resp) -> None:
        etag, modified = resp.getheader("ETag"), resp.getheader("Last-Modified")
        if total != self.size or (self.etag is not None and etag != self.etag) \
                or (self.modified is not None and modified != self.modified):
            resp.drain()
            raise FormatError(Kind.IO, "file", None, f"{self.shown}: {CHANGED}")

    # -- connections
    def _connection(self, parts) -> _Conn:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        key = (parts.scheme.lower(), parts.hostname, parts.port)
        conn = conns.get(key)
        if conn is not None and not conn.reusable:
            conn.close()
            conn = None
        if conn is None:
            try:
                conn = _Conn(parts.scheme.lower(), parts.hostname or "", parts.port, self.connect_timeout, self.read_timeout)
            except (socket.timeout, TimeoutError) as e:
                raise _Retry("connect timed out") from e
            except OSError as e:
                raise _Retry(f"cannot connect: {e.strerror or e.__class__.__name__}") from e
            conns[key] = conn
        return conn

    def _drop_connections(self) -> None:
        conns = getattr(self._local, "conns", {})
        for c in conns.values():
            c.close()
        conns.clear()
