"""``file://`` URLs answered like a static web server: local indexes and find-links folders work as in pip.

A file is served whole or by one byte range (206 with Content-Range); a folder with an ``index.html`` is
that page (a simple index laid out on disk); any other folder is a page linking every file in it (pip's
find-links folder); a missing path is 404.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, unquote

import httpx

_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
CHUNK = 1 << 20


class _FileStream(httpx.SyncByteStream):
    def __init__(self, path: Path, start: int, length: int) -> None:
        self._path, self._start, self._length = path, start, length

    def __iter__(self) -> Iterator[bytes]:
        with self._path.open("rb") as fh:
            fh.seek(self._start)
            left = self._length
            while left > 0:
                chunk = fh.read(min(CHUNK, left))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk


def _listing(folder: Path) -> bytes:
    links = [
        f'<a href="{quote(p.name)}">{html.escape(p.name)}</a><br>'
        for p in sorted(folder.iterdir())
        if p.is_file()
    ]
    return ("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n").encode()


def _byte_range(header: str, size: int) -> tuple[int, int] | None:
    """[start, end] of a single ``Range`` header, or None when it is absent, multiple or unusable."""
    match = _RANGE.match(header.strip())
    if match is None or size == 0:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:
        start, end = max(0, size - int(last)), size - 1
    else:
        start, end = int(first), min(int(last), size - 1) if last else size - 1
    return (start, end) if start <= end else None


class FileTransport(httpx.BaseTransport):
    """Answers GET of ``file://`` URLs from the local disk."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = Path(unquote(request.url.path))
        if path.is_dir():
            page = path / "index.html"
            body = page.read_bytes() if page.is_file() else _listing(path)
            headers = {"content-type": "text/html", "content-length": str(len(body))}
            return httpx.Response(200, headers=headers, stream=httpx.ByteStream(body))
        try:
            size = os.stat(path).st_size
        except OSError:
            return httpx.Response(404, content=b"not found\n")
        wanted = _byte_range(request.headers.get("range", ""), size)
        if wanted is None:
            return httpx.Response(
                200, headers={"content-length": str(size)}, stream=_FileStream(path, 0, size)
            )
        start, end = wanted
        headers = {"content-length": str(end - start + 1), "content-range": f"bytes {start}-{end}/{size}"}
        return httpx.Response(206, headers=headers, stream=_FileStream(path, start, end - start + 1))
