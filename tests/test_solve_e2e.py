"""End to end: ``abiprobe solve --cuda 13.0 --arch sm120`` against a real local index of fixture stacks."""

from __future__ import annotations

import functools
import http.server
import json
import platform
import random
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.cbuild import build_shared
from support.indexserver import IndexServer
from support.solve_stacks import SolveStack, serve, solve_argv, solve_stack
from support.stacks import ABI3_TAG, CP_TAG, PY_TAG
from support.tools import venv_tool
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.report.matrix_json import matrix_schema

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("solve-stack"))


@pytest.fixture(scope="module")
def server(stack: SolveStack) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        serve(srv, stack)
        yield srv


def solve_args(server_url: str, tmp: Path, *extra: str) -> list[str]:
    return solve_argv(server_url, tmp / "cache", tmp / "matrices", *extra)


@pytest.fixture(scope="module")
def solved(server: IndexServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    tmp = tmp_path_factory.mktemp("solved")
    rc = main(solve_args(server.index_url, tmp))
    return rc, tmp


def document(tmp: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp / "matrices" / f"{NAME}.json").read_text())
    return data


def cell(doc: dict[str, Any], row: str, col: str) -> dict[str, Any]:
    return next(c for c in doc["cells"] if c["row"] == row and c["col"] == col)


def test_solve_chooses_the_newest_passing_set(solved: tuple[int, Path]) -> None:
    # GIVEN torch 2.8/2.9, kernels built against each, a CUDA 12 kernel, an sm_100a-only kernel
    rc, tmp = solved
    # THEN the set is torch 2.9.0 + sglang-kernel 0.4.0 + flashinfer 0.5.3 with both companions
    assert rc == 0
    assert document(tmp)["chosen"] == {
        "torch": "torch==2.9.0",
        "kernel": "sglang-kernel==0.4.0",
        "flashinfer": "flashinfer-python==0.5.3",
        "flashinfer-cubin": "flashinfer-cubin==0.5.3",
        "flashinfer-jit-cache": "flashinfer-jit-cache==0.5.3+cu130",
    }


def test_matrix_json_validates_against_its_schema(solved: tuple[int, Path]) -> None:
    jsonschema.validate(document(solved[1]), matrix_schema())


def test_matrix_axes_hold_the_windowed_cuda13_candidates(solved: tuple[int, Path]) -> None:
    doc = document(solved[1])
    assert [g["id"] for g in doc["groups"]["torch"]] == ["torch==2.9.0", "torch==2.8.0"]
    assert [g["id"] for g in doc["groups"]["kernel"]] == [
        "sglang-kernel==0.4.2",
        "sglang-kernel==0.4.0",
        "sgl-kernel==0.3.0",
    ]


def test_arch_specific_only_kernel_fails_gpu_arch(solved: tuple[int, Path]) -> None:
    c = cell(document(solved[1]), "torch==2.9.0", "sglang-kernel==0.4.2")
    assert (c["status"], c["checks"]["gpu_arch"]) == ("fail", "fail")
    assert "sm_100a" in c["explanation"]


def test_kernel_built_against_the_other_torch_fails_symbols(solved: tuple[int, Path]) -> None:
    # its pin on the other torch blocks it too, but the undefined symbol is what makes it fail
    c = cell(document(solved[1]), "torch==2.9.0", "sgl-kernel==0.3.0")
    assert (c["status"], c["checks"]["symbols"], c["checks"]["requires"]) == ("fail", "fail", "blocked")
    # the cell names the loader's first error as Python prints it; a GPU-code failure is no load error
    assert c["first_error"] == (
        "ImportError: <site-packages>/sgl_kernel/common_ops.abi3.so: undefined symbol: "
        "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"
    )
    assert cell(document(solved[1]), "torch==2.9.0", "sglang-kernel==0.4.2")["first_error"] is None


def test_older_torch_row_picks_the_flashinfer_its_requires_allow(solved: tuple[int, Path]) -> None:
    c = cell(document(solved[1]), "torch==2.8.0", "sgl-kernel==0.3.0")
    assert c["choices"][0]["chosen"] == "flashinfer-python==0.5.2"
    assert c["choices"][0]["options"] == [
        {"id": "flashinfer-python==0.5.3", "status": "blocked"},  # it requires torch>=2.9
        {"id": "flashinfer-python==0.5.2", "status": "warn"},
    ]


def test_cuda12_wheels_are_not_candidates_and_the_matrix_says_so(solved: tuple[int, Path]) -> None:
    excluded = {(e["name"], e["version"]): e["reason"] for e in document(solved[1])["excluded"]}
    assert excluded[("sglang-kernel", "0.4.1")] == (
        "not a CUDA 13 candidate: built for CUDA 12 (needs libcudart.so.12)"
    )
    assert excluded[("torch", "2.9.0+cu128")] == (
        "not a CUDA 13 candidate: built for CUDA 12 (local label +cu128)"
    )


def test_yanked_and_prereleases_are_off_by_default(solved: tuple[int, Path]) -> None:
    excluded = {(e["name"], e["version"]): e["reason"] for e in document(solved[1])["excluded"]}
    assert excluded[("sglang-kernel", "0.4.3")] == "yanked: broken build"
    assert excluded[("torch", "2.10.0rc1")] == "pre-release (use --pre)"


def test_pairwise_reuse_costs_pairs_not_combinations(solved: tuple[int, Path]) -> None:
    # 2 torch bases + 2x3 kernel pairs + 2x2 flashinfer pairs; 6 cells x 2 flashinfer options naively
    stats = document(solved[1])["stats"]
    assert stats == {"cells": 6, "pairs": 12, "analyses": 12, "naive_analyses": 12, "analyses_run": 12,
                     "analyses_stored": 0}  # fmt: skip


def test_near_miss_explains_the_newer_kernel(solved: tuple[int, Path]) -> None:
    misses = {n["id"]: n["reason"] for n in document(solved[1])["near_misses"]}
    assert misses["sglang-kernel==0.4.2"].startswith("with torch==2.9.0: gpu_arch fail:")


# The chosen set, its runtime wheel, then the rest of its install, in the lock's order.
LOCKED = ["torch", "sglang-kernel", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache",
          "nvidia-cuda-runtime", "tinydep", "tinyextra", "tinyfast"]  # fmt: skip


def test_lock_file_pins_exact_urls_and_hashes(solved: tuple[int, Path], server: IndexServer) -> None:
    lines = (solved[1] / "matrices" / f"{NAME}.lock.txt").read_text().splitlines()
    reqs = [ln.split(" @ ")[0] for ln in lines if " @ " in ln]
    assert reqs == LOCKED
    assert sum(ln.strip().startswith("--hash=sha256:") for ln in lines) == 9
    assert "tinydep-2.0-" in "\n".join(lines)


def test_metadata_without_pep658_is_range_read_from_the_wheel(
    solved: tuple[int, Path], server: IndexServer
) -> None:
    # tinydep offers no .metadata file: its METADATA came out of the wheel by range requests, and
    # no other file of it than the chosen version's was touched
    paths = [path for path, headers, _status in server.log if "tinydep" in path]
    assert not [p for p in paths if p.endswith(".metadata")]
    wheel_reads = [(p, h.get("range")) for p, h, _s in server.log if p.endswith(".whl") and "tinydep" in p]
    assert wheel_reads and all(p.endswith("tinydep-2.0-py3-none-any.whl") for p, _ in wheel_reads)
    assert all(r is not None and r.startswith("bytes=") for _, r in wheel_reads)


def test_pip_accepts_the_lock_file_with_require_hashes(solved: tuple[int, Path], server: IndexServer) -> None:
    lock = solved[1] / "matrices" / f"{NAME}.lock.txt"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--require-hashes",  # with dependencies: pip refuses any dependency the lock does not pin
        "--no-index",
        "--disable-pip-version-check",
        "--report",
        "-",
        "-q",
        "-r",
        str(lock),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    names = sorted(i["metadata"]["name"] for i in json.loads(done.stdout)["install"])
    assert names == sorted(LOCKED)


def test_uv_accepts_the_lock_file(
    solved: tuple[int, Path], server: IndexServer, stack: SolveStack, tmp_path: Path
) -> None:
    # uv probes file URLs with HEAD, which the fixture index does not answer: serve the same wheels from a
    # plain static server and point the lock's URLs there (the lines' shape is what is under test)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(stack.root / "wheels"))
    static = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=static.serve_forever, daemon=True).start()
    try:
        prefix = server.file_url("x")[:-1]
        text = (solved[1] / "matrices" / f"{NAME}.lock.txt").read_text()
        lock = tmp_path / "lock.txt"
        lock.write_text(text.replace(prefix, f"http://127.0.0.1:{static.server_address[1]}/"))
        cmd = [
            venv_tool("uv"),
            "pip",
            "install",
            "--dry-run",
            "--require-hashes",  # with dependencies, which the lock must pin too
            "--no-index",
            "--python",
            sys.executable,
            "--no-cache",
            "-r",
            str(lock),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        static.shutdown()
    assert done.returncode == 0, done.stderr
    assert "Would install 9 packages" in done.stderr


def test_unreachable_index_is_reported_and_exit_code_is_3(server: IndexServer, tmp_path: Path) -> None:
    # GIVEN a dead index before the working one
    dead = "http://127.0.0.1:9/simple/"
    rc = main(solve_args(server.index_url, tmp_path, "--extra-index", dead))
    doc = document(tmp_path)
    # THEN the solve still finds the set, says which index did not answer, and exits 3
    assert rc == 3
    assert doc["chosen"]["kernel"] == "sglang-kernel==0.4.0"
    assert [(i["url"], i["answered"]) for i in doc["indexes"]] == [(dead, False), (server.index_url, True)]


def test_offline_resolve_reproduces_the_matrix_from_the_cache(
    solved: tuple[int, Path], server: IndexServer
) -> None:
    # GIVEN the cache a solve filled; WHEN solving again offline
    tmp = solved[1]
    before = document(tmp)
    server.reset_counts()
    rc = main(solve_args(server.index_url, tmp, "--offline"))
    # THEN the server is not consulted and nothing changes but the index line (answered from the cache)
    after = document(tmp)
    assert (rc, server.total_bytes) == (0, 0)
    del after["indexes"], before["indexes"]
    assert (after["stats"].pop("analyses_run"), after["stats"].pop("analyses_stored")) == (0, 12)
    del before["stats"]["analyses_run"], before["stats"]["analyses_stored"]
    assert after == before


def test_a_matrix_made_from_stored_verdicts_is_the_same_file_as_one_made_fresh(
    solved: tuple[int, Path], server: IndexServer, tmp_path: Path
) -> None:
    # GIVEN the matrix file a cold solve wrote, copied aside
    fresh = (solved[1] / "matrices" / f"{NAME}.json").read_text()
    # WHEN the same solve runs again from its cache (pages asked for again, every verdict stored)
    copy = tmp_path / "again"
    shutil.copytree(solved[1] / "cache", copy / "cache")
    assert main(solve_args(server.index_url, copy, "--refresh")) == 0
    again = (copy / "matrices" / f"{NAME}.json").read_text()

    # THEN the two files say the same things in the same order (keys of evidence included), the counts
    # of analyses run and stored, and how the pages were had, aside
    def ordered(text: str) -> list[Any]:
        pairs: list[Any] = json.loads(text, object_pairs_hook=list)
        return [p for p in pairs if p[0] not in ("stats", "indexes")]

    assert json.loads(again)["stats"]["analyses_stored"] > 0
    assert ordered(again) == ordered(fresh)


def test_a_solve_that_answers_as_the_last_one_rewrites_only_the_file_that_changed(
    server: IndexServer, tmp_path: Path
) -> None:
    # GIVEN the files of a warm solve (the second: every verdict stored), and its lock edited by hand
    assert main(solve_args(server.index_url, tmp_path)) == 0
    assert main(solve_args(server.index_url, tmp_path)) == 0
    out = tmp_path / "matrices"
    written = {p.name: (p.stat().st_ino, p.read_bytes()) for p in sorted(out.iterdir())}
    assert {f"{NAME}.json", f"{NAME}.lock.txt", f"pylock.{NAME}.toml"} <= set(written)
    lock = out / f"{NAME}.lock.txt"
    lock.write_text("edited by hand\n")
    edited = lock.stat().st_ino
    # WHEN the same solve runs again (from its cache: the same answer)
    assert main(solve_args(server.index_url, tmp_path)) == 0
    # THEN every file holds what the second solve wrote; the edited lock was written anew (replaced),
    # every other file is the very file that was there (not replaced by an identical copy)
    for name, (inode, data) in written.items():
        assert (out / name).read_bytes() == data, name
        if name != lock.name:
            assert (out / name).stat().st_ino == inode, name
    assert lock.stat().st_ino != edited
    assert sorted(p.name for p in out.iterdir()) == sorted(written)


def test_no_passing_set_exits_1_and_names_the_conflicts(server: IndexServer, tmp_path: Path) -> None:
    rc = main(
        solve_args(
            server.index_url, tmp_path, "--constraint", "torch<2.9", "--constraint", "sglang-kernel>=0.4"
        )
    )
    doc = document(tmp_path)
    assert rc == 1
    assert doc["chosen"] is None
    assert any("sglang-kernel" in line for line in doc["conflicts"])


def test_usage_error_exits_2(tmp_path: Path) -> None:
    assert main(["solve", "--cuda", "thirteen", "--out-dir", str(tmp_path)]) == 2


def test_without_python_and_platform_the_target_is_this_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an empty local index and no --python / --platform
    with IndexServer() as server:
        main(
            ["solve", "--index", server.index_url, "--cache-dir", str(tmp_path / "c"), "--no-write", "--json"]
        )
    target = json.loads(capsys.readouterr().out)["target"]
    # THEN the target is this interpreter and this host's libc and machine
    libc, version = platform.libc_ver()
    assert target["python"] == f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert target["platform"] == f"manylinux_{version.replace('.', '_')}_{platform.machine()}"
    assert libc == "glibc"


def test_a_wheel_whose_metadata_file_names_another_cuda_is_left_out_unread(
    stack: SolveStack, tmp_path: Path
) -> None:
    # GIVEN a torch release whose label says nothing, whose PEP 658 metadata file requires a CUDA 12
    # runtime, and whose bytes carry an ELF library, served beside the fixture stack
    lib = build_shared(tmp_path / "lib", "libtorch_cpu.so", "int torch_cpu_fn(void) { return 1; }\n")
    files: dict[str, bytes | Path] = {"torch/__init__.py": b"", "torch/lib/libtorch_cpu.so": lib}
    cu12 = build_wheel(tmp_path / "w", "torch", "2.9.5", files, tag=CP_TAG,
                       requires_dist=["nvidia-cuda-runtime-cu12==12.8.90"])  # fmt: skip
    with IndexServer() as srv:
        serve(srv, stack)
        torch_cu12 = srv.add_wheel(cu12)
        # WHEN every version is solved for
        main(solve_args(srv.index_url, tmp_path, "--all-versions"))
        excluded = {(e["name"], e["version"]): e["reason"] for e in document(tmp_path)["excluded"]}
        # THEN it is excluded for its CUDA major from the metadata file alone: no byte of it is asked
        assert excluded[("torch", "2.9.5")] == (
            "not a CUDA 13 candidate: built for CUDA 12 (requires nvidia-cuda-runtime-cu12==12.8.90)"
        )
        assert srv.requests[torch_cu12.path + ".metadata"] == 1
        assert srv.requests[torch_cu12.path] == 0
    # AND the CUDA 12 kernel whose metadata says nothing is still excluded on its sonames
    assert excluded[("sglang-kernel", "0.4.1")] == (
        "not a CUDA 13 candidate: built for CUDA 12 (needs libcudart.so.12)"
    )


def test_a_kernel_whose_smallest_library_needs_another_cuda_is_left_out_with_only_that_read(
    stack: SolveStack, tmp_path: Path
) -> None:
    # GIVEN an unlabelled kernel release with no metadata hint, holding a big library (4 MB of data that
    # does not compress) and a small one, both needing libcudart.so.12, served beside the fixture stack
    cudart12 = build_shared(tmp_path / "rt", "libcudart.so.12", "int cudaFree(void* p) { return 0; }\n",
                            soname="libcudart.so.12")  # fmt: skip
    noise = ", ".join(str(b) for b in random.Random(7).randbytes(4 << 20))
    source = f"const unsigned char big_data[] = {{{noise}}};\nint big_fn(void) {{ return big_data[9]; }}\n"
    big = build_shared(tmp_path / "big", "big_ops.abi3.so", source, link=[cudart12])
    small = build_shared(tmp_path / "small", "small_ops.abi3.so", "int small_fn(void) { return 1; }\n",
                         link=[cudart12])  # fmt: skip
    files: dict[str, bytes | Path] = {"sgl_kernel/__init__.py": b"", "sgl_kernel/big_ops.abi3.so": big,
                                      "sgl_kernel/small_ops.abi3.so": small}  # fmt: skip
    cu12 = build_wheel(tmp_path / "w", "sglang-kernel", "0.4.5", files, tag=ABI3_TAG,
                       requires_dist=["torch==2.9.0"])  # fmt: skip
    with IndexServer() as srv:
        serve(srv, stack)
        kernel = srv.add_wheel(cu12)
        # WHEN every version is solved for
        srv.reset_counts()
        main(solve_args(srv.index_url, tmp_path, "--all-versions"))
        excluded = {(e["name"], e["version"]): e["reason"] for e in document(tmp_path)["excluded"]}
        served = srv.bytes_served[kernel.path]
        # AND solved again, warm
        srv.reset_counts()
        main(solve_args(srv.index_url, tmp_path, "--all-versions"))
        again = {(e["name"], e["version"]): e["reason"] for e in document(tmp_path)["excluded"]}
        asked_again = srv.requests[kernel.path]
    # THEN it is excluded for its CUDA major, as reading all of it would have found
    assert excluded[("sglang-kernel", "0.4.5")] == (
        "not a CUDA 13 candidate: built for CUDA 12 (needs libcudart.so.12)"
    )
    # AND what was read of it is its zip directory, its dist-info and its small library: not the big one
    assert 0 < served < cu12.stat().st_size // 4, (served, cu12.stat().st_size)
    # AND the warm solve excluded it the same way from what was stored, asking nothing of it
    assert again[("sglang-kernel", "0.4.5")] == excluded[("sglang-kernel", "0.4.5")]
    assert asked_again == 0
