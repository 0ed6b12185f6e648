"""wheel_index_cache: round trips, corruption as a miss, maintenance through the CLI, locking, crashes."""

from __future__ import annotations

import dataclasses
import gzip
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.holds import held_write
from support.schemas import assert_valid

from abiprobe.cli import main
from abiprobe.errors import CacheError
from abiprobe.model.facts import (
    DistMetadata,
    ElfFacts,
    GpuCode,
    SymbolExport,
    SymbolImport,
    VersionNeed,
    WheelFacts,
)
from abiprobe.net.urls import _strip_credentials_parsed
from abiprobe.store.cache import Cache, CachedPage, default_cache_root, is_stale, strip_credentials
from abiprobe.store.primitives import canonical_json, pretty_json, sha256_hex

REPO = Path(__file__).resolve().parents[1]
PAGE_URL = "https://download.pytorch.org/whl/cu130/torch/"
WHEEL_SHA = "3f" * 32


def make_facts(sha256: str = WHEEL_SHA, symbols: int = 3) -> WheelFacts:
    """Facts shaped like a real kernel wheel's, built by hand: the cache, not a reader, is under test."""
    exports = tuple(
        SymbolExport(f"_ZN3sgl6kernel{i}Ev", None, True, "FUNC", "GLOBAL") for i in range(symbols)
    )
    elf = ElfFacts(
        path="sgl_kernel/common_ops.abi3.so",
        elf_class=64,
        machine="x86_64",
        soname="common_ops.abi3.so",
        needed=("libc10.so", "libcudart.so.13", "libc.so.6"),
        runpath=("$ORIGIN/../torch/lib",),
        exports=exports,
        imports=(
            SymbolImport("_ZN3c105ErrorC1ENS_14SourceLocationESs"),
            SymbolImport("memcpy", "GLIBC_2.14", "libc.so.6"),
            SymbolImport("__gmon_start__", weak=True),
        ),
        version_needs=(VersionNeed("libc.so.6", ("GLIBC_2.14", "GLIBC_2.2.5")),),
        gpu_code=(
            GpuCode("sass", 90, "a", None, "zstd", ".nv_fatbin", 4096),
            GpuCode("ptx", 120, "", "9.0", None, ".nv_fatbin", 2048),
        ),
        sha256="9e" * 32,
        size=123456,
    )
    return WheelFacts(
        filename="sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl",
        sha256=sha256,
        size=987654,
        metadata=DistMetadata(
            name="sgl-kernel",
            version="0.3.21",
            requires_dist=("torch==2.9.1",),
            requires_python=">=3.10",
            tags=("cp310-abi3-manylinux2014_x86_64",),
            top_level=("sgl_kernel",),
        ),
        files=("sgl_kernel/__init__.py", "sgl_kernel/common_ops.abi3.so"),
        elf=(elf,),
        errors=("sgl_kernel/broken.so: truncated dynamic section",),
        unreadable=("sgl_kernel/broken.so",),
        verified=True,  # as from a whole-file read: the cache keeps these as checked facts
    )


def make_page(
    url: str = PAGE_URL, body: bytes = b"<html><a href='torch-2.9.1.whl'>t</a></html>"
) -> CachedPage:
    return CachedPage(url, body, "text/html", '"etag-1"', "Tue, 04 Nov 2025 10:00:00 GMT", 1_700_000_000.0)


def files_under(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if p.is_file())


def cli(*argv: str) -> int:
    return main(["cache", *argv])


# round trips


def test_page_round_trip_keeps_body_and_validators(tmp_path: Path) -> None:
    # GIVEN a cache holding a page fetched with an ETag and Last-Modified
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    # WHEN a fresh Cache on the same directory loads it
    loaded = Cache(tmp_path).load_page(PAGE_URL)
    # THEN every field comes back exactly
    assert loaded == make_page()


def test_touch_page_moves_fetched_at_and_keeps_body(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    cache.touch_page(PAGE_URL, 1_800_000_000.0)
    assert cache.load_page(PAGE_URL) == CachedPage(
        PAGE_URL, make_page().body, "text/html", '"etag-1"', "Tue, 04 Nov 2025 10:00:00 GMT", 1_800_000_000.0
    )


def test_a_page_fetched_again_unchanged_leaves_the_committed_files_as_they_were(tmp_path: Path) -> None:
    # GIVEN a cached page
    cache = Cache(tmp_path / "c")
    cache.store_page(make_page())
    before = {p: p.read_bytes() for p in files_under(tmp_path / "c", "*")}
    # WHEN the same page is fetched again later, and revalidated later still
    cache.store_page(dataclasses.replace(make_page(), fetched_at=1_750_000_000.0))
    cache.touch_page(PAGE_URL, 1_760_000_000.0)
    # THEN no file of the cache changed, and the page is known to be as fresh as the last answer
    assert {p: p.read_bytes() for p in files_under(tmp_path / "c", "*")} == before
    loaded = Cache(tmp_path / "c").load_page(PAGE_URL)
    assert loaded is not None and loaded.fetched_at == 1_760_000_000.0
    record = cache.page_record(PAGE_URL)
    assert record is not None and record.fetched_at == 1_760_000_000.0
    # AND a page whose content changed is written
    cache.store_page(dataclasses.replace(make_page(body=b"new"), fetched_at=1_770_000_000.0))
    assert {p: p.read_bytes() for p in files_under(tmp_path / "c", "*")} != before


def test_a_page_confirmed_on_this_machine_is_not_stale(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c")
    cache.store_page(make_page())  # fetched at 1_700_000_000
    assert [p.url for p in cache.stale_pages(3600, now=1_700_100_000.0)] == [PAGE_URL]
    cache.touch_page(PAGE_URL, 1_700_099_000.0)  # a 304 an hour before "now": its entry is not rewritten
    assert cache.stale_pages(3600, now=1_700_100_000.0) == ()


def test_fresh_cache_is_ready_to_commit(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    with cache.lock():
        pass
    assert (tmp_path / ".gitignore").read_text().splitlines()[1:] == [".lock", ".tmp-*.part"]


def test_touch_of_an_uncached_page_writes_nothing(tmp_path: Path) -> None:
    Cache(tmp_path).touch_page(PAGE_URL, 1.0)
    assert files_under(tmp_path, "*.json") == []


def test_storing_a_new_body_deletes_the_old_one(tmp_path: Path) -> None:
    # GIVEN a cached page
    cache = Cache(tmp_path)
    cache.store_page(make_page(body=b"old"))
    # WHEN the page changed on the server and is stored again
    cache.store_page(make_page(body=b"new"))
    # THEN the new body is served and only one body file remains
    loaded = cache.load_page(PAGE_URL)
    assert loaded is not None and loaded.body == b"new"
    assert len(files_under(tmp_path, "*.body.gz")) == 1


def test_facts_round_trip_with_nested_content(tmp_path: Path) -> None:
    Cache(tmp_path).store_facts(make_facts())
    assert Cache(tmp_path).load_facts(WHEEL_SHA) == make_facts()


def test_facts_entry_is_deterministic_across_stores(tmp_path: Path) -> None:
    # GIVEN the same facts stored into two caches
    Cache(tmp_path / "a").store_facts(make_facts())
    Cache(tmp_path / "b").store_facts(make_facts())
    # THEN the files are byte-identical (git sees no change when two machines fill a cache)
    (a,) = files_under(tmp_path / "a", "*.facts.gz")
    (b,) = files_under(tmp_path / "b", "*.facts.gz")
    assert a.read_bytes() == b.read_bytes()


def test_the_store_lists_the_wheels_it_holds_summaries_of(tmp_path: Path) -> None:
    # GIVEN two wheels' facts stored, and a stray file beside them in the facts folder
    Cache(tmp_path).store_facts(make_facts("ab" * 32))
    Cache(tmp_path).store_facts(make_facts())
    (tmp_path / "facts" / "3f" / "notes.summary.gz").write_bytes(b"")
    # WHEN the store is asked which wheels it holds; THEN both, sorted, and nothing else
    assert Cache(tmp_path, readonly=True).summarized_wheels() == [WHEEL_SHA, "ab" * 32]
    assert Cache(tmp_path / "empty", readonly=True).summarized_wheels() == []


def _partial(facts: WheelFacts) -> WheelFacts:
    """``facts`` as a solve's partial read leaves them: the extension module not read."""
    return dataclasses.replace(facts, elf=(), unread=("sgl_kernel/common_ops.abi3.so",))


def test_partial_facts_are_a_miss_unless_asked_for_and_complete_facts_replace_them(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    # GIVEN partial facts stored
    cache.store_facts(_partial(make_facts()))
    # THEN only a caller that accepts partial facts gets them (or their summary)
    assert cache.load_facts(WHEEL_SHA) is None
    assert cache.load_summary(WHEEL_SHA) is None
    assert cache.load_facts(WHEEL_SHA, allow_partial=True) == _partial(make_facts())
    assert cache.load_summary(WHEEL_SHA, allow_partial=True) == _partial(make_facts()).summary()
    # WHEN the complete facts are stored
    cache.store_facts(make_facts())
    # THEN they replace the partial entry, summary included
    assert cache.load_facts(WHEEL_SHA) == make_facts()
    assert cache.load_summary(WHEEL_SHA) == make_facts().summary()


def test_partial_facts_never_replace_complete_ones(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.store_facts(make_facts())
    before = {p: p.read_bytes() for p in files_under(tmp_path, "*.gz")}
    cache.store_facts(_partial(make_facts()))
    assert {p: p.read_bytes() for p in files_under(tmp_path, "*.gz")} == before
    assert cache.load_summary(WHEEL_SHA) == make_facts().summary()


def test_merging_partial_reads_keeps_member_order_and_shrinks_unread() -> None:
    full = make_facts()
    extra = dataclasses.replace(full.elf[0], path="sgl_kernel/aaa.so")
    files = ("sgl_kernel/aaa.so", *full.files)
    first = dataclasses.replace(full, files=files, unread=("sgl_kernel/aaa.so",))
    second = dataclasses.replace(full, files=files, elf=(extra,), unread=("sgl_kernel/common_ops.abi3.so",))
    merged = first.merged(second)
    assert [e.path for e in merged.elf] == ["sgl_kernel/aaa.so", "sgl_kernel/common_ops.abi3.so"]
    assert merged.unread == ()
    with pytest.raises(ValueError, match="cannot merge"):
        first.merged(make_facts("4a" * 32))


def test_metadata_round_trip_by_sha_and_by_url(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.store_metadata(WHEEL_SHA, b"Metadata-Version: 2.1\nName: torch\n")
    cache.store_metadata("https://example.test/torch-2.9.1.whl.metadata", b"Name: other\n")
    assert cache.load_metadata(WHEEL_SHA.upper()) == b"Metadata-Version: 2.1\nName: torch\n"
    assert cache.load_metadata("https://example.test/torch-2.9.1.whl.metadata") == b"Name: other\n"


def test_host_notes_round_trip_and_forget(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.set_host_note("flashinfer.ai", "ignores_ranges", True)
    cache.set_host_note("flashinfer.ai", "max_connections", 4)
    cache.set_host_note("flashinfer.ai", "max_connections", None)
    assert Cache(tmp_path).host_note("FLASHINFER.AI", "ignores_ranges") is True
    assert Cache(tmp_path).host_note("flashinfer.ai", "max_connections") is None


def test_a_host_note_left_for_a_url_is_found_by_its_host(tmp_path: Path) -> None:
    # GIVEN a note the range reader left for a wheel URL with credentials in it
    Cache(tmp_path).set_host_note("https://user:pw@Download.PyTorch.org/whl/x.whl", "ignores_ranges", True)
    # THEN the one host normaliser keys it by host: a bare host name finds it, no credential is stored
    assert Cache(tmp_path).host_note("download.pytorch.org", "ignores_ranges") is True
    assert "pw" not in "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())


def test_host_note_that_is_not_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match="not JSON-serialisable"):
        Cache(tmp_path).set_host_note("flashinfer.ai", "when", object())


def test_facts_without_a_valid_sha_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match="no valid lower-case sha256"):
        Cache(tmp_path).store_facts(make_facts(sha256="not-a-hash"))


def test_miss_is_none_for_every_kind(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "never-created")
    assert (cache.load_page(PAGE_URL), cache.load_facts(WHEEL_SHA), cache.load_metadata(WHEEL_SHA)) == (
        None,
        None,
        None,
    )
    assert cache.host_note("flashinfer.ai", "x") is None


def test_staleness_is_measured_from_the_last_fetch(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    cache.store_page(
        CachedPage("https://flashinfer.ai/whl/cu130/", b"x", "text/html", None, None, 1_700_100_000.0)
    )
    stale = cache.stale_pages(3600, now=1_700_003_600.5)
    assert [(p.url, p.age_s) for p in stale] == [(PAGE_URL, 3600.5)]
    assert is_stale(make_page(), 3600, now=1_700_003_600.5) is True
    assert is_stale(make_page(), 3600, now=1_700_003_600.0) is False


def test_unusable_root_reads_as_misses_and_refuses_writes(tmp_path: Path) -> None:
    # GIVEN a cache root that is a plain file
    root = tmp_path / "not-a-dir"
    root.write_bytes(b"")
    cache = Cache(root)
    # THEN reads miss, and writes and locks raise one readable CacheError
    assert cache.load_page(PAGE_URL) is None
    with pytest.raises(CacheError, match="cannot create the cache"):
        cache.store_facts(make_facts())
    with pytest.raises(CacheError, match="cannot lock the cache"), cache.lock():
        pass


# credentials


def test_credentials_never_reach_the_disk(tmp_path: Path) -> None:
    # GIVEN a page, metadata and a host note reached through URLs that carry credentials
    cache = Cache(tmp_path)
    cache.store_page(make_page(url="https://user:secret@host.example/simple/x/?token=secret"))
    cache.store_metadata("https://user:secret@host.example/x-1.whl.metadata", b"Name: x\n")
    cache.set_host_note("user:secret@host.example", "ignores_ranges", True)
    # THEN no file under the cache root holds the secret (gzip members included)
    leaks = [
        p for p in files_under(tmp_path, "*") if b"secret" in p.read_bytes() or b"secret" in _gunzipped(p)
    ]
    assert leaks == []
    # AND the entries are found under the credential-free URL
    page = cache.load_page("https://host.example/simple/x/")
    assert page is not None and page.url == "https://host.example/simple/x/"
    assert cache.load_metadata("https://host.example/x-1.whl.metadata") == b"Name: x\n"
    assert cache.host_note("host.example", "ignores_ranges") is True


def _gunzipped(path: Path) -> bytes:
    if path.suffix != ".gz":
        return b""
    return gzip.decompress(path.read_bytes())


def test_strip_credentials_keeps_harmless_parts() -> None:
    assert strip_credentials(
        "HTTPS://me:pw@Download.PyTorch.org:8443/whl/?a=1&api_key=k&X-Amz-Signature=s#f"
    ) == ("https://download.pytorch.org:8443/whl/?a=1#f")


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=3, max_size=20))
def test_strip_credentials_drops_any_userinfo_and_token(secret: str) -> None:
    stripped = strip_credentials(f"https://{secret}x:{secret}y@flashinfer.ai/whl/?token={secret}z")
    assert stripped == "https://flashinfer.ai/whl/"


_URL_PIECES = st.sampled_from(
    ["http", "https", "file", "HTTPS", "ftp", "://", ":", "/", "//", "@", "?", "#", "%2F", "[", "]", "::1",
     "\\", " ", "\t", "\n", "\x01", "é", ".", "-", "a", "Z", "0", "8", "443", "65535", "65536", "00",
     "host", "Host", "x.org", "token=s", "a=1", "&", "sha256=ab", "simple", "files"]
)  # fmt: skip


@settings(max_examples=500)
@given(st.sampled_from(["", "http://", "https://", "file://", "http://h"]), st.lists(_URL_PIECES, max_size=9))
def test_strip_credentials_fast_path_gives_what_parsing_gives(start: str, pieces: list[str]) -> None:
    # the URLs given back as they are must be exactly those that parsing and rebuilding leaves alone
    url = start + "".join(pieces)
    assert strip_credentials(url) == _strip_credentials_parsed(url)


def test_strip_credentials_gives_plain_index_urls_back_as_they_are() -> None:
    for url in (
        "https://files.example.org/packages/ab/cd/torch-2.11.0-cp312-cp312-linux_x86_64.whl#sha256=00ff",
        "http://127.0.0.1:8080/simple/demo/",
        "file:///opt/wheels/demo-1.0-py3-none-any.whl",
    ):
        assert strip_credentials(url) == url == _strip_credentials_parsed(url)


# corruption


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(b'{"schema": 1, "kind": ')


DAMAGE: dict[str, Callable[[Path], None]] = {"flip": _flip, "truncate": _truncate, "garbage": _garbage}


def _stored(tmp_path: Path, kind: str) -> tuple[Cache, Path, Callable[[], object]]:
    cache = Cache(tmp_path)
    if kind == "page":
        cache.store_page(make_page())
        return cache, files_under(tmp_path, "*.json")[-1], lambda: cache.load_page(PAGE_URL)
    if kind == "body":
        cache.store_page(make_page())
        return cache, files_under(tmp_path, "*.body.gz")[0], lambda: cache.load_page(PAGE_URL)
    if kind == "facts":
        cache.store_facts(make_facts())
        return cache, files_under(tmp_path, "*.facts.gz")[0], lambda: cache.load_facts(WHEEL_SHA)
    cache.store_metadata(WHEEL_SHA, b"Metadata-Version: 2.1\nName: torch\n" * 20)
    return cache, files_under(tmp_path, "*.metadata")[0], lambda: cache.load_metadata(WHEEL_SHA)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("kind", ["page", "body", "facts", "metadata"])
def test_damaged_entry_is_a_miss_and_is_removed(tmp_path: Path, kind: str, damage: str) -> None:
    # GIVEN a stored entry whose file is then damaged
    _cache, path, load = _stored(tmp_path, kind)
    DAMAGE[damage](path)
    # WHEN it is loaded
    # THEN the load is a miss and the damaged file is gone
    assert load() is None
    assert not path.exists()


@pytest.mark.parametrize("kind", ["facts", "metadata"])
def test_entry_filed_under_another_key_is_a_miss(tmp_path: Path, kind: str) -> None:
    # GIVEN an intact entry copied to the name of another wheel's sha256
    cache, path, _load = _stored(tmp_path, kind)
    other = "0a" * 32
    target = path.parent.parent / other[:2] / path.name.replace(WHEEL_SHA, other)
    target.parent.mkdir(parents=True)
    target.write_bytes(path.read_bytes())
    # THEN loading the other key is a miss and the misfiled copy is removed
    loaded = cache.load_facts(other) if kind == "facts" else cache.load_metadata(other)
    assert loaded is None
    assert not target.exists()


def test_page_filed_under_another_url_is_a_miss(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    other = "https://download.pytorch.org/whl/cu130/torchvision/"
    (meta,) = files_under(tmp_path, "*.json")
    other_hash = sha256_hex(other.encode())
    wrong = meta.parent.parent / other_hash[:2] / f"{other_hash}.json"
    wrong.parent.mkdir(parents=True, exist_ok=True)
    wrong.write_bytes(meta.read_bytes())
    assert cache.load_page(other) is None
    assert not wrong.exists()


def test_damaged_host_notes_read_as_empty(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.set_host_note("flashinfer.ai", "ignores_ranges", True)
    _flip(tmp_path / "hosts.json")
    assert cache.host_note("flashinfer.ai", "ignores_ranges") is None
    assert not (tmp_path / "hosts.json").exists()


def test_entry_of_another_schema_is_a_miss_left_in_place(tmp_path: Path) -> None:
    # GIVEN a page entry rewritten as a future schema would write it, with a valid digest
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    (meta,) = files_under(tmp_path, "*.json")
    record = json.loads(meta.read_bytes())
    del record["digest"]
    record["schema"] = 99
    record["digest"] = sha256_hex(canonical_json(record))
    meta.write_bytes(pretty_json(record))
    # THEN it is a miss, but not deleted: it is not damage
    assert cache.load_page(PAGE_URL) is None
    assert meta.exists()


def test_facts_of_another_facts_schema_are_a_miss_then_replaced(tmp_path: Path) -> None:
    # GIVEN facts stored by a build whose facts schema differs
    cache = Cache(tmp_path)
    cache.store_facts(dataclasses.replace(make_facts(), schema_version=99))
    # THEN they are a miss, and storing current facts replaces them
    assert cache.load_facts(WHEEL_SHA) is None
    cache.store_facts(make_facts())
    assert cache.load_facts(WHEEL_SHA) == make_facts()


def test_readonly_cache_never_writes(tmp_path: Path) -> None:
    # GIVEN a populated cache with one damaged facts entry, opened read-only
    Cache(tmp_path).store_page(make_page())
    Cache(tmp_path).store_facts(make_facts())
    (facts_file,) = files_under(tmp_path, "*.facts.gz")
    _flip(facts_file)
    before = {p: p.read_bytes() for p in files_under(tmp_path, "*")}
    cache = Cache(tmp_path, readonly=True)
    # WHEN it is used for every kind of read and write
    assert cache.load_facts(WHEEL_SHA) is None
    cache.store_page(make_page(body=b"changed"))
    cache.touch_page(PAGE_URL, 1.0)
    cache.store_facts(make_facts(sha256="0b" * 32))
    cache.store_metadata(WHEEL_SHA, b"x")
    cache.set_host_note("flashinfer.ai", "x", 1)
    with cache.lock():
        pass
    # THEN not one file changed, appeared or disappeared
    assert {p: p.read_bytes() for p in files_under(tmp_path, "*")} == before
    with pytest.raises(CacheError, match="read-only"):
        cache.prune()


# maintenance through the CLI


def test_cli_info_counts_entries_per_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    cache.store_facts(make_facts())
    cache.store_facts(make_facts(sha256="0c" * 32))
    assert cli("info", "--json", "--cache-dir", str(tmp_path)) == 0
    doc = assert_valid(json.loads(capsys.readouterr().out), "cache")
    counts = {kind: stats["count"] for kind, stats in doc["kinds"].items()}
    assert counts == {
        "pages": 1, "bodies": 1, "facts": 2, "summaries": 2, "analyses": 0, "metadata": 0, "hosts": 0
    }  # fmt: skip
    assert doc["oldest_page"]["url"] == PAGE_URL


def test_cli_info_renders_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Cache(tmp_path).store_facts(make_facts())
    assert cli("info", "--cache-dir", str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "facts" in out and "total" in out


def test_cli_verify_fails_on_damage_and_keeps_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a cache with one intact page and one damaged facts entry
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    cache.store_facts(make_facts())
    (facts_file,) = files_under(tmp_path, "*.facts.gz")
    _truncate(facts_file)
    # WHEN verified without repair
    code = cli("verify", "--json", "--cache-dir", str(tmp_path))
    # THEN it exits 1, names the entry, and leaves it in place
    doc = assert_valid(json.loads(capsys.readouterr().out), "cache")
    assert code == 1
    assert [(p["kind"], p["path"], p["removed"]) for p in doc["problems"]] == [
        ("corrupt", str(facts_file.relative_to(tmp_path)), False)
    ]
    assert facts_file.exists()


def test_cli_verify_repair_removes_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    (body,) = files_under(tmp_path, "*.body.gz")
    _flip(body)
    assert cli("verify", "--repair", "--cache-dir", str(tmp_path)) == 0
    assert files_under(tmp_path / "pages", "*") == []
    capsys.readouterr()
    assert cli("verify", "--cache-dir", str(tmp_path)) == 0
    assert "all entries intact" in capsys.readouterr().out


def test_cli_verify_of_intact_cache_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = Cache(tmp_path)
    cache.store_page(make_page())
    cache.store_facts(make_facts())
    cache.store_metadata(WHEEL_SHA, b"Name: x\n")
    cache.set_host_note("flashinfer.ai", "ignores_ranges", True)
    cache.store_analysis("ab" * 32, [{"check": "files", "status": "ok"}])
    assert cli("verify", "--json", "--cache-dir", str(tmp_path)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["checked"] == {
        "pages": 1, "bodies": 1, "facts": 1, "summaries": 1, "analyses": 1, "metadata": 1, "hosts": 1
    }  # fmt: skip
    assert doc["problems"] == []


def test_cli_verify_notes_orphan_body_without_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a body whose page entry is gone
    Cache(tmp_path).store_page(make_page())
    (meta,) = files_under(tmp_path, "*.json")
    meta.unlink()
    (body,) = files_under(tmp_path, "*.body.gz")
    # WHEN verified, THEN it passes and names the orphan; repair removes it
    assert cli("verify", "--json", "--cache-dir", str(tmp_path)) == 0
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [(p["kind"], p["path"]) for p in problems] == [("orphan", str(body.relative_to(tmp_path)))]
    assert cli("verify", "--repair", "--cache-dir", str(tmp_path)) == 0
    assert not body.exists()


def test_cli_uses_the_cache_dir_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ABIPROBE_CACHE_DIR", str(tmp_path / "from-env"))
    assert cli("info", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["root"], doc["exists"]) == (str(tmp_path / "from-env"), False)


def test_cli_prune_older_than_keeps_recent_pages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN one page fetched ten days ago and one fetched now, plus facts
    cache = Cache(tmp_path)
    cache.store_page(CachedPage(PAGE_URL, b"old", "text/html", None, None, time.time() - 10 * 86400))
    fresh_url = "https://flashinfer.ai/whl/cu130/flashinfer-jit-cache/"
    cache.store_page(CachedPage(fresh_url, b"new", "text/html", None, None, time.time()))
    cache.store_facts(make_facts())
    # WHEN pages older than a week are pruned
    assert cli("prune", "--older-than", "7", "--json", "--cache-dir", str(tmp_path)) == 0
    # THEN only the old page and its body went; facts stay without --facts
    assert assert_valid(json.loads(capsys.readouterr().out), "cache")["removed"] == {"pages": 1, "bodies": 1}
    assert cache.load_page(PAGE_URL) is None
    assert cache.load_page(fresh_url) is not None
    assert cache.load_facts(WHEEL_SHA) == make_facts()


def test_cli_prune_facts_removes_facts_and_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = Cache(tmp_path)
    cache.store_facts(make_facts())
    cache.store_metadata(WHEEL_SHA, b"Name: x\n")
    assert cli("prune", "--facts", "--cache-dir", str(tmp_path)) == 0
    assert "freed" in capsys.readouterr().out
    assert (cache.load_facts(WHEEL_SHA), cache.load_metadata(WHEEL_SHA)) == (None, None)


def test_cli_prune_rejects_negative_age(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("prune", "--older-than", "-1", "--cache-dir", str(tmp_path)) == 2
    assert "--older-than" in capsys.readouterr().err


# location


def test_cache_dir_env_wins(tmp_path: Path) -> None:
    env = {"ABIPROBE_CACHE_DIR": str(tmp_path / "explicit"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert default_cache_root(tmp_path, env) == tmp_path / "explicit"


def test_repository_cache_dir_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "wheel_index_cache").mkdir()
    (tmp_path / "src" / "deep").mkdir(parents=True)
    assert default_cache_root(tmp_path / "src" / "deep", {}) == tmp_path / "wheel_index_cache"


def test_user_cache_dir_is_the_fallback(tmp_path: Path) -> None:
    assert (
        default_cache_root(tmp_path, {"XDG_CACHE_HOME": str(tmp_path / "xdg")})
        == tmp_path / "xdg" / "abiprobe"
    )


# concurrency and crashes


def test_lock_is_reentrant_across_cache_objects_of_one_process(tmp_path: Path) -> None:
    first, second = Cache(tmp_path), Cache(tmp_path)
    with first.lock(), second.lock(), first.lock():
        second.set_host_note("flashinfer.ai", "n", 1)
    assert first.host_note("flashinfer.ai", "n") == 1


def _writer(root: str, worker: int, rounds: int) -> None:
    cache = Cache(Path(root))
    for i in range(rounds):
        with cache.lock():
            count = cache.host_note("shared.test", "counter")
            cache.set_host_note("shared.test", "counter", (count if isinstance(count, int) else 0) + 1)
        cache.store_page(
            make_page(url=f"https://shared.test/simple/p{i % 3}/", body=f"{worker}:{i}".encode())
        )
        cache.store_facts(make_facts(sha256=f"{i % 4:064x}"))


def test_concurrent_writers_leave_a_consistent_cache(tmp_path: Path) -> None:
    # GIVEN four processes that each store pages, facts and a locked read-modify-write counter
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_writer, args=(str(tmp_path), w, 25)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    # THEN no increment was lost, every entry verifies, and every page is one writer's whole body
    cache = Cache(tmp_path)
    assert cache.host_note("shared.test", "counter") == 100
    report = cache.verify()
    assert (report.problems, report.checked["pages"], report.checked["bodies"], report.checked["facts"]) == (
        (),
        3,
        3,
        4,
    )
    for i in range(3):
        page = cache.load_page(f"https://shared.test/simple/p{i}/")
        assert page is not None and page.body.split(b":")[1] in {str(n).encode() for n in range(25)}


CRASH_WRITER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from abiprobe.store.cache import Cache
    from abiprobe.store.primitives import HOLD_WRITE
    cache = Cache(Path(sys.argv[1]))
    payload = b"X-Filler: " + b"abcdefgh" * (128 * 1024)  # one 1 MiB header line
    for i in range(3):
        cache.store_metadata(f"{i:064x}", payload + str(i).encode())
    os.environ[HOLD_WRITE] = sys.argv[2]  # the next write stops half-way, held on this FIFO
    cache.store_metadata(f"{3:064x}", payload + b"3")
    """
)


def _visible_entries_are_whole(cache: Cache) -> bool:
    payload = b"X-Filler: " + b"abcdefgh" * (128 * 1024)
    loaded = [cache.load_metadata(f"{i:064x}") for i in range(4)]
    whole = [d is not None and d.startswith(payload) and d[len(payload) :].strip() == str(i).encode()
             for i, d in enumerate(loaded[:3])]  # fmt: skip
    return loaded[3] is None and all(whole)


def test_killed_writer_leaves_no_half_entry(tmp_path: Path) -> None:
    # GIVEN a process that stored three entries and is held half-way through writing a fourth
    root, fifo = tmp_path / "cache", tmp_path / "hold"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", CRASH_WRITER, str(root), str(fifo)], env=env)
    temp = held_write(fifo, child, 120.0)
    assert temp.is_file() and temp.stat().st_size > 0
    # WHEN it is killed there
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    # THEN its unfinished temp file is left, no visible entry is damaged, and each one loads whole
    assert temp.exists()
    assert Cache(root).verify().corrupt == ()
    assert _visible_entries_are_whole(Cache(root))
    # AND the only leftovers are temp files, which repair removes
    report = Cache(root).verify(repair=True)
    assert {p.kind for p in report.problems} == {"temp"}
    assert list(root.rglob(".tmp-*")) == []


def test_big_facts_entry_is_compact(tmp_path: Path) -> None:
    # GIVEN facts of a big library: 80k exported C++ symbols
    facts = make_facts(symbols=80_000)
    cache = Cache(tmp_path)
    cache.store_facts(facts)
    # THEN the entry is a few hundred KiB on disk and reads back whole
    (entry,) = files_under(tmp_path, "*.facts.gz")
    assert entry.stat().st_size < 1_000_000
    assert cache.load_facts(WHEEL_SHA) == facts


def test_summary_is_stored_with_facts_and_a_damaged_one_is_a_miss(tmp_path: Path) -> None:
    # GIVEN facts stored once: their summary is stored beside them and says the same
    cache = Cache(tmp_path)
    facts = make_facts()
    cache.store_facts(facts)
    assert cache.load_summary(WHEEL_SHA) == facts.summary()
    assert cache.load_summary(WHEEL_SHA).needed == ("libc10.so", "libcudart.so.13", "libc.so.6")  # type: ignore[union-attr]
    # WHEN the summary is damaged
    (summary_file,) = files_under(tmp_path, "*.summary.gz")
    _flip(summary_file)
    # THEN it reads as a miss and is dropped, the full facts are untouched, and storing them again
    # brings the summary back
    assert cache.load_summary(WHEEL_SHA) is None
    assert not summary_file.exists()
    assert cache.load_facts(WHEEL_SHA) == facts
    cache.store_facts(facts)
    assert cache.load_summary(WHEEL_SHA) == facts.summary()
    # AND verify names a damaged one
    _truncate(summary_file)
    report = cache.verify()
    damaged = str(summary_file.relative_to(tmp_path))
    assert [(p.kind, p.path) for p in report.problems] == [("corrupt", damaged)]


def test_verify_checks_stored_analyses(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.store_analysis("ab" * 32, [{"check": "files", "status": "ok"}])
    assert cache.load_analysis("ab" * 32) == [{"check": "files", "status": "ok"}]
    (entry,) = files_under(tmp_path, "*.analysis.gz")
    _garbage(entry)
    report = cache.verify(repair=True)
    assert [(p.kind, p.removed) for p in report.problems] == [("corrupt", True)]
    assert not entry.exists()


def test_metadata_naming_the_registry_is_stored_with_tokens_and_read_back_whole(tmp_path: Path) -> None:
    from abiprobe.model.hosts import concrete

    # GIVEN METADATA whose project URLs name the default registry (its host read from pip at run time)
    text = f"Name: x\nProject-URL: Page, https://{concrete('{registry}')}/project/x/\n".encode()
    assert b"{registry}" not in text
    cache = Cache(tmp_path)
    cache.store_metadata(WHEEL_SHA, text)
    # THEN the file on disk names no registry host, and reading gives the original bytes
    (stored,) = files_under(tmp_path, "*.metadata")
    assert concrete("{registry}").encode() not in stored.read_bytes()
    assert cache.load_metadata(WHEEL_SHA) == text


def test_stored_metadata_keeps_the_headers_and_drops_the_description(tmp_path: Path) -> None:
    # GIVEN a METADATA file with a Description header and a long description body naming other hosts
    text = (
        b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: numpy>=1\n"
        b"Description: old style\n        | see https://mirror.example.org/demo\n"
        b"Requires-Python: >=3.9\n\nBody naming https://docs.example.org/demo\n"
    )
    cache = Cache(tmp_path)
    cache.store_metadata("demo-1.0-py3-none-any.whl", text)
    # WHEN it is read back
    got = cache.load_metadata("demo-1.0-py3-none-any.whl")
    # THEN every header abiprobe reads is there, and no description text is
    assert got == (
        b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: numpy>=1\nRequires-Python: >=3.9\n"
    )


def test_info_text_names_the_oldest_and_newest_page_and_unfinished_writes() -> None:
    from abiprobe.report.cache_text import render_info
    from abiprobe.store.maintenance import CacheInfo, KindStats, StalePage

    # GIVEN a cache report with two pages fetched at known moments and two abandoned temp files
    info = CacheInfo(
        "/c",
        True,
        True,
        {"pages": KindStats(2, 2048), "facts": KindStats(1, 3 * 1024**3)},
        temp_files=2,
        oldest_page=StalePage("http://a/simple/x/", 1_700_000_000.0, 5.0),
        newest_page=StalePage("http://b/simple/y/", 1_800_000_000.0, 1.0),
    )
    # WHEN it is rendered
    parts = render_info(info.to_json())
    # THEN the lines say when each was fetched (UTC) and how to clean up; the total is in the table
    assert parts[0] == "cache: [bold]/c[/bold]"
    assert parts[-3:] == [
        "oldest page: 2023-11-14 22:13 UTC  http://a/simple/x/",
        "newest page: 2027-01-15 08:00 UTC  http://b/simple/y/",
        "2 unfinished write(s) left behind; `abiprobe cache verify --repair`",
    ]


def test_cache_info_prints_a_root_with_square_brackets_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from abiprobe.cli import main

    # GIVEN a cache folder whose name holds square brackets
    root = tmp_path / "cache[old]"
    # WHEN cache info and cache verify print it
    assert main(["cache", "info", "--cache-dir", str(root)]) == 0
    assert main(["cache", "verify", "--cache-dir", str(root)]) == 0
    out = capsys.readouterr().out
    # THEN the name is printed whole both times (not read as rich markup)
    assert out.count(f"{root}") == 2, out
