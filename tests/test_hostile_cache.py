"""Hostile bytes that used to give wrong answers: a file that is not the listed hash poisons no cache
entry, and a binary member that cannot be read is a failing verdict, never a silent "OK"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support.cbuild import build_shared
from support.indexserver import IndexServer, ServedFile
from support.solve_stacks import serve, solve_argv, solve_stack
from support.stacks import ABI3_TAG, PY_TAG, _module
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.store.cache import Cache

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
TARGET = ["--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG, "--platform", "manylinux_2_28_x86_64"]


def _kernel_wheel(out: Path, soname: str, padding: int = 0) -> Path:
    """``mykernel 0.2.0`` shipping one library named ``soname``; ``padding`` random bytes make the
    library a small share of the file (so it is range-read, not read whole). Members are stored, so two
    builds with sonames of one length have one size: only the hash tells them apart."""
    lib = build_shared(out, "libk.so", "int k(void) { return 1; }\n", soname=soname)
    files: dict[str, bytes | Path] = {"mykernel/libk.so": lib}
    if padding:
        files["mykernel/data/pad.bin"] = os.urandom(padding)
    return build_wheel(out, "mykernel", "0.2.0", files, tag="py3-none-any", compression=zipfile.ZIP_STORED)


def _inspect(capsys: pytest.CaptureFixture[str], server: IndexServer, cache: Path) -> tuple[int, Any, str]:
    code = main(
        ["inspect", "mykernel==0.2.0", "--index-url", server.index_url, "--cache-dir", str(cache), "--json"]
    )
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


def _sonames(doc: Any) -> list[str]:
    (src,) = doc["sources"]
    return [o["soname"] for o in src["objects"]]


# 1. one sha256 mismatch must not poison the cache


def test_wrong_bytes_for_the_listed_hash_are_refused_and_stored_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a page listing the good build's sha256 while the file URL serves another build
    good = _kernel_wheel(tmp_path / "good", "libgood.so.1")
    bad = _kernel_wheel(tmp_path / "bad", "libevil.so.1")
    cache = tmp_path / "cache"
    with IndexServer() as server:
        served: ServedFile = server.add_wheel(good, served_from=bad)
        assert bad.stat().st_size == served.size
        # WHEN it is inspected
        code, _doc, err = _inspect(capsys, server, cache)
        # THEN the whole file was hashed as it streamed: one line, an error exit, nothing stored
        assert code == 1
        assert "does not match the index's" in err and len(err.strip().splitlines()) == 1
        store = Cache(cache)
        assert store.load_facts(served.sha256, allow_partial=True, allow_unverified=True) is None
        assert store.load_summary(served.sha256, allow_partial=True, allow_unverified=True) is None
        # WHEN the server is fixed
        served.served_from = None
        code, doc, _err = _inspect(capsys, server, cache)
    # THEN the next normal run reads the right build
    assert code == 0 and _sonames(doc) == ["libgood.so.1"]
    assert Cache(cache).load_facts(served.sha256) is not None  # stored as verified facts


def test_range_read_facts_are_unverified_and_reread_once_the_index_lists_the_file_anew(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a big wheel whose library is a small share of it, served with another build's bytes
    good = _kernel_wheel(tmp_path / "good", "libgood.so.1", padding=2 << 20)
    bad = _kernel_wheel(tmp_path / "bad", "libevil.so.1", padding=2 << 20)
    cache = tmp_path / "cache"
    with IndexServer() as server:
        served: ServedFile = server.add_wheel(good, served_from=bad)
        # WHEN it is inspected: a range read cannot know (it reads a few kB of 2 MiB)
        code, doc, _err = _inspect(capsys, server, cache)
        assert code == 0 and _sonames(doc) == ["libevil.so.1"]
        assert server.bytes_served[served.path] < served.size // 4
        # THEN the facts are kept as unverified, never as the checked wheel, and `cache verify` says so
        store = Cache(cache)
        assert store.load_facts(served.sha256) is None
        kept = store.load_facts(served.sha256, allow_unverified=True)
        assert kept is not None and not kept.verified and kept.directory_sha256
        assert main(["cache", "verify", "--cache-dir", str(cache), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert any(p["kind"] == "unverified" and "facts" in p["path"] for p in report["problems"])
        # WHEN the server is fixed behind an unchanged listing (same URL, same sha256)
        served.served_from = None
        server.reset_counts()
        code, doc, _err = _inspect(capsys, server, cache)
        # THEN the page revalidated unchanged stands for the file as it did: nothing else is asked (the
        # rule that lets a warm run ask for its pages only); the facts stay unverified
        assert code == 0 and _sonames(doc) == ["libevil.so.1"]
        assert set(server.requests) == {"/simple/mykernel/"}
        # WHEN the index lists the fixed file anew (at another URL, the sha256 the same)
        served.prefix = "fixed"
        server.reset_counts()
        code, doc, _err = _inspect(capsys, server, cache)
    # THEN the zip directory it serves there is not the one the facts were read through: read again
    assert code == 0 and _sonames(doc) == ["libgood.so.1"]
    assert server.requests[served.path] >= 2  # the tail that showed the change, then the members


def test_a_solve_never_chooses_a_wheel_whose_bytes_are_not_its_listed_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = solve_stack(tmp_path / "stack")
    cache, out = tmp_path / "cache", tmp_path / "out"
    with IndexServer() as server:
        server.formats.discard("json")  # HTML pages list no sizes: only the hash can tell the bytes apart
        files = serve(server, stack)
        # GIVEN the newest passing kernel's URL serving the bytes of an older kernel build
        poisoned = files["k040"]
        assert isinstance(poisoned, ServedFile)
        poisoned.served_from = stack.wheels["k030"]
        # WHEN the stack is solved
        code = main(solve_argv(server.index_url, cache, out, "--json"))
        doc = json.loads((out / f"{NAME}.json").read_text())
        # THEN that wheel is named as unreadable and not chosen; the answer is marked incomplete
        assert code == 3
        assert doc["chosen"] is None or doc["chosen"].get("kernel") != "sglang-kernel==0.4.0"
        assert any(poisoned.filename in p and "does not match" in p for p in doc["problems"])
        # WHEN the server is fixed: a normal run (no --refresh) finds the right answer
        poisoned.served_from = None
        code = main(solve_argv(server.index_url, cache, out, "--json"))
    doc = json.loads((out / f"{NAME}.json").read_text())
    assert code == 0 and doc["chosen"]["kernel"] == "sglang-kernel==0.4.0"
    capsys.readouterr()


# 2. a binary member the loader would open that cannot be read is a failing verdict


@pytest.fixture(scope="module")
def extension(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    d = tmp_path_factory.mktemp("ext")
    return _module(d, "_ext.abi3.so", "_ext").read_bytes()


def _ext_wheel(out: Path, ext: bytes, *, stored: bool = False) -> Path:
    files: dict[str, bytes | Path] = {"brokenpkg/__init__.py": b"from brokenpkg import _ext\n"}
    files["brokenpkg/_ext.abi3.so"] = ext
    compression = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    return build_wheel(out, "brokenpkg", "1.0", files, tag=ABI3_TAG, compression=compression)


def _corrupt_member(wheel: Path, member: str) -> None:
    """Flip one byte inside a stored member: the central directory's CRC32 no longer matches."""
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo(member)
    data = bytearray(wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + 200] ^= 0xFF
    wheel.write_bytes(bytes(data))


def _check(wheel: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check", str(wheel), *TARGET, "--cache-dir", str(wheel.parent / "cache")])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("damage", ["text", "truncated", "crc"])
def test_check_fails_a_wheel_whose_extension_cannot_be_read(
    tmp_path: Path, extension: bytes, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same wheel intact (control) and with its extension module text, cut to 2 KiB, or CRC-broken
    intact = _ext_wheel(tmp_path / "intact", extension)
    assert _check(intact, capsys)[0] == 0
    if damage == "text":
        broken = _ext_wheel(tmp_path / damage, b"this is not a shared object\n")
    elif damage == "truncated":
        broken = _ext_wheel(tmp_path / damage, extension[:2048])
    else:
        broken = _ext_wheel(tmp_path / damage, extension, stored=True)
        _corrupt_member(broken, "brokenpkg/_ext.abi3.so")
    # WHEN it is checked
    code, out = _check(broken, capsys)
    # THEN the loader check fails (bit 4) and says which member and why
    assert code & 4, out
    assert "brokenpkg/_ext.abi3.so" in out and "cannot be loaded" in out
    assert "Traceback" not in out


def test_a_solve_never_chooses_a_newest_kernel_whose_extension_is_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = solve_stack(tmp_path / "stack")
    # GIVEN a newer kernel release whose extension module is the first 2 KiB of a real one
    with zipfile.ZipFile(stack.wheels["k040"]) as zf:
        ops = zf.read("sgl_kernel/common_ops.abi3.so")
    files = {"sgl_kernel/__init__.py": b"", "sgl_kernel/common_ops.abi3.so": ops[:2048]}
    newer = build_wheel(tmp_path / "newer", "sglang-kernel", "0.4.9", files, tag=ABI3_TAG,
                        requires_dist=["torch==2.9.0"])  # fmt: skip
    out = tmp_path / "out"
    with IndexServer() as server:
        serve(server, stack)
        server.add_wheel(newer)
        # WHEN the stack is solved (in its own process: only abiprobe's output is read)
        argv = solve_argv(server.index_url, tmp_path / "cache", out, "--json")
        proc = subprocess.run([sys.executable, "-m", "abiprobe", *argv], capture_output=True, text=True)
    # THEN the unreadable release is not chosen and its near miss says why
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / f"{NAME}.json").read_text())
    assert doc["chosen"]["kernel"] == "sglang-kernel==0.4.0"
    (miss,) = [m for m in doc["near_misses"] if m["id"] == "sglang-kernel==0.4.9"]
    assert "cannot be loaded" in miss["reason"]


def test_a_linker_script_named_like_a_library_is_not_a_failure(
    tmp_path: Path, extension: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an intact wheel that also ships a GNU ld script as lib/libfoo.so (text for ld, never dlopen'd)
    files: dict[str, bytes | Path] = {
        "brokenpkg/__init__.py": b"from brokenpkg import _ext\n",
        "brokenpkg/_ext.abi3.so": extension,
        "brokenpkg/lib/libfoo.so": b"/* GNU ld script */\nGROUP ( libfoo.so.1 )\n",
    }
    wheel = build_wheel(tmp_path / "w", "brokenpkg", "1.0", files, tag=ABI3_TAG)
    # WHEN it is checked THEN it passes: only objects the loader would open are judged
    assert _check(wheel, capsys)[0] == 0
