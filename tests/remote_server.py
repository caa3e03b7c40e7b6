"""A loopback HTTP server with Range support and fault knobs, for the remote-file tests and benchmark.

``RangeServer(root)`` serves the files under ``root`` on 127.0.0.1 (a free port), in threads.
A path may start with knobs, ``/~knob/``, several in a row (``/~redirect/~norange/valid/x.onemodel``):

=============  ================================================================================
``norange``    ignores ``Range``: 200 and the whole body
``badrange``   a ``Content-Range`` one byte off
``short``      ``Content-Length`` and body one byte shorter than asked (with the right ``Content-Range``)
``long``       one byte more than asked
``drop``       the first body of each range is cut off in the middle (the connection closed)
``dropall``    every body cut off
``etag``       the ETag changes with every request
``403``...     that status (403, 404, 416, 500) for every request
``500once``    500 for the first request of each range, then the answer
``redirect``   302 to the same path without this knob
``hangup``     each answer's connection closed by the server after it (no ``Connection: close``
               header: an idle keep-alive connection a real server drops)
``ftp``        302 to ``ftp://`` (another scheme)
=============  ================================================================================

``latency`` (seconds added to each request) and ``rate`` (bytes per second, shared by all
connections) slow the server down. ``log`` holds ``(path, range header, status, body bytes)`` per
request, appended before the first byte of its answer is sent (a client that has seen any of an
answer finds its request in the log); :meth:`stats` sums it. :meth:`reset` first waits for the
requests still being answered (a client that gave up on one, a body still going to a client that
hung up): nothing of an earlier test is logged after it. Loopback only; started and stopped by the
tests' fixtures.
"""

from __future__ import annotations

import email.utils
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:  # a client that hung up (the knobs make them)
        pass


class RangeServer:
    def __init__(self, root: str, *, latency: float = 0.0, rate: float | None = None,
                 tls: tuple[str, str] | None = None) -> None:
        self.root = os.path.abspath(root)
        self.latency = latency
        self.rate = rate
        self.control = False
        """``/_stats`` and ``/_reset`` answered (``python tests/remote_server.py``: the benchmark's server)."""
        self.log: list[tuple[str, str, int, int]] = []
        self._lock = threading.Lock()
        self._next = 0.0
        self._seen: set = set()
        self._etag = 0
        self._busy = 0
        self._idle = threading.Condition(self._lock)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                with server._lock:
                    server._busy += 1
                try:
                    server._handle(self)
                finally:
                    with server._lock:
                        server._busy -= 1
                        server._idle.notify_all()

        self.httpd = _Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.scheme = "http"
        if tls is not None:  # (certificate file, key file): an https server
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="range-server", daemon=True)

    def __enter__(self) -> "RangeServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, rel: str, knobs: str = "") -> str:
        rel = rel.replace(os.sep, "/").lstrip("/")
        return f"{self.scheme}://127.0.0.1:{self.port}/" + "".join(f"~{k}/" for k in knobs.split(",") if k) + rel

    def reset(self, wait: float = 10.0) -> None:
        """Clear the log, once the requests being answered (at most ``wait`` seconds) are done."""
        with self._lock:
            self._idle.wait_for(lambda: self._busy == 0, timeout=wait)
            self.log.clear()
            self._seen.clear()

    def stats(self) -> dict:
        with self._lock:
            return {"requests": len(self.log), "bytes": sum(n for _p, _r, _s, n in self.log)}

    # -- serving
    def _record(self, path: str, rng: str, status: int, n: int) -> None:
        with self._lock:
            self.log.append((path, rng, status, n))

    def _pace(self, n: int) -> None:
        if not self.rate:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + n / self.rate
            wait = self._next - now
        if wait > 0:
            time.sleep(wait)

    def _send_body(self, h, body: memoryview, cut: int | None = None) -> int:
        sent = 0
        step = (1 << 20) if self.rate else (64 << 10)  # paced: fewer, larger writes (each one sleeps)
        end = len(body) if cut is None else cut
        while sent < end:
            n = min(step, end - sent)
            self._pace(n)
            h.wfile.write(body[sent:sent + n])
            sent += n
        return sent

    def _handle(self, h) -> None:
        if self.latency:
            time.sleep(self.latency)
        path = h.path.split("?", 1)[0]
        if path in ("/_stats", "/_reset") and self.control:  # the benchmark's view of the log (another process)
            if path == "/_reset":
                self.reset()
            import json

            body = json.dumps(self.stats()).encode()
            h.send_response(200)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
            return
        knobs = []
        while path.startswith("/~"):
            knob, _, rest = path[2:].partition("/")
            knobs.append(knob)
            path = "/" + rest
        rng = h.headers.get("Range", "")
        first_time = (path, rng) not in self._seen
        with self._lock:
            self._seen.add((path, rng))
        if "redirect" in knobs or "ftp" in knobs:
            rest = "".join(f"~{k}/" for k in knobs if k not in ("redirect", "ftp"))
            target = (f"ftp://127.0.0.1/{rest}{path.lstrip('/')}" if "ftp" in knobs
                      else f"http://127.0.0.1:{self.port}/{rest}{path.lstrip('/')}")
            return self._status(h, path, rng, 302, {"Location": target})
        for code in (403, 404, 416, 500):
            if str(code) in knobs:
                return self._status(h, path, rng, code, {"Content-Range": "bytes */1"} if code == 416 else {})
        if "500once" in knobs and first_time:
            return self._status(h, path, rng, 500)
        full = os.path.realpath(os.path.join(self.root, path.lstrip("/")))
        if not full.startswith(self.root + os.sep) or not os.path.isfile(full):
            return self._status(h, path, rng, 404)
        st = os.stat(full)
        size = st.st_size
        etag = f'"{st.st_size:x}-{st.st_mtime_ns:x}"'
        if "etag" in knobs:
            with self._lock:
                self._etag += 1
                etag = f'"changing-{self._etag}"'
        headers = {"ETag": etag, "Last-Modified": email.utils.formatdate(st.st_mtime, usegmt=True),
                   "Accept-Ranges": "bytes"}
        m = _RANGE.match(rng)
        if "norange" in knobs or m is None:
            h.send_response(200)
            for k, v in headers.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(size))
            self._record(path, rng, 200, size)  # before any byte of the answer: a client may be done before we are
            self._end_headers(h, knobs)
            self._send_body(h, memoryview(_read(full, 0, size)))
            return
        lo = int(m.group(1))
        hi = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
        if lo >= size:
            return self._status(h, path, rng, 416, {"Content-Range": f"bytes */{size}"})
        body = memoryview(_read(full, lo, hi + 1 - lo))
        shown_lo = lo + 1 if "badrange" in knobs else lo
        if "short" in knobs:
            body = body[:-1]
        if "long" in knobs:
            body = memoryview(bytes(body) + b"\0")
        h.send_response(206)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Range", f"bytes {shown_lo}-{hi}/{size}")
        h.send_header("Content-Length", str(len(body)))
        cut = len(body) // 2 if ("dropall" in knobs or ("drop" in knobs and first_time)) and len(body) > 1 else None
        self._record(path, rng, 206, len(body) if cut is None else cut)  # before the headers, as above
        self._end_headers(h, knobs)
        self._send_body(h, body, cut)
        if cut is not None:
            h.wfile.flush()
            h.close_connection = True
            try:
                import socket

                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @staticmethod
    def _end_headers(h, knobs: list) -> None:
        h.end_headers()
        if "hangup" in knobs:
            h.close_connection = True  # after this answer, without telling the client

    def _status(self, h, path: str, rng: str, code: int, headers: dict | None = None) -> None:
        h.send_response(code)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", "0")
        self._record(path, rng, code, 0)
        h.end_headers()


def _read(path: str, offset: int, length: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


if __name__ == "__main__":  # the benchmark's server in its own process: prints its port, serves until killed
    import argparse
    import sys

    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--rate", type=float, default=None)
    a = ap.parse_args()
    srv = RangeServer(a.root, latency=a.latency, rate=a.rate)
    srv.control = True
    print(srv.port, flush=True)
    sys.stdout.close()
    srv.httpd.serve_forever()
