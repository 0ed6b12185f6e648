"""A runtime library is inflated only up to its loader tables when they (and its dynamic section) come
first; its GPU code is then not read, the facts say so, and nothing else accepts them as complete.

The fixture runtime wheel holds ``libcudart.so.13`` (torch preloads it: a unit, judged for its GPU code,
so read whole), the ``libcudart_core.so.13`` it needs (where ``cudaRuntimeGetVersion`` lives) with half a
megabyte of random data in ``.data`` -- after the dynamic section, as the bulk of a real libcufft sits --
and an unreached ``libcudart_engines.so.13`` (so the wheel is not read whole to be hashed). A second
build keeps the same data ``const`` (``.rodata``, before the dynamic section, as a real fatbin sits).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.cbuild import build_shared
from support.indexserver import IndexServer, ServedFile
from support.solve_stacks import C10_CALL, C10_DECL, solve_argv
from support.stacks import ABI3_TAG, PY_TAG, _module, _torch
from support.wheelbuild import build_wheel

from abiprobe.binary.bounded import ByteSource
from abiprobe.binary.elf import read_elf, read_elf_prefix
from abiprobe.binary.elf_layout import read_header, read_segments
from abiprobe.cli import main
from abiprobe.model.facts import ElfFacts
from abiprobe.net.http import Http
from abiprobe.store.cache import Cache

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
CORE = "nvidia/cu13/lib/libcudart_core.so.13"
BLOB = 512 * 1024
DELAY = 1.0  # seconds the slow index waits before answering each request
STACK_TOML = """
[stack]
members = [
  { role = "torch", names = ["torch"] },
  { role = "kernel", names = ["sglang-kernel"] },
]
"""
CORE_SRC = """
__asm__(".section %s\\n.globl cudart_blob\\ncudart_blob:\\n.incbin \\"%s\\"\\n.previous\\n");
extern const unsigned char cudart_blob[];
int cudaRuntimeGetVersion(int* v) { *v = 13000 + cudart_blob[7] * 0; return 0; }
"""


def _runtime(out: Path, section: str) -> tuple[Path, Path, Path]:
    blob = out / "blob.bin"
    out.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(os.urandom(BLOB))  # incompressible: fetching it shows in the bytes served
    core = build_shared(
        out, "libcudart_core.so.13", CORE_SRC % (section, blob), soname="libcudart_core.so.13"
    )
    cudart = build_shared(
        out, "libcudart.so.13", "int cudart_front(void) { return 1; }", soname="libcudart.so.13",
        link=[core], runpath=["$ORIGIN"],
    )  # fmt: skip
    engines = build_shared(out, "libcudart_engines.so.13", "int engine(void) { return 2; }",
                           soname="libcudart_engines.so.13")  # fmt: skip
    engines_blob = out / "engines.bin"
    engines_blob.write_bytes(os.urandom(4 * BLOB))  # most of the wheel: it is not read whole to be hashed
    subprocess.run(["objcopy", "--add-section", f".blob={engines_blob}", str(engines)], check=True)
    files = {"nvidia/cu13/lib/libcudart.so.13": cudart, CORE: core,
             "nvidia/cu13/lib/libcudart_engines.so.13": engines}  # fmt: skip
    wheel = build_wheel(out / "wheels", "nvidia-cuda-runtime", "13.0.96", files,
                        tag="py3-none-manylinux_2_28_x86_64")  # fmt: skip
    return wheel, cudart, core


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("runtime-tables")
    torch, c10, _ = _torch(out / "torch", "2.9.0", unsigned=True, aoti=True)
    front, cudart, front_lib = _runtime(out / "front", ".data")
    back, _, back_lib = _runtime(out / "back", ".rodata")
    d = out / "kernel"
    ops = _module(
        d, "common_ops.abi3.so", "common_ops", cxx=True, link=(c10, cudart),
        decls=C10_DECL % "unsigned int", body=C10_CALL,
        extra=("-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../nvidia/cu13/lib"),
    )  # fmt: skip
    kernel = build_wheel(d / "wheels", "sglang-kernel", "0.4.0",
                         {"sgl_kernel/__init__.py": b"", "sgl_kernel/common_ops.abi3.so": ops},
                         tag=ABI3_TAG, requires_dist=["torch==2.9.0"])  # fmt: skip
    stack = out / "stack.toml"
    stack.write_text(STACK_TOML)
    return {"torch": torch, "kernel": kernel, "front": front, "front_lib": front_lib, "back": back,
            "back_lib": back_lib, "stack": stack}  # fmt: skip


def _dynamic_share(lib: Path) -> float:
    with lib.open("rb") as fh:
        src = ByteSource(fh, lib.name)
        dyn = next(s for s in read_segments(src, read_header(src)) if s.type == 2)
        return (dyn.offset + dyn.filesz) / src.size


def _loader_view(e: ElfFacts) -> ElfFacts:
    """What the loader simulation reads of an object: everything but its GPU code and its own hash."""
    return dataclasses.replace(e, path="", gpu_code=(), sha256=None, gpu_unread=False)


def _received(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Body bytes the client took in, by URL path (the server may have pushed more into the socket
    before the client hung up: that is not what a range read costs on a real network's window)."""
    got: Counter[str] = Counter()
    real = Http.iter_chunks

    def counting(self: Http, response: httpx.Response) -> Iterator[bytes]:
        for chunk in real(self, response):
            got[response.url.path] += len(chunk)
            yield chunk

    monkeypatch.setattr(Http, "iter_chunks", counting)
    return got


def _solve_with(server: IndexServer, built: dict[str, Path], runtime: str, tmp: Path) -> ServedFile:
    server.add_wheel(built["torch"])
    server.add_wheel(built["kernel"])
    served = server.add_wheel(built[runtime])
    argv = solve_argv(server.index_url, tmp / "cache", tmp / "out", "--stack", str(built["stack"]))
    assert main(argv) == 0
    doc = json.loads((tmp / "out" / f"{NAME}.json").read_text())
    assert doc["chosen"]["kernel"] == "sglang-kernel==0.4.0"
    return served


def test_a_prefix_is_enough_exactly_when_it_holds_every_loader_table(built: dict[str, Path]) -> None:
    for key, first in (("front_lib", True), ("back_lib", False)):
        data = built[key].read_bytes()
        whole = read_elf(data, "lib")
        # asking for more only as told, the facts come from a prefix; they are the whole file's
        held = 64
        while isinstance(got := read_elf_prefix(data[:held], len(data), "lib"), int):
            assert held < got <= len(data)
            held = got
        assert got.gpu_unread and _loader_view(got) == _loader_view(whole)
        assert (held < len(data) - BLOB) is first, (key, held, len(data))
    assert _dynamic_share(built["front_lib"]) < 0.2 and _dynamic_share(built["back_lib"]) > 0.8


def test_a_runtime_library_whose_tables_come_first_is_read_only_that_far(
    built: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    received = _received(monkeypatch)
    with IndexServer() as server:
        served = _solve_with(server, built, "front", tmp_path)
        # THEN neither the data after libcudart_core's dynamic section nor the engines were taken in
        assert received[served.path] < BLOB / 2, received
        store = Cache(tmp_path / "cache")
        stored = store.load_facts(served.sha256, allow_partial=True, allow_unverified=True)
        assert stored is not None and not stored.verified
        (lib,) = [e for e in stored.elf if e.path == CORE]
        (preloaded,) = [e for e in stored.elf if e.path.endswith("libcudart.so.13")]
        assert not preloaded.gpu_unread  # a unit: read with its GPU code
        # AND its facts are the loader facts of the whole file, marked: GPU code not read
        assert lib.gpu_unread and lib.sha256 is None
        assert _loader_view(lib) == _loader_view(read_elf(built["front_lib"].read_bytes(), "x"))
        # AND they never pass for complete facts
        assert store.load_facts(served.sha256, allow_unverified=True) is None
        assert store.load_summary(served.sha256, allow_unverified=True) is None
        # WHEN the wheel is inspected, THEN it is read whole (GPU code included) and replaces them
        capsys.readouterr()
        inspect = ["inspect", "nvidia-cuda-runtime==13.0.96", "--index-url", server.index_url,
                   "--cache-dir", str(tmp_path / "cache"), "--json"]  # fmt: skip
        assert main(inspect) == 0
        complete = store.load_facts(served.sha256, allow_unverified=True)
        assert complete is not None and not any(e.gpu_unread for e in complete.elf)


def test_a_runtime_library_whose_dynamic_section_comes_last_is_read_whole(
    built: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    received = _received(monkeypatch)
    with IndexServer() as server:
        served = _solve_with(server, built, "back", tmp_path)
        assert received[served.path] > BLOB
        stored = Cache(tmp_path / "cache").load_facts(
            served.sha256, allow_partial=True, allow_unverified=True
        )
        assert stored is not None
        (lib,) = [e for e in stored.elf if e.path == CORE]
        assert not lib.gpu_unread


def _age_pages(cache: Path) -> None:
    store = Cache(cache)
    for page in store.stale_pages(-1.0):
        store.touch_page(page.url, time.time() - 3600)


def test_a_warm_solve_with_unchanged_pages_asks_for_the_pages_only_and_at_once(
    built: dict[str, Path], tmp_path: Path
) -> None:
    with IndexServer() as server:
        served = _solve_with(server, built, "front", tmp_path)
        argv = solve_argv(
            server.index_url, tmp_path / "cache", tmp_path / "m2", "--stack", str(built["stack"])
        )
        assert main(argv) == 0  # within the window: nothing is asked
        # GIVEN every stored page past the freshness window, and an index slow to answer anything
        _age_pages(tmp_path / "cache")
        server.reset_counts()
        server.fail(match="/", delay=DELAY)
        # WHEN the stack is solved again
        assert main(argv) == 0
        log, at_once = list(server.log), server.max_in_flight
    # THEN only the pages were asked for, conditionally, all "not modified": the page listing the
    # range-read wheel lists it as before (same URL, same sha256), so its facts need no tail request
    assert log and all(p.startswith("/simple/") for p, _h, _s in log), log
    assert all("if-none-match" in h for _p, h, _s in log)
    assert {s for _p, _h, s in log} == {304}
    assert served.path not in {p for p, _h, _s in log}
    # AND all at once, not one after another: the slow index was answering several at the same time
    assert at_once >= 2, at_once


def test_a_range_read_wheel_listed_anew_is_asked_about_with_one_tail(
    built: dict[str, Path], tmp_path: Path
) -> None:
    with IndexServer() as server:
        served = _solve_with(server, built, "front", tmp_path)
        argv = solve_argv(
            server.index_url, tmp_path / "cache", tmp_path / "m2", "--stack", str(built["stack"])
        )
        # GIVEN the index now lists the range-read wheel (same sha256) at another URL
        served.prefix = "moved"
        _age_pages(tmp_path / "cache")
        server.reset_counts()
        # WHEN the stack is solved again
        assert main(argv) == 0
        moved = [(p, h.get("range")) for p, h, _s in server.log if not p.startswith("/simple/")]
        # THEN the wheel at its new URL was asked about with one tail request (the same zip directory:
        # nothing else was read), and its old URL not at all
        assert moved == [(served.path, "bytes=-65536")]
        # AND a run with --refresh, whose pages count as new, asks again even though nothing changed
        server.reset_counts()
        assert main([*argv, "--refresh"]) == 0
        asked = [(p, h.get("range")) for p, h, _s in server.log if not p.startswith("/simple/")]
    assert asked == [(served.path, "bytes=-65536")]
