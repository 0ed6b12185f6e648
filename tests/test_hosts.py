"""Registry host names never land in files abiprobe writes for committing; they come back on reading."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from abiprobe.model.hosts import REGISTRY_FILES, concrete, neutral, registry_file_host
from abiprobe.store.cache import Cache, CachedPage

pytestmark = pytest.mark.skipif(registry_file_host() is None, reason="pip is not importable here")


def _every_text_under(root: Path) -> str:
    parts = []
    for p in root.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            parts.append(
                (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8", "replace")
            )
    return "\n".join(parts)


def test_cached_page_holds_tokens_on_disk_and_the_real_hosts_when_loaded(tmp_path: Path) -> None:
    # GIVEN a page of the default registry whose body links wheel files on the registry's file host
    files = registry_file_host()
    assert files is not None
    url = concrete("https://{registry}/simple/demo/")
    body = json.dumps({"files": [{"url": f"https://{files}/packages/aa/demo-1.0-py3-none-any.whl"}]}).encode()
    cache = Cache(tmp_path / "c")
    # WHEN it is stored and loaded again
    cache.store_page(CachedPage(url, body, "application/json", '"e1"', None, time.time()))
    cache.set_host_note(files, "ignores-ranges", True)
    loaded = cache.load_page(url)
    # THEN the reader sees the page as fetched, and no file under the cache names the registry hosts
    assert loaded is not None and (loaded.url, loaded.body) == (url, body)
    assert cache.host_note(files, "ignores-ranges") is True
    text = _every_text_under(tmp_path / "c")
    assert files not in text and concrete("{registry}") not in text
    assert REGISTRY_FILES in text


def test_other_hosts_are_kept_as_they_are() -> None:
    url = "https://download.pytorch.org/whl/cu130/torch/"
    assert neutral(url) == url == concrete(url)
