"""Servers on 127.0.0.1 for the object-storage tests and benchmarks: a real S3 API (moto's
server) and a plain HTTP server with byte ranges, both able to inject faults.

Both serve from a thread of the calling process and stop when asked; nothing listens beyond
the loopback address."""

from __future__ import annotations

import os
import re
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Faults:
    """Requests to fail on purpose: `add(method, path_part, ranged, how, times)` fails the
    next `times` matching requests (after `skip` of them) with `how` = "503" (a server error)
    or, HTTP server only, "cut" (the headers and half the body, then the connection is
    closed). Every request is logged."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rules: list[dict] = []
        self.log: list[tuple] = []  # (method, path, range header or None, fault or None)

    def add(self, method: str, path_part: str, ranged: bool, how: str, times: int = 1, skip: int = 0) -> None:
        with self.lock:
            self.rules.append(
                {"method": method, "part": path_part, "ranged": ranged, "how": how, "times": times, "skip": skip}
            )

    def take(self, method: str, path: str, rng: str | None) -> str | None:
        with self.lock:
            fault = None
            for r in self.rules:
                if r["times"] > 0 and r["method"] == method and r["part"] in path and bool(rng) == r["ranged"]:
                    if r["skip"] > 0:
                        r["skip"] -= 1
                        continue
                    r["times"] -= 1
                    fault = r["how"]
                    break
            self.log.append((method, path, rng, fault))
            return fault

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()
            self.log.clear()


class S3Server:
    """moto's S3 server (the same WSGI app as `moto_server`) on 127.0.0.1, behind a fault
    injector. `env` holds what a client needs: the endpoint and dummy credentials."""

    def __init__(self):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        self.faults = Faults()
        app = DomainDispatcherApplication(create_backend_app)
        faults = self.faults

        def wrapped(environ, start_response):
            fault = faults.take(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("HTTP_RANGE"))
            if fault == "503":
                start_response("503 Service Unavailable", [("Content-Type", "application/xml")])
                return [
                    b"<?xml version='1.0'?><Error><Code>ServiceUnavailable</Code>"
                    b"<Message>injected by the test</Message></Error>"
                ]
            return app(environ, start_response)

        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
        self.server = make_server("127.0.0.1", 0, wrapped, threaded=True)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.env = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_SESSION_TOKEN": "testing",
        }

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class RangeHandler(BaseHTTPRequestHandler):
    """GET and HEAD of files under `root`, with single byte ranges (206 + Content-Range),
    `ETag` and `Last-Modified` (an `If-Range` that does not match gets the whole file, as
    RFC 9110 says). The body is sent in pieces (a file of gigabytes is never held in memory).
    Faults: "503"; "cut" (half the body, then the connection is closed); "cut:N" (N bytes of
    the body, then closed); "norange" (the range is ignored: 200 and the whole file);
    "slow:SECONDS" (a pause after each piece of the body)."""

    root = "."
    faults: Faults | None = None
    protocol_version = "HTTP/1.1"
    piece = 1 << 20  # bytes written at a time
    delay = 0.0  # seconds slept after each piece (a slow server)

    def log_message(self, *args):  # quiet
        pass

    def _file(self):
        path = os.path.join(self.root, self.path.lstrip("/").split("?", 1)[0])
        return path if os.path.isfile(path) else None

    @staticmethod
    def _validators(path):
        st = os.stat(path)
        return st.st_size, f'"{st.st_size:x}-{st.st_mtime_ns:x}"', formatdate(st.st_mtime, usegmt=True)

    def do_HEAD(self):
        path = self._file()
        if path is None:
            self.send_error(404)
            return
        size, etag, modified = self._validators(path)
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", modified)
        self.end_headers()

    def do_GET(self):
        path = self._file()
        rng = self.headers.get("Range")
        fault = self.faults.take("GET", self.path, rng) if self.faults else None
        if path is None:
            self.send_error(404)
            return
        if fault == "503":
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size, etag, modified = self._validators(path)
        start, end = 0, size - 1
        m = re.match(r"bytes=(\d+)-(\d*)$", rng or "")
        if m and fault == "norange":
            m = None
        if m and self.headers.get("If-Range") not in (None, etag, modified):
            m = None  # the file changed: the whole of it
        if m:
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
        length = end - start + 1
        self.send_response(206 if m else 200)
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", modified)
        if m:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        limit = length
        if fault == "cut":
            limit = length // 2
        elif fault and fault.startswith("cut:"):
            limit = min(length, int(fault[4:]))
        delay = float(fault[5:]) if fault and fault.startswith("slow:") else self.delay
        sent = 0
        try:
            with open(path, "rb") as fh:
                fh.seek(start)
                while sent < limit:
                    data = fh.read(min(self.piece, limit - sent))
                    if not data:
                        break
                    self.wfile.write(data)
                    sent += len(data)
                    if delay:
                        time.sleep(delay)
        except (BrokenPipeError, ConnectionResetError):  # the client went away
            self.close_connection = True
            return
        if limit < length:
            self.wfile.flush()
            self.close_connection = True


class HTTPRangeServer:
    def __init__(self, root: str, piece: int = 1 << 20, delay: float = 0.0):
        self.faults = Faults()
        attrs = {"root": root, "faults": self.faults, "piece": piece, "delay": delay}
        handler = type("Handler", (RangeHandler,), attrs)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
