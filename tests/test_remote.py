"""RemoteZip over a real local HTTP server: byte budgets, range fallbacks, faults, hashes."""

from __future__ import annotations

import io
import os
import re
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.indexserver import IndexServer
from support.wheelbuild import build_wheel

from abiprobe.analyze.preloads import preload_pattern
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.binary.zipdir import locate_central_directory, parse_central_directory
from abiprobe.errors import FetchError, HashMismatchError, WheelFormatError
from abiprobe.index.client import IndexClient
from abiprobe.model.stack import default_stack
from abiprobe.net.http import Http
from abiprobe.net.remote_wheel import NOTE_IGNORES_RANGES, RemoteZip
from abiprobe.store.cache import Cache
from abiprobe.store.reads import WheelReads

BUILT_IN_PRELOADS = preload_pattern(default_stack().loading())

LIB_C = "int demo_value(void) { return 42; }\n"
EXT_C = "extern int demo_value(void);\nint PyInit__ext(void) { return demo_value(); }\n"


@pytest.fixture(scope="session")
def elf_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("remote-elf")
    lib = build_shared(out, "libdemo.so", LIB_C, soname="libdemo.so")
    ext = build_shared(out, "_ext.so", EXT_C, link=[lib], runpath=["$ORIGIN"])
    return {"demo/libdemo.so": lib.read_bytes(), "demo/_ext.so": ext.read_bytes()}


@pytest.fixture(scope="session")
def padded_wheel(tmp_path_factory: pytest.TempPathFactory, elf_files: dict[str, bytes]) -> Path:
    """ELF members between 100 stored 1 MiB members of random bytes (about 100 MiB in all)."""
    block = os.urandom(1 << 20)
    files: dict[str, bytes] = {}
    for i in range(100):
        files[f"demo/data/pad{i:03d}.bin"] = block
        if i == 40:
            files["demo/libdemo.so"] = elf_files["demo/libdemo.so"]
        if i == 80:
            files["demo/_ext.so"] = elf_files["demo/_ext.so"]
    out = tmp_path_factory.mktemp("padded")
    return build_wheel(out, "demo", "1.0", files, compression=zipfile.ZIP_STORED)


@pytest.fixture(scope="session")
def small_wheel(tmp_path_factory: pytest.TempPathFactory, elf_files: dict[str, bytes]) -> Path:
    files = {**elf_files, "demo/__init__.py": b"from demo._ext import *\n" * 50}
    return build_wheel(tmp_path_factory.mktemp("small"), "demo", "2.0+cu130", files)


@pytest.fixture(scope="session")
def many_members_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {f"demo/data/some_rather_long_member_name_{i:05d}.txt": b"x" for i in range(3000)}
    return build_wheel(tmp_path_factory.mktemp("many"), "demo", "3.0", files, compression=zipfile.ZIP_STORED)


@pytest.fixture
def server() -> Iterator[IndexServer]:
    with IndexServer() as srv:
        yield srv


@pytest.fixture
def http() -> Iterator[Http]:
    with Http(timeout=10.0, retries=3, backoff=0.0) as client:
        yield client


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path / "cache")


def test_reading_elf_members_transfers_under_a_tenth_of_the_wheel(
    server: IndexServer, http: Http, padded_wheel: Path, elf_files: dict[str, bytes]
) -> None:
    # GIVEN a ~100 MiB wheel whose two ELF members sit among stored padding
    served = server.add_wheel(padded_wheel)
    # WHEN only the ELF members are read
    with RemoteZip(http, server.file_url(served.filename), served.sha256) as remote:
        got = remote.read_members(["demo/libdemo.so", "demo/_ext.so"])
        contents = {name: fh.read() for name, fh in got.items()}
    # THEN their bytes are exact and under 10% of the wheel crossed the wire
    assert contents == elf_files
    assert server.bytes_served[served.path] < served.size // 10
    assert http.bytes_received < served.size // 10
    assert server.requests[served.path] == 3


def test_central_directory_comes_from_one_suffix_range(
    server: IndexServer, http: Http, padded_wheel: Path
) -> None:
    served = server.add_wheel(padded_wheel)
    with RemoteZip(http, server.file_url(served.filename)) as remote:
        names = remote.names()
    assert len(names) == 105
    assert [(p, h.get("range")) for p, h, _ in server.log] == [(served.path, "bytes=-65536")]
    assert remote.size == served.size


def test_large_central_directory_costs_exactly_one_more_range(
    server: IndexServer, http: Http, many_members_wheel: Path
) -> None:
    served = server.add_wheel(many_members_wheel)
    with RemoteZip(http, server.file_url(served.filename)) as remote:
        assert len(remote.names()) == 3003
    ranges = [h["range"] for _, h, _ in server.log]
    assert len(ranges) == 2 and ranges[0] == "bytes=-65536"
    assert re.fullmatch(r"bytes=\d+-\d+", ranges[1])


def test_deflated_members_match_zipfile(server: IndexServer, http: Http, small_wheel: Path) -> None:
    served = server.add_wheel(small_wheel)
    with zipfile.ZipFile(small_wheel) as zf:
        expected = {n: zf.read(n) for n in zf.namelist()}
    with RemoteZip(http, server.file_url(served.filename)) as remote:
        got = {n: fh.read() for n, fh in remote.read_members(remote.names()).items()}
    assert got == expected


def test_adjacent_members_share_one_request(server: IndexServer, http: Http, small_wheel: Path) -> None:
    served = server.add_wheel(small_wheel)
    with RemoteZip(http, server.file_url(served.filename)) as remote:
        remote.read_members(remote.names())
    assert server.requests[served.path] == 2


def test_remote_facts_equal_local_facts_apart_from_nothing(
    server: IndexServer, http: Http, small_wheel: Path
) -> None:
    served = server.add_wheel(small_wheel)
    with RemoteZip(http, server.file_url(served.filename), served.sha256) as remote:
        facts = remote.facts(served.filename, unread_sources=BUILT_IN_UNREAD)
    assert facts == wheel_facts_from_path(small_wheel, unread_sources=BUILT_IN_UNREAD)


def test_literal_plus_and_quoted_urls_read_the_same_file(
    server: IndexServer, http: Http, small_wheel: Path
) -> None:
    served = server.add_wheel(small_wheel)
    plus_url = f"{server.url}/files/{served.filename}"
    assert "+" in plus_url and "%2B" in server.file_url(served.filename)
    with RemoteZip(http, plus_url) as a, RemoteZip(http, server.file_url(served.filename)) as b:
        assert a.names() == b.names()


def test_no_range_server_gets_one_full_download_and_a_host_note(
    server: IndexServer, http: Http, cache: Cache, small_wheel: Path
) -> None:
    # GIVEN a server that ignores Range
    served = server.add_wheel(small_wheel)
    server.fail(match="/files/", no_ranges=True)
    # WHEN a member is read
    with RemoteZip(http, server.file_url(served.filename), served.sha256, cache=cache) as remote:
        remote.read_members(["demo/_ext.so"])
        assert (remote.mode, remote.sha256) == ("full", served.sha256)
    # THEN one request fetched it all and the host is remembered
    assert server.requests[served.path] == 1
    assert cache.host_note(server.url, NOTE_IGNORES_RANGES) is True


def test_remembered_host_goes_straight_to_full_download(
    server: IndexServer, http: Http, cache: Cache, small_wheel: Path
) -> None:
    served = server.add_wheel(small_wheel)
    cache.set_host_note(server.url, NOTE_IGNORES_RANGES, True)
    with RemoteZip(http, server.file_url(served.filename), served.sha256, cache=cache) as remote:
        remote.names()
    assert [h.get("range") for _, h, _ in server.log] == [None]


def test_wrong_index_hash_raises_and_stores_no_facts(
    server: IndexServer, http: Http, cache: Cache, small_wheel: Path
) -> None:
    # GIVEN a page listing a wrong hash and a server that ignores ranges
    server.add_wheel(small_wheel, wrong_hash=True)
    server.fail(match="/files/", no_ranges=True)
    (candidate,) = IndexClient([server.index_url], cache, http).list_project("demo").candidates
    # WHEN its facts are read THEN the hash mismatch is one error and nothing is cached
    with pytest.raises(HashMismatchError, match="does not match the index's 0000"):
        WheelReads(http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD).facts(
            candidate.file
        )
    assert cache.load_facts("0" * 64) is None


def test_remote_facts_are_cached_by_sha256(
    server: IndexServer, http: Http, cache: Cache, small_wheel: Path
) -> None:
    served = server.add_wheel(small_wheel)
    (candidate,) = IndexClient([server.index_url], cache, http).list_project("demo").candidates
    first = WheelReads(http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD).facts(
        candidate.file
    )
    server.reset_counts()
    second = WheelReads(http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD).facts(
        candidate.file
    )
    assert first == second and first.sha256 == served.sha256
    assert server.requests[served.path] == 0


def test_500s_then_ok_still_read_members(server: IndexServer, http: Http, small_wheel: Path) -> None:
    served = server.add_wheel(small_wheel)
    server.fail(match="/files/", status=500, times=2)
    with RemoteZip(http, server.file_url(served.filename)) as remote:
        assert remote.read_members(["demo/_ext.so"])["demo/_ext.so"].read(4) == b"\x7fELF"


def test_reset_once_mid_member_is_retried(server: IndexServer, http: Http, small_wheel: Path) -> None:
    served = server.add_wheel(small_wheel)
    with RemoteZip(http, server.file_url(served.filename)) as remote:
        remote.names()
        server.fail(match="/files/", reset_after=100, times=1)
        assert remote.read_members(["demo/libdemo.so"])["demo/libdemo.so"].read(4) == b"\x7fELF"


def test_always_truncated_members_end_in_one_error(
    server: IndexServer, http: Http, small_wheel: Path
) -> None:
    served = server.add_wheel(small_wheel)
    with RemoteZip(http, server.file_url(served.filename)) as remote:
        remote.names()
        server.fail(match="/files/", truncate_after=100)
        with pytest.raises(FetchError, match=r"connection broke off .*\(after 3 attempts\)"):
            remote.read_members(["demo/libdemo.so"])


def test_wrong_content_range_ends_in_one_error(server: IndexServer, http: Http, small_wheel: Path) -> None:
    served = server.add_wheel(small_wheel)
    server.fail(match="/files/", wrong_content_range=True)
    with (
        RemoteZip(http, server.file_url(served.filename)) as remote,
        pytest.raises(FetchError, match=r"is not the requested tail \(after 3 attempts\)"),
    ):
        remote.names()


def test_not_a_zip_is_a_wheel_format_error(server: IndexServer, http: Http, tmp_path: Path) -> None:
    bogus = tmp_path / "demo-1.0-py3-none-any.whl"
    bogus.write_bytes(b"this is not a zip file" * 100)
    served = server.add_wheel(bogus, metadata=False)
    with (
        RemoteZip(http, server.file_url(served.filename)) as remote,
        pytest.raises(WheelFormatError, match="no end-of-central-directory record"),
    ):
        remote.names()


def _as_zip64(data: bytes) -> bytes:
    """Rewrite a small zip's EOCD into the zip64 form (record + locator + EOCD of 0xFFFF… fields)."""
    eocd = data.rindex(b"PK\x05\x06")
    _sig, _d, _cd, _n1, entries, cd_size, cd_offset, _c = struct.unpack_from("<4sHHHHIIH", data, eocd)
    record = struct.pack(
        "<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, cd_size, cd_offset
    )
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, eocd, 1)
    new_eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return data[:eocd] + record + locator + new_eocd


def test_zip64_end_records_are_followed(small_wheel: Path) -> None:
    data = _as_zip64(small_wheel.read_bytes())
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        expected = zf.namelist()
    location = locate_central_directory(data[-4096:], len(data) - 4096, len(data), lambda a, b: data[a:b])
    directory = parse_central_directory(data[location.start : location.start + location.size], location)
    assert [m.name for m in directory.members] == expected
