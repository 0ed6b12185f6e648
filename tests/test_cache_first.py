"""The one cache-first read (``abiprobe.store.reads``): every path agrees on what an offline miss is, on
what a wheel listed without a sha256 keeps, and on which cached facts count as cached.

Each test is a case where two paths used to disagree, over real wheels on the local index server."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.tags import sys_tags
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.indexserver import IndexServer
from support.stacks import PY_TAG
from support.wheelbuild import build_wheel

from abiprobe.analyze.preloads import preload_pattern
from abiprobe.cli import main
from abiprobe.commands.items import ItemSource, resolve_item
from abiprobe.index.client import IndexClient
from abiprobe.index.remote_items import index_file_from_url
from abiprobe.model.candidate import IndexFile
from abiprobe.model.stack import default_stack
from abiprobe.net.http import Http
from abiprobe.store.cache import Cache
from abiprobe.store.reads import WheelReads

BUILT_IN_PRELOADS = preload_pattern(default_stack().loading())

TARGET = ["--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG, "--platform", "manylinux_2_28_x86_64"]
PAD = 1 << 20  # random bytes that make the library a small share of the file (range-read, not hashed)
TAIL = 64 << 10


def _wheel(out: Path, soname: str, *, tag: str = "py3-none-any", padding: int = PAD) -> Path:
    """``mykernel 0.2.0`` shipping one library named ``soname``, padded (stored, so two builds whose
    sonames have one length have one size)."""
    out.mkdir(parents=True, exist_ok=True)
    lib = build_shared(out, "libk.so", "int k(void) { return 1; }\n", soname=soname)
    files: dict[str, bytes | Path] = {"mykernel/libk.so": lib}
    if padding:
        files["mykernel/data/pad.bin"] = os.urandom(padding)
    return build_wheel(out, "mykernel", "0.2.0", files, tag=tag, compression=zipfile.ZIP_STORED)


@pytest.fixture
def server() -> Iterator[IndexServer]:
    with IndexServer() as s:
        yield s


def _inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["inspect", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


def _sonames(doc: Any) -> list[str]:
    (src,) = doc["sources"]
    return [o["soname"] for o in src["objects"]]


# an offline miss: one line and exit 3, whichever part the cache lacks


def test_an_offline_miss_exits_3_whether_the_page_or_the_facts_are_missing(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a wheel on an index and an empty cache
    server.add_wheel(_wheel(tmp_path / "w", "libk.so.1", padding=0))
    cache = ["--index-url", server.index_url, "--cache-dir", str(tmp_path / "cache")]
    # WHEN it is inspected offline with nothing cached THEN that is exit 3 (the index could not be read)
    code, _doc, err = _inspect(capsys, "mykernel==0.2.0", *cache, "--offline")
    assert code == 3 and len(err.strip().splitlines()) == 1
    # GIVEN the project's page cached, but not the wheel's facts
    assert main(["index", "ls", "mykernel", "--index", server.index_url, *cache[2:]]) == 0
    capsys.readouterr()
    # WHEN it is inspected offline THEN that is the same exit 3, one line naming --offline (it was 2)
    code, _doc, err = _inspect(capsys, "mykernel==0.2.0", *cache, "--offline")
    assert code == 3
    what = "mykernel-0.2.0-py3-none-any.whl: not in the cache, and --offline forbids fetching it"
    assert err.strip().splitlines() == [f"abiprobe: error: {what}"]
    # WHEN it is checked offline THEN the item is unread, so its status is unknown: exit 3 (it was 2)
    code = main(["check", "mykernel==0.2.0", "--no-deps", *TARGET, *cache, "--offline", "--json"])
    out = capsys.readouterr().out
    assert code == 3
    assert "forbids fetching" in json.loads(out)["install"]["items"][0]["unread"]
    assert not any(path.endswith(".whl") for path in server.requests)


# a wheel listed without a sha256: hashed whole once, found again by its URL


def test_a_wheel_without_a_listed_sha256_is_read_once_and_answers_offline(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a big wheel at a bare URL (no #sha256), and another build of it
    good = _wheel(tmp_path / "good", "libgood.so.1")
    other = _wheel(tmp_path / "other", "libevil.so.1")
    served = server.add_wheel(good)
    url = server.file_url(served.filename)
    args = (url, "--cache-dir", str(tmp_path / "cache"))
    # WHEN it is inspected THEN the whole file is read once, hashed: its facts carry its true sha256
    code, cold, _err = _inspect(capsys, *args)
    assert code == 0 and _sonames(cold) == ["libgood.so.1"]
    assert cold["sources"][0]["sha256"] == served.sha256
    assert server.bytes_served[served.path] >= served.size
    # WHEN it is inspected again THEN one tail shows the server serves the same zip: nothing more is read
    server.reset_counts()
    code, warm, _err = _inspect(capsys, *args)
    assert (code, warm) == (0, cold)
    assert server.bytes_served[served.path] <= TAIL
    # WHEN it is inspected offline THEN the cache answers (it said "not in the cache" though it held it)
    server.reset_counts()
    code, offline, _err = _inspect(capsys, *args, "--offline")
    assert (code, offline) == (0, cold)
    assert server.requests[served.path] == 0
    # WHEN the URL serves other bytes THEN the tail shows another zip, and the wheel is read again
    served.served_from = other
    code, changed, _err = _inspect(capsys, *args)
    assert code == 0 and _sonames(changed) == ["libevil.so.1"]


def test_metadata_and_facts_of_an_unhashed_wheel_are_kept_by_one_url_entry(
    server: IndexServer, tmp_path: Path
) -> None:
    # GIVEN a big wheel at a bare URL
    served = server.add_wheel(_wheel(tmp_path / "w", "libk.so.1"))
    file = index_file_from_url(server.file_url(served.filename))
    cache = Cache(tmp_path / "cache")
    with Http(progress=False) as http:
        reads = WheelReads(http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD)
        # WHEN its METADATA alone is read THEN it is range-read, not downloaded whole
        metadata = reads.metadata(file)
        assert b"Name: mykernel" in metadata
        assert server.bytes_served[served.path] < served.size // 4
        # WHEN its facts are read THEN the file is hashed whole
        facts = reads.facts(file)
        assert facts.sha256 == served.sha256 and facts.verified
    entry = cache.load_metadata_entry(file.url)
    assert entry is not None and entry.wheel_sha256 == served.sha256 and entry.directory_sha256
    # WHEN both are asked for offline, by a new run THEN the one URL entry answers both
    server.reset_counts()
    with Http(progress=False) as http:
        offline = WheelReads(
            http, cache, offline=True, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD
        )
        assert (offline.metadata(file), offline.facts(file)) == (metadata, facts)
        assert offline.info(file).summary == facts.summary()
    assert server.requests[served.path] == 0


# range-read (unverified) facts count as cached when choosing among a version's wheels


def test_a_wheel_whose_range_read_facts_are_cached_is_preferred_offline(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two wheels of one version, the better-ranked one for this host never read
    platform = next(t.platform for t in sys_tags() if t.interpreter == "py3" and t.abi == "none")
    assert platform != "any"
    best = server.add_wheel(_wheel(tmp_path / "best", "libbest.so.1", tag=f"py3-none-{platform}"))
    read = server.add_wheel(_wheel(tmp_path / "read", "libread.so.1"))
    cache = tmp_path / "cache"
    # AND the other one inspected by its hashed URL: a range read, kept as unverified facts
    code, _doc, _err = _inspect(
        capsys, f"{server.file_url(read.filename)}#sha256={read.sha256}", "--cache-dir", str(cache)
    )
    assert code == 0
    assert Cache(cache).load_facts(read.sha256) is None  # not verified
    assert main(["index", "ls", "mykernel", "--index", server.index_url, "--cache-dir", str(cache)]) == 0
    capsys.readouterr()
    # WHEN the version is asked for offline, preferring a wheel whose facts are cached
    with ItemSource(cache, [server.index_url], offline=True, progress=False) as source:
        item = resolve_item("mykernel==0.2.0", source, None, tolerate_unread=False, prefer_cached=True)
    # THEN the cached one answers (the cache's range-read facts used to count as not cached)
    assert item.facts is not None and [e.soname for e in item.facts.elf] == ["libread.so.1"]
    assert best.path not in server.requests


def test_every_read_of_a_listed_wheel_finds_what_another_stored(server: IndexServer, tmp_path: Path) -> None:
    # GIVEN a runtime-style partial read of a wheel, stored by one path
    served = server.add_wheel(_wheel(tmp_path / "w", "libk.so.1"))
    cache = Cache(tmp_path / "cache")
    with Http(progress=False) as http:
        (candidate,) = IndexClient([server.index_url], cache, http).list_project("mykernel").candidates
        file: IndexFile = candidate.file
        part = WheelReads(
            http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD
        ).runtime_info(file, lambda path: path.endswith("libk.so"))
        assert part.summary.sha256 == served.sha256
    # WHEN a new offline run asks the other paths THEN each finds it: summary, facts, runtime facts
    server.reset_counts()
    with Http(progress=False) as http:
        offline = WheelReads(
            http, cache, offline=True, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD
        )
        assert offline.info(file).summary == part.summary
        assert offline.facts(file).sha256 == served.sha256
        assert offline.runtime_info(file, lambda path: True).summary == part.summary
    assert server.requests[served.path] == 0


def test_a_local_wheel_item_is_read_once_and_its_facts_answer_the_next_command(tmp_path: Path) -> None:
    # GIVEN a local wheel file checked once (as `check`, `probe` and `inspect` take items)
    wheel = _wheel(tmp_path / "w", "libk.so.1", padding=0)
    cache = tmp_path / "cache"
    with ItemSource(cache, [], offline=True, progress=False) as source:
        first = resolve_item(str(wheel), source, None)
    # THEN its facts are stored under its sha256
    assert first.facts is not None
    stored = Cache(cache).load_facts(first.facts.sha256)
    assert stored == first.facts
    # AND the next command is answered with them
    with ItemSource(cache, [], offline=True, progress=False) as source:
        again = resolve_item(str(wheel), source, None)
    assert again.facts == stored


def test_a_local_wheel_item_decodes_its_full_facts_only_when_they_are_used(tmp_path: Path) -> None:
    # GIVEN a local wheel item read once, and then its stored full facts gone (its summary kept)
    from abiprobe.store.entries import facts_path

    wheel = _wheel(tmp_path / "w", "libk.so.1", padding=0)
    cache = tmp_path / "cache"
    with ItemSource(cache, [], offline=True, progress=False) as source:
        first = resolve_item(str(wheel), source, None)
    assert first.facts is not None
    entry = facts_path(cache, first.facts.sha256)
    entry.unlink()
    # WHEN it is taken again, THEN its label and sha256 come from the summary, the full facts untouched
    with ItemSource(cache, [], offline=True, progress=False) as source:
        again = resolve_item(str(wheel), source, None)
        assert again.label == "mykernel 0.2.0" and again.file.sha256 == first.facts.sha256
        assert not entry.exists()
        # AND once used they are read from the file again (and stored)
        assert again.facts == first.facts
    assert entry.exists()
