"""Live reads of the real indexes abiprobe targets; run by hand with ``pytest -m live -s``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from abiprobe.index.client import IndexClient
from abiprobe.index.config import default_index
from abiprobe.index.multi import ProjectListing
from abiprobe.net.http import Http
from abiprobe.net.remote_wheel import RemoteZip

pytestmark = pytest.mark.live


@pytest.fixture
def http() -> Iterator[Http]:
    with Http(timeout=60.0, retries=3, backoff=1.0) as client:
        yield client


def _list(http: Http, index: str, project: str) -> ProjectListing:
    listing = IndexClient([index], None, http).list_project(project)
    if listing.failed and all((o.error or "").startswith("cannot connect") for o in listing.failed):
        pytest.skip(f"{index} is unreachable from here: {listing.failed[0].error}")
    newest = max(listing.candidates, key=lambda c: c.version, default=None)
    print(
        f"\n{project} @ {index}: {len(listing.candidates)} wheels, "
        f"{sum(c.file.duplicate for c in listing.candidates)} duplicate entries, "
        f"{sum(c.file.has_metadata for c in listing.candidates)} with PEP 658 metadata, "
        f"newest {newest.file.filename if newest else None}; outcomes {[o.status for o in listing.outcomes]} "
        f"{[o.error for o in listing.outcomes if o.error]}"
    )
    return listing


def test_torch_from_pytorch_cu130(http: Http) -> None:
    listing = _list(http, "https://download.pytorch.org/whl/cu130/", "torch")
    labelled = [c for c in listing.candidates if c.local_label == "cu130"]
    assert labelled and all(c.file.sha256 for c in labelled)


def test_sglang_kernel_from_sglang_cu130(http: Http) -> None:
    listing = _list(http, "https://docs.sglang.ai/whl/cu130/", "sglang-kernel")
    assert listing.candidates, listing.outcomes


def test_flashinfer_jit_cache_from_flashinfer_cu130(http: Http) -> None:
    listing = _list(http, "https://flashinfer.ai/whl/cu130/", "flashinfer-jit-cache")
    assert listing.candidates and all(c.local_label == "cu130" for c in listing.candidates)


def test_central_directory_of_recent_sglang_kernel_from_default_index(http: Http) -> None:
    index, origin = default_index(os.environ, Path.cwd())
    listing = IndexClient([index], None, http).list_project("sglang-kernel")
    wheels = [c for c in listing.candidates if any("x86_64" in t.platform for t in c.tags)]
    assert wheels, listing.outcomes
    newest = max(wheels, key=lambda c: c.version)
    before = http.bytes_received
    with RemoteZip(http, newest.file.url, newest.file.sha256, newest.file.size) as remote:
        names = remote.names()
        size = remote.size or 0
        directory_bytes = http.bytes_received - before
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = remote.read_members([metadata_name])[metadata_name].read()
    fetched = http.bytes_received - before
    print(
        f"\ndefault index from {origin}: {newest.file.filename} is {size} bytes; central directory of "
        f"{len(names)} members read with {directory_bytes} bytes, plus METADATA: {fetched} bytes in all "
        f"({100 * fetched / max(size, 1):.3f}%)"
    )
    assert b"Name: sglang-kernel" in metadata or b"Name: sglang_kernel" in metadata
    assert fetched < size // 10
