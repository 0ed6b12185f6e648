"""A solve reads of a runtime wheel only the libraries the loader reaches, and later reads what it lacks.

The fixture runtime wheel is shaped like nvidia-cudnn: ``libcudart.so.13`` (torch preloads it) needs
``libcudart_core.so.13`` (where ``cudaRuntimeGetVersion`` lives), and ``libcudart_engines.so.13`` holds
half a megabyte of random data that nothing links (a dlopen'd engine library).
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support.cbuild import build_shared
from support.indexserver import IndexServer, ServedFile
from support.solve_stacks import C10_CALL, C10_DECL, solve_argv
from support.stacks import ABI3_TAG, PY_TAG, _module, _torch
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.store.cache import Cache

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
ENGINES = "nvidia/cu13/lib/libcudart_engines.so.13"
STACK_TOML = """
[stack]
members = [
  { role = "torch", names = ["torch"] },
  { role = "kernel", names = ["sglang-kernel"] },
]
"""
BLOB = 512 * 1024


def _runtime(out: Path) -> tuple[Path, Path, Path]:
    """The runtime wheel, the libcudart.so.13 to link kernels against, and the engines library."""
    core = build_shared(
        out, "libcudart_core.so.13", "int cudaRuntimeGetVersion(int* v) { *v = 13000; return 0; }",
        soname="libcudart_core.so.13",
    )  # fmt: skip
    cudart = build_shared(
        out, "libcudart.so.13", "int cudart_front(void) { return 1; }", soname="libcudart.so.13",
        link=[core], runpath=["$ORIGIN"],
    )  # fmt: skip
    engines = build_shared(out, "libcudart_engines.so.13", "int engine(void) { return 2; }",
                           soname="libcudart_engines.so.13")  # fmt: skip
    blob = out / "blob.bin"
    blob.write_bytes(os.urandom(BLOB))  # incompressible: fetching it would show in the bytes served
    subprocess.run(["objcopy", "--add-section", f".blob={blob}", str(engines)], check=True)
    wheel = build_wheel(
        out / "wheels",
        "nvidia-cuda-runtime",
        "13.0.96",
        {
            "nvidia/cu13/lib/libcudart.so.13": cudart,
            "nvidia/cu13/lib/libcudart_core.so.13": core,
            ENGINES: engines,
        },
        tag="py3-none-manylinux_2_28_x86_64",
    )
    return wheel, cudart, engines


def _kernel(out: Path, version: str, link: tuple[Path, ...]) -> Path:
    """sglang-kernel ``version`` linking ``link``; RPATH into the runtime wheel's lib directory."""
    d = out / f"k{version}"
    ops = _module(
        d, "common_ops.abi3.so", "common_ops", cxx=True, link=link, decls=C10_DECL % "unsigned int",
        body=C10_CALL, extra=("-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../nvidia/cu13/lib"),
    )  # fmt: skip
    files = {"sgl_kernel/__init__.py": b"", "sgl_kernel/common_ops.abi3.so": ops}
    return build_wheel(
        d / "wheels", "sglang-kernel", version, files, tag=ABI3_TAG, requires_dist=["torch==2.9.0"]
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("runtime-reach")
    torch, c10, _ = _torch(out / "torch", "2.9.0", unsigned=True, aoti=True)
    runtime, cudart, engines = _runtime(out / "runtime")
    return {
        "torch": torch,
        "runtime": runtime,
        "k040": _kernel(out, "0.4.0", (c10, cudart)),
        "k041": _kernel(out, "0.4.1", (c10, cudart, engines)),  # links the "engine" library directly
        "stack": _write(out / "stack.toml", STACK_TOML),
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _solve(server: IndexServer, tmp: Path, built: dict[str, Path], *extra: str) -> dict[str, Any]:
    argv = solve_argv(server.index_url, tmp / "cache", tmp / "out", "--stack", str(built["stack"]), *extra)
    assert main(argv) == 0
    doc: dict[str, Any] = json.loads((tmp / "out" / f"{NAME}.json").read_text())
    return doc


def _serve_base(server: IndexServer, built: dict[str, Path]) -> ServedFile:
    """torch, the runtime wheel and the kernel that links only libcudart; the runtime's served file."""
    for key in ("torch", "k040"):
        server.add_wheel(built[key])
    return server.add_wheel(built["runtime"])


def _member_span(wheel: Path, member: str) -> tuple[int, int]:
    """[local header offset, end of compressed data) of ``member`` in ``wheel``."""
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo(member)
    with wheel.open("rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    return info.header_offset, info.header_offset + 30 + name_len + extra_len + info.compress_size


def _ranges(server: IndexServer, path: str) -> list[tuple[int, int]]:
    """[first, last] byte of every bounded range request for ``path`` (a whole-file GET spans all)."""
    out = []
    for p, headers, _status in server.log:
        if p != path:
            continue
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", headers.get("range", ""))
        if m:
            out.append((int(m[1]), int(m[2])))
        elif "range" not in headers:
            out.append((0, 1 << 62))
    return out


def _checks(doc: dict[str, Any], member: str) -> dict[str, str]:
    cell = next(c for c in doc["cells"] if member in c["members"])
    return dict(cell["checks"])


def test_unreached_runtime_library_is_not_fetched_and_is_read_once_a_kernel_needs_it(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with IndexServer() as server:
        runtime = _serve_base(server, built)
        # WHEN the stack is solved with no cache at all
        first = _solve(server, tmp_path, built)
        # THEN the set loads: libcudart_core.so.13, reached only through libcudart.so.13, was read
        assert first["chosen"]["kernel"] == "sglang-kernel==0.4.0"
        assert set(_checks(first, "sglang-kernel==0.4.0").values()) <= {"ok", "warn"}
        # AND the engines library nothing links was not fetched: fewer bytes than its random blob
        assert server.bytes_served[runtime.path] < BLOB
        start, stop = _member_span(built["runtime"], ENGINES)
        assert not any(lo < stop and hi >= start for lo, hi in _ranges(server, runtime.path))
        cache = Cache(tmp_path / "cache")
        sha = runtime.sha256
        partial = cache.load_facts(sha, allow_partial=True, allow_unverified=True)
        assert partial is not None and partial.unread == (ENGINES,)
        assert not partial.verified  # range-read: kept with its zip directory, not as a checked wheel
        assert {e.path for e in partial.elf} == {
            "nvidia/cu13/lib/libcudart.so.13",
            "nvidia/cu13/lib/libcudart_core.so.13",
        }
        # AND commands that need whole facts do not take the partial entry for them
        assert cache.load_facts(sha, allow_unverified=True) is None
        assert cache.load_summary(sha, allow_unverified=True) is None

        # WHEN a kernel that links the engine library is published and the stack solved again
        server.add_wheel(built["k041"])
        server.reset_counts()
        second = _solve(server, tmp_path, built, "--refresh")
        # THEN the engine library is read now (a range request reaches into its member), so 0.4.1 finds it
        # by its RPATH. Asked-for ranges, not bytes written: a reader that has the dynamic section may hang
        # up before the blob's bytes leave the server, and how many left by then depends on timing.
        assert any(lo < stop and hi >= start for lo, hi in _ranges(server, runtime.path))
        assert second["chosen"]["kernel"] == "sglang-kernel==0.4.1"
        assert _checks(second, "sglang-kernel==0.4.1")["sonames"] == "ok"
        # (every member read now; GPU code only where a verdict looks at it, so partial in that alone)
        merged = cache.load_facts(sha, allow_partial=True, allow_unverified=True)
        assert merged is not None and merged.unread == ()
        assert {e.path for e in merged.elf} >= {ENGINES, "nvidia/cu13/lib/libcudart_core.so.13"}


def test_inspect_of_a_partly_read_runtime_wheel_reads_the_rest(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with IndexServer() as server:
        runtime = _serve_base(server, built)
        _solve(server, tmp_path, built)
        inspect = ["inspect", "nvidia-cuda-runtime==13.0.96", "--index-url", server.index_url,
                   "--cache-dir", str(tmp_path / "cache"), "--json"]  # fmt: skip
        capsys.readouterr()
        # WHEN the runtime wheel the solve read in part is inspected offline
        rc = main([*inspect, "--offline"])
        # THEN that is one clear line (exit 3, as every offline miss): the cache holds only part of it
        assert rc == 3
        assert "only partly in the cache (a solve read 2 of its 3 libraries)" in capsys.readouterr().err
        # WHEN it is inspected online
        server.reset_counts()
        assert main(inspect) == 0
        # THEN the whole wheel's facts are printed (the engines library too) and replace the partial entry
        printed = json.loads(capsys.readouterr().out)
        assert ENGINES in {o["path"] for s in printed["sources"] for o in s["objects"]}
        assert server.bytes_served[runtime.path] > BLOB
        assert Cache(tmp_path / "cache").load_facts(runtime.sha256) is not None
