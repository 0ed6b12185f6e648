"""``solve()`` returns one value: the lock, the matrix files and the probe jobs are made from it alone, and
the filter options it is given reach every wheel it picks (the runtime wheels and the rest of an install)."""

from __future__ import annotations

from pathlib import Path

from support.held import BUILT_IN_UNREAD
from support.indexserver import IndexServer
from support.solve_stacks import SolveStack, serve, solve_stack
from support.stacks import PY_TAG

from abiprobe.analyze.preloads import preload_pattern
from abiprobe.analyze.profiles import profile_for
from abiprobe.commands.solve import solve_reads
from abiprobe.index.client import IndexClient
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.net.http import Http
from abiprobe.probe.jobs import probe_jobs
from abiprobe.report.matrix_json import matrix_document
from abiprobe.report.outputs import lock_set, output_files
from abiprobe.solve.candidates import FilterOptions
from abiprobe.solve.pipeline import solve
from abiprobe.solve.result import CellSelection, SolveResult
from abiprobe.store.cache import Cache
from abiprobe.store.reads import WheelReads

BUILT_IN_PRELOADS = preload_pattern(default_stack().loading())

TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY_TAG, platform="manylinux_2_28_x86_64")


def _solve(url: str, cache: Path, options: FilterOptions, installs: CellSelection = "chosen") -> SolveResult:
    store = Cache(cache)
    with Http() as http:
        client = IndexClient([url], store, http)
        wheels = WheelReads(
            http,
            store,
            listed_as_before=client.listed_as_before,
            preloaded=BUILT_IN_PRELOADS,
            unread_sources=BUILT_IN_UNREAD,
        )
        reads = solve_reads(client, wheels)
        profile = profile_for(TARGET.machine, TARGET.glibc)
        return solve(default_stack(), TARGET, profile, reads, options, installs=installs)


def _serve_yanked(server: IndexServer, stack: SolveStack, *keys: str) -> None:
    """The fixture stack with the wheels of ``keys`` served yanked too."""
    serve(server, SolveStack(stack.root, stack.wheels, stack.yanked | set(keys)))


def test_yanked_files_admitted_by_the_options_reach_the_runtime_wheels_and_the_rest_of_the_install(
    tmp_path: Path,
) -> None:
    # GIVEN the fixture stack with the runtime wheel torch pins and a dependency of flashinfer served yanked
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        _serve_yanked(server, stack, "runtime", "tinyfast")
        # WHEN the solve is told that yanked files may be candidates
        result = _solve(server.index_url, tmp_path / "cache", FilterOptions(yanked=True))
    # THEN the runtime wheels and the rest of the install are found with that same rule, not one pin at a
    # time after a failed resolution, and the lock is whole
    assert result.problems == ()
    locked = lock_set(result)
    assert locked is not None and locked.note == ""
    versions = {str(w.name): str(w.version) for w in locked.wheels}
    assert versions["nvidia-cuda-runtime"] == "13.0.96"
    assert versions["tinydep"] == "2.0" and "tinyfast" in versions


def test_yanked_files_stay_out_of_the_whole_install_by_default(tmp_path: Path) -> None:
    # GIVEN the same index WHEN the solve runs with the default options
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        _serve_yanked(server, stack, "tinyfast")
        result = _solve(server.index_url, tmp_path / "cache", FilterOptions())
    # THEN the install is completed without the yanked wheel: tinydep 2.0 (which needs it) gives way to 1.0
    locked = lock_set(result)
    assert locked is not None and locked.note == ""
    versions = {str(w.name): str(w.version) for w in locked.wheels}
    assert "tinyfast" not in versions and versions["tinydep"] == "1.0"


def test_the_lock_files_and_probe_jobs_are_made_after_every_reader_is_gone(tmp_path: Path) -> None:
    # GIVEN a solve of the fixture stack that resolved the installs of every cell
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        serve(server, stack)
        result = _solve(server.index_url, tmp_path / "cache", FilterOptions(), installs="all")
    # WHEN the index is down and the HTTP client closed, the files and every cell's probe job are made
    doc = matrix_document(result)
    files = output_files(tmp_path / "m", "m", result, doc)
    jobs = probe_jobs(doc, result, cells="all")["include"]
    # THEN they are whole: the lock holds the runtime wheel and the rest of the install, and each job the
    # same install of its own cell, none of it read after the solve returned
    lock = files[tmp_path / "m" / "m.lock.txt"]
    assert "nvidia-cuda-runtime" in lock and "tinyfast" in lock
    assert len(jobs) == len(result.matrix.cells)
    names = {job["name"]: {w["name"] for w in job["wheels"]} for job in jobs}
    assert all("nvidia-cuda-runtime" in n for n in names.values()), names
    chosen = " + ".join(result.chosen_ids or ())
    assert "tinyfast" in names[f"{chosen} on sm_120"]
