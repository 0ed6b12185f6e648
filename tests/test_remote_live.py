"""Live: bytes fetched to inspect real kernel and torch wheels, against what they hold. Run by hand:
``pytest -m live -s tests/test_remote_live.py``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.held import BUILT_IN_UNREAD

from abiprobe.binary.wheel import select_members
from abiprobe.index.client import IndexClient
from abiprobe.index.config import default_index
from abiprobe.net.http import Http
from abiprobe.net.remote_wheel import RemoteZip

pytestmark = pytest.mark.live


@pytest.fixture
def http() -> Iterator[Http]:
    with Http(timeout=120.0, retries=3, backoff=1.0) as client:
        yield client


@pytest.mark.parametrize("project", ["sglang-kernel", "torch"])
def test_bytes_fetched_stay_within_a_tenth_of_the_elf_members_compressed_size(
    http: Http, project: str
) -> None:
    # GIVEN the newest Linux x86_64 wheel of a project on the installer's default index
    index, _origin = default_index(os.environ, Path.cwd())
    listing = IndexClient([index], None, http).list_project(project)
    wheels = [c for c in listing.candidates if any(t.platform.endswith("x86_64") for t in c.tags)]
    wheels = [c for c in wheels if any(t.interpreter in ("cp312", "cp310") for t in c.tags)]
    newest = max(wheels, key=lambda c: c.version)
    # WHEN abiprobe reads the facts of its ELF members by range
    started, before = time.monotonic(), http.bytes_received
    with RemoteZip(http, newest.file.url, newest.file.sha256, newest.file.size) as remote:
        names = remote.names()
        wanted = set(select_members(names, unread_sources=BUILT_IN_UNREAD))
        assert remote._directory is not None
        members = [m for m in remote._directory.members if m.name in wanted]
        facts = remote.facts(newest.file.filename, unread_sources=BUILT_IN_UNREAD)
    fetched = http.bytes_received - before
    compressed = sum(m.compressed_size for m in members)
    size = newest.file.size or 0
    print(
        f"\n{newest.file.filename}: wheel {size / 1e6:.1f} MB, {len(members)} members read "
        f"({compressed / 1e6:.1f} MB compressed), fetched {fetched / 1e6:.1f} MB = "
        f"{fetched / compressed:.3f}x the members, {fetched / size:.1%} of the wheel, "
        f"{len(facts.elf)} ELF objects, {time.monotonic() - started:.1f}s"
    )
    # THEN nothing but those members (and the central directory) came over the wire
    assert fetched <= 1.1 * compressed + 256 * 1024
