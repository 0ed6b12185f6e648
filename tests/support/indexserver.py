"""A real package index on 127.0.0.1 for tests: PEP 503 HTML, PEP 691 JSON, files, ranges, faults.

Usage::

    with IndexServer() as server:                      # starts a ThreadingHTTPServer in a thread
        served = server.add_wheel(wheel_path)           # project taken from the filename
        server.index_url                                # "http://127.0.0.1:PORT/simple/"
        server.find_links_url                           # "http://127.0.0.1:PORT/links/" (every file)
        server.fail(match="/files/", status=500, times=2)   # misbehave on demand (see Fault)
        server.fail(match="/files/", stall_after=4096); server.wait_stalled()  # held until release()
        server.requests["/simple/demo/"], server.bytes_served[served.path], server.total_bytes
        server.stop()                                   # index down: the port is closed

``IndexServer(tls=context)`` serves HTTPS with that server context (support.tlsca makes one);
``IndexServer(auth=("user", "secret"))`` answers 401 to any request without those Basic credentials.

Pages negotiate JSON vs HTML on ``Accept`` (``server.formats`` limits what is offered), carry an ETag and
Last-Modified and answer 304 to a matching revalidation (``server.validators = False``: neither). Files
answer single ranges (``a-b``, ``a-``, ``-n``) with 206 and Content-Range; ``<file>.metadata`` serves the
wheel's METADATA (PEP 658). HEAD
answers what GET would, without the body.
``add_wheel`` options shape the listing: ``href`` ("quoted" with %2B, "plus" with a literal +,
"absolute"), ``wrong_hash``, ``duplicate_hashes`` (list the filename again with these hashes),
``yanked``, ``requires_python`` (default: from METADATA), ``upload_time``, ``metadata``, ``served_from``
(other bytes served under the listed name and hash: set it back to None to fix the server).
Counters (``requests``, ``bytes_served``) are keyed by the unquoted request path.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import socket
import ssl
import struct
import threading
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from email.parser import HeaderParser
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from packaging.utils import canonicalize_name, parse_wheel_filename

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


@dataclass
class Fault:
    """A misbehaviour for requests whose path contains ``match``; ``times`` None means every time."""

    match: str = ""
    times: int | None = None
    status: int | None = None  # answer this status with a short body
    no_ranges: bool = False  # ignore Range and send 200 with the whole body
    reset_after: int | None = None  # send this many body bytes, then reset the connection (RST)
    truncate_after: int | None = None  # promise the full Content-Length, send this many bytes, close
    delay: float = 0.0  # seconds to wait before answering
    wrong_content_range: bool = False  # 206 whose Content-Range start is off by one
    redirect_loop: bool = False  # answer 302 pointing at the very same URL
    bad_gzip: bool = False  # say Content-Encoding: gzip over a body that is not gzip
    drip: float | None = None  # send the body one byte every this many seconds
    content_type: str | None = None  # label a page's body with this Content-Type instead
    body: bytes | None = None  # answer a page with these bytes instead of the listing
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers (Retry-After ...)
    stall: bool = False  # hold the request unanswered until the server is released or stopped
    stall_after: int | None = None  # send this many body bytes, then hold the rest the same way
    unless: str = ""  # spare paths ending so (".metadata": the wheel misbehaves, its PEP 658 file not)
    used: int = 0


@dataclass
class ServedFile:
    project: str
    filename: str
    disk_path: Path
    sha256: str
    size: int
    metadata: bytes | None
    href: str = "quoted"
    wrong_hash: bool = False
    duplicate_hashes: tuple[str, ...] = ()
    yanked: bool | str = False
    requires_python: str | None = None
    upload_time: str | None = None
    served_from: Path | None = None  # bytes served at the file's URL instead (the listing keeps its hash)
    prefix: str = ""  # served under /files/<prefix>/<filename>: two files may share a filename
    at: str | None = None  # served at this exact (unquoted) path instead, e.g. /whl/cu130/<filename>
    listed: bool = True  # False: reachable by URL (a saved page's link) but on no generated page

    @property
    def path(self) -> str:
        """The unquoted request path of the file (the key of the server's counters)."""
        if self.at is not None:
            return self.at
        return f"/files/{self.prefix + '/' if self.prefix else ''}{self.filename}"

    @property
    def listed_sha256(self) -> str:
        return "0" * 64 if self.wrong_hash else self.sha256


def _wheel_metadata(path: Path) -> bytes | None:
    """The wheel's METADATA; None for a file that is not a zip (served as is, for broken-wheel tests)."""
    try:
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if name.count("/") == 1 and name.endswith(".dist-info/METADATA"):
                    return zf.read(name)
    except zipfile.BadZipFile:
        return None
    return None


@dataclass
class _State:
    files: list[ServedFile] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    formats: set[str] = field(default_factory=lambda: {"json", "html"})
    requests: Counter[str] = field(default_factory=Counter)
    bytes_served: Counter[str] = field(default_factory=Counter)
    log: list[tuple[str, dict[str, str], int]] = field(default_factory=list)
    pages: dict[str, bytes] = field(default_factory=dict)  # saved pages served as they are, by path
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed_at: int = 0
    auth: str | None = None  # the expected Authorization header value
    validators: bool = True  # False: pages carry no ETag / Last-Modified and are never answered 304
    released: threading.Event = field(default_factory=threading.Event)  # ends every stall
    stalled: int = 0  # requests being held by a stall now
    in_flight: int = 0  # requests being answered now
    max_in_flight: int = 0  # the most answered at once since the counts were reset


class IndexServer:
    """A ThreadingHTTPServer serving an index of real wheel files; a context manager."""

    def __init__(
        self, port: int = 0, *, tls: ssl.SSLContext | None = None, auth: tuple[str, str] | None = None
    ) -> None:
        self._state = _State()
        self._port = port
        self._tls = tls
        if auth is not None:
            import base64

            self._state.auth = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.start()

    # lifecycle

    def start(self) -> None:
        handler = type("Handler", (_Handler,), {"state": self._state})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        self._httpd.daemon_threads = True
        if self._tls is not None:
            self._httpd.socket = self._tls.wrap_socket(self._httpd.socket, server_side=True)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._state.released.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> IndexServer:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # addresses

    @property
    def url(self) -> str:
        return f"{'https' if self._tls is not None else 'http'}://127.0.0.1:{self._port}"

    @property
    def index_url(self) -> str:
        return f"{self.url}/simple/"

    @property
    def find_links_url(self) -> str:
        return f"{self.url}/links/"

    def file_url(self, filename: str) -> str:
        return f"{self.url}/files/{quote(filename)}"

    def served_url(self, served: ServedFile) -> str:
        return f"{self.url}{quote(served.path)}"

    def add_page(self, path: str, body: bytes) -> str:
        """Serve ``body`` as it is (an HTML page) at ``path``; returns its URL."""
        with self._state.lock:
            self._state.pages[path] = body
        return f"{self.url}{path}"

    # content and behaviour

    @property
    def formats(self) -> set[str]:
        return self._state.formats

    @property
    def files(self) -> list[ServedFile]:
        """What is served, in the order it was added (each may be changed in place)."""
        with self._state.lock:
            return list(self._state.files)

    @property
    def validators(self) -> bool:
        return self._state.validators

    @validators.setter
    def validators(self, on: bool) -> None:
        """Off: pages answer 200 with the whole body every time, as some mirrors do."""
        self._state.validators = on

    def add_wheel(
        self, path: Path, *, project: str | None = None, metadata: bool = True, **options: Any
    ) -> ServedFile:
        name = project or str(parse_wheel_filename(path.name)[0])
        data = path.read_bytes()
        meta = _wheel_metadata(path)
        if "requires_python" not in options and meta is not None:
            options["requires_python"] = HeaderParser().parsestr(meta.decode()).get("Requires-Python")
        served = ServedFile(
            project=str(canonicalize_name(name)),
            filename=path.name,
            disk_path=path,
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            metadata=meta if metadata else None,
            **options,
        )
        with self._state.lock:
            self._state.files.append(served)
            self._state.changed_at = max(self._state.changed_at + 1, int(time.time()))
        return served

    def fail(self, **fault: Any) -> Fault:
        made = Fault(**fault)
        with self._state.lock:
            self._state.faults.append(made)
        return made

    def clear_faults(self) -> None:
        with self._state.lock:
            self._state.faults.clear()

    # counters

    @property
    def requests(self) -> Counter[str]:
        return self._state.requests

    @property
    def bytes_served(self) -> Counter[str]:
        return self._state.bytes_served

    @property
    def total_bytes(self) -> int:
        return sum(self._state.bytes_served.values())

    @property
    def log(self) -> list[tuple[str, dict[str, str], int]]:
        """(path, request headers lower-cased, status) per request, in arrival order."""
        return self._state.log

    @property
    def stalled(self) -> int:
        """How many requests a ``stall`` / ``stall_after`` fault holds now."""
        with self._state.lock:
            return self._state.stalled

    def wait_stalled(self, count: int = 1, timeout: float = 120.0) -> bool:
        """Wait until ``count`` requests are held by a stall; False if that does not happen in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.stalled >= count:
                return True
            time.sleep(0.02)
        return False

    def release(self) -> None:
        """End every stall, now and later (a stopped server releases too)."""
        self._state.released.set()

    @property
    def max_in_flight(self) -> int:
        """The most requests answered at the same time since the counts were last reset."""
        with self._state.lock:
            return self._state.max_in_flight

    def reset_counts(self) -> None:
        with self._state.lock:
            self._state.requests.clear()
            self._state.bytes_served.clear()
            self._state.log.clear()
            self._state.max_in_flight = self._state.in_flight


def _not_modified(if_none_match: str | None, if_modified_since: str | None, etag: str, modified: str) -> bool:
    if if_none_match is not None:
        return if_none_match == etag
    if if_modified_since is None:
        return False
    try:
        return parsedate_to_datetime(if_modified_since) >= parsedate_to_datetime(modified)
    except (TypeError, ValueError):
        return False


def _wants_json(accept: str) -> bool:
    best_json, best_html = -1.0, -1.0
    for part in accept.split(","):
        kind, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for p in params:
            if p.startswith("q="):
                with contextlib.suppress(ValueError):
                    q = float(p[2:])
        if kind == JSON_TYPE:
            best_json = max(best_json, q)
        elif kind in ("text/html", "application/vnd.pypi.simple.v1+html", "*/*"):
            best_html = max(best_html, q)
    return best_json > 0 and best_json >= best_html


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _State
    _sent_this_request = 0
    _entry: tuple[int, str, dict[str, str]] = (-1, "", {})

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _fault(self, path: str) -> Fault | None:
        with self.state.lock:
            for fault in self.state.faults:
                if fault.unless and path.endswith(fault.unless):
                    continue
                if fault.match in path and (fault.times is None or fault.used < fault.times):
                    fault.used += 1
                    return fault
        return None

    def do_HEAD(self) -> None:
        """The GET answer's status and headers without its body (uv asks a file's size this way)."""
        self._head = True
        try:
            self.do_GET()
        finally:
            self._head = False

    def do_GET(self) -> None:
        self._sent_this_request = 0
        path = unquote(urlsplit(self.path).path)
        fault = self._fault(path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        # counted before answering: a client may assert on the counters as soon as it has the body
        with self.state.lock:
            self.state.requests[path] += 1
            self._entry = (len(self.state.log), path, headers)
            self.state.log.append((path, headers, 0))
        with self.state.lock:
            self.state.in_flight += 1
            self.state.max_in_flight = max(self.state.max_in_flight, self.state.in_flight)
        try:
            self._answer(path, fault)
        finally:
            with self.state.lock:
                self.state.in_flight -= 1

    def _stall(self) -> None:
        with self.state.lock:
            self.state.stalled += 1
        try:
            self.state.released.wait()
        finally:
            with self.state.lock:
                self.state.stalled -= 1

    def send_response(self, code: int, message: str | None = None) -> None:
        """The status is logged before any byte of the answer leaves: a client may assert on it at once."""
        entry, path, headers = self._entry
        with self.state.lock:
            if 0 <= entry < len(self.state.log) and self.state.log[entry][0] == path:
                self.state.log[entry] = (path, headers, code)
        super().send_response(code, message)

    def _answer(self, path: str, fault: Fault | None) -> int:
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        if fault is not None and fault.stall:
            self._stall()
        if fault is not None and fault.redirect_loop:
            return self._send(path, 302, b"", None, fault, {"Location": self.path})
        if fault is not None and fault.status is not None:
            return self._send(path, fault.status, b"fault injected\n", "text/plain", fault)
        if self.state.auth is not None and self.headers.get("Authorization") != self.state.auth:
            return self._send(path, 401, b"credentials needed\n", "text/plain", fault)
        with self.state.lock:
            saved = self.state.pages.get(path)
        if saved is not None:
            return self._send(path, 200, saved, "text/html; charset=utf-8", fault)
        with self.state.lock:
            wanted = path.removesuffix(".metadata")
            placed = any(f.at is not None and f.at == wanted for f in self.state.files)
        if path.startswith("/files/") or placed:
            return self._file(path, fault)
        if path == "/links/":
            return self._page(path, None, fault)
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "simple":
            return self._page(path, parts[1], fault)
        return self._send(path, 404, b"not found\n", "text/plain", fault)

    def _page(self, path: str, project: str | None, fault: Fault | None) -> int:
        with self.state.lock:
            wanted = canonicalize_name(project) if project is not None else None
            files = [f for f in self.state.files if f.listed and (wanted is None or f.project == wanted)]
            formats = set(self.state.formats)
            modified = formatdate(self.state.changed_at, usegmt=True)
        if project is not None and not files:
            return self._send(path, 404, b"no such project\n", "text/plain", fault)
        use_json = (
            project is not None
            and "json" in formats
            and (_wants_json(self.headers.get("Accept", "")) or "html" not in formats)
        )
        body = _json_page(project or "", files, self) if use_json else _html_page(project, files, self)
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        validators = {"ETag": etag, "Last-Modified": modified} if self.state.validators else {}
        conditions = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
        if validators and _not_modified(*conditions, etag, modified):
            return self._send(path, 304, b"", None, fault, validators)
        ctype = JSON_TYPE if use_json else "text/html; charset=utf-8"
        if fault is not None and fault.body is not None:
            body = fault.body
        if fault is not None and fault.content_type is not None:
            ctype = fault.content_type
        return self._send(path, 200, body, ctype, fault, validators)

    def _file(self, path: str, fault: Fault | None) -> int:
        want_metadata = path.endswith(".metadata")
        wanted = path.removesuffix(".metadata")
        with self.state.lock:
            served = next((f for f in self.state.files if f.path == wanted), None)
        if served is None or (want_metadata and served.metadata is None):
            return self._send(path, 404, b"not found\n", "text/plain", fault)
        if want_metadata:
            assert served.metadata is not None
            return self._send(path, 200, served.metadata, "text/plain", fault)
        disk = served.served_from or served.disk_path
        size = disk.stat().st_size
        rng = self.headers.get("Range")
        if rng is None or (fault is not None and fault.no_ranges) or "," in rng:
            return self._send_file(path, disk, 0, size, 200, {}, fault)
        spec = rng.strip().removeprefix("bytes=")
        first, _, last = spec.partition("-")
        try:
            if first == "":
                start, end = max(0, size - int(last)), size - 1
            else:
                start, end = int(first), min(int(last), size - 1) if last else size - 1
        except ValueError:
            return self._send_file(path, disk, 0, size, 200, {}, fault)
        if start >= size or end < start:
            return self._send(path, 416, b"", "text/plain", fault, {"Content-Range": f"bytes */{size}"})
        shown = start + 1 if fault is not None and fault.wrong_content_range else start
        headers = {"Content-Range": f"bytes {shown}-{end}/{size}"}
        return self._send_file(path, disk, start, end + 1, 206, headers, fault)

    def _send(
        self, path: str, status: int, body: bytes, ctype: str | None, fault: Fault | None,
        headers: dict[str, str] | None = None,
    ) -> int:  # fmt: skip
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in {**(headers or {}), **(fault.headers if fault is not None else {})}.items():
            self.send_header(k, v)
        if fault is not None and fault.bad_gzip:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._write(path, body, fault)
        return status

    def _send_file(
        self, path: str, disk: Path, start: int, stop: int, status: int, headers: dict[str, str],
        fault: Fault | None,
    ) -> int:  # fmt: skip
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "none" if status == 200 else "bytes")
        for k, v in {**headers, **(fault.headers if fault is not None else {})}.items():
            self.send_header(k, v)
        if fault is not None and fault.bad_gzip:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(stop - start))
        self.end_headers()
        with disk.open("rb") as fh:
            fh.seek(start)
            remaining = stop - start
            while remaining > 0:
                chunk = fh.read(min(remaining, 1 << 20))
                if not chunk or not self._write(path, chunk, fault):
                    break
                remaining -= len(chunk)
        return status

    def _write(self, path: str, data: bytes, fault: Fault | None) -> bool:
        """Write body bytes, honouring reset/truncate faults; False once the connection is cut."""
        limit = None
        if fault is not None and fault.stall_after is not None:
            now = data[: max(0, fault.stall_after - self._sent_this_request)]
            self._sent_this_request += len(now)
            self._raw_write(path, now, fault)
            if len(now) < len(data):
                self.wfile.flush()
                self._stall()
                self.close_connection = True
                return False
            return True
        if fault is not None:
            limit = fault.reset_after if fault.reset_after is not None else fault.truncate_after
        if limit is not None:
            allowed = max(0, limit - self._sent_this_request)
            data_now = data[:allowed]
            self._sent_this_request += len(data_now)
            self._raw_write(path, data_now, fault)
            if len(data_now) < len(data):
                self._cut(reset=fault is not None and fault.reset_after is not None)
                return False
            return True
        self._raw_write(path, data, fault)
        return True

    def _raw_write(self, path: str, data: bytes, fault: Fault | None = None) -> None:
        if fault is not None and fault.drip is not None:
            for i in range(len(data)):
                self._count(path, 1)
                try:
                    self.wfile.write(data[i : i + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up on the drip
                    self._count(path, -1)
                    self.close_connection = True
                    return
                time.sleep(fault.drip)
            return
        if data and not getattr(self, "_head", False):
            # counted before the bytes leave: a client may assert on the counter as soon as it has them
            self._count(path, len(data))
            try:
                self.wfile.write(data)
            except OSError:
                self._count(path, -len(data))
                raise

    def _count(self, path: str, n: int) -> None:
        with self.state.lock:
            self.state.bytes_served[path] += n

    def _cut(self, *, reset: bool) -> None:
        self.wfile.flush()
        if reset:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_WR)
        self.close_connection = True


def _href(served: ServedFile, handler: _Handler, depth: int) -> str:
    if served.href == "plus":
        rel = "../" * depth + served.path.removeprefix("/")
    elif served.href == "absolute":
        scheme = "https" if isinstance(handler.connection, ssl.SSLSocket) else "http"
        rel = f"{scheme}://{handler.headers.get('Host', '127.0.0.1')}{quote(served.path)}"
    else:
        rel = "../" * depth + quote(served.path.removeprefix("/"))
    return rel


def _listed(served: ServedFile) -> list[str]:
    return [served.listed_sha256, *served.duplicate_hashes]


def _html_page(project: str | None, files: list[ServedFile], handler: _Handler) -> bytes:
    depth = 2 if project is not None else 1
    lines = ["<!DOCTYPE html>", "<html><head><title>Links</title></head><body>", f"<h1>{project}</h1>"]
    for served in files:
        for digest in _listed(served):
            attrs = [f'href="{html.escape(_href(served, handler, depth))}#sha256={digest}"']
            if served.requires_python:
                attrs.append(f'data-requires-python="{html.escape(served.requires_python)}"')
            if served.yanked is not False:
                reason = "" if served.yanked is True else f'="{html.escape(str(served.yanked))}"'
                attrs.append(f"data-yanked{reason}")
            if served.metadata is not None:
                meta = "sha256=" + hashlib.sha256(served.metadata).hexdigest()
                attrs += [f'data-dist-info-metadata="{meta}"', f'data-core-metadata="{meta}"']
            lines.append(f"<a {' '.join(attrs)}>{html.escape(served.filename)}</a><br/>")
    lines.append("</body></html>")
    return "\n".join(lines).encode()


def _json_page(project: str, files: list[ServedFile], handler: _Handler) -> bytes:
    entries: list[dict[str, Any]] = []
    for served in files:
        for digest in _listed(served):
            entry: dict[str, Any] = {
                "filename": served.filename,
                "url": _href(served, handler, 2),
                "hashes": {"sha256": digest},
                "requires-python": served.requires_python,
                "yanked": served.yanked,
                "size": served.size,
                "core-metadata": {"sha256": hashlib.sha256(served.metadata).hexdigest()}
                if served.metadata is not None
                else False,
            }
            if served.upload_time:
                entry["upload-time"] = served.upload_time
            entries.append(entry)
    page = {"meta": {"api-version": "1.1"}, "name": project, "files": entries, "versions": []}
    return json.dumps(page).encode()
