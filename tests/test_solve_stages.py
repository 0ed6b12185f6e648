"""A solve is its stages, each called once on the previous one's value: traced over the local index server's
fixture stack, the stages' own functions recorded as they run (nothing stands in for them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.held import BUILT_IN_UNREAD
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_stack
from support.stacks import PY_TAG

from abiprobe.analyze.preloads import preload_pattern
from abiprobe.analyze.profiles import profile_for
from abiprobe.commands.solve import solve_reads
from abiprobe.index.client import IndexClient
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.net.http import Http
from abiprobe.solve import pipeline
from abiprobe.solve.candidates import FilterOptions
from abiprobe.solve.collect import ReadLedger
from abiprobe.solve.result import SolveResult
from abiprobe.store.cache import Cache
from abiprobe.store.reads import WheelReads

TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY_TAG, platform="manylinux_2_28_x86_64")
STAGES = ("collect", "build_matrix", "resolve_matrix", "explain", "whole_installs")


def _traced(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...], Any]]:
    """Each stage of :mod:`abiprobe.solve.pipeline` recorded (name, arguments, value) as it runs."""
    calls: list[tuple[str, tuple[Any, ...], Any]] = []

    def recording(name: str, stage: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            value = stage(*args, **kwargs)
            calls.append((name, (*args, *kwargs.values()), value))
            return value

        return run

    for name in STAGES:
        monkeypatch.setattr(pipeline, name, recording(name, getattr(pipeline, name)))
    return calls


def _solve(url: str, cache: Path) -> SolveResult:
    store = Cache(cache)
    with Http() as http:
        client = IndexClient([url], store, http)
        wheels = WheelReads(
            http,
            store,
            listed_as_before=client.listed_as_before,
            preloaded=preload_pattern(default_stack().loading()),
            unread_sources=BUILT_IN_UNREAD,
        )
        profile = profile_for(TARGET.machine, TARGET.glibc)
        return pipeline.solve(default_stack(), TARGET, profile, solve_reads(client, wheels), FilterOptions())


def test_each_stage_is_called_once_on_the_previous_stages_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the fixture stack on the local index server, and the pipeline's stages traced
    calls = _traced(monkeypatch)
    with IndexServer() as server:
        serve(server, solve_stack(tmp_path / "stack"))
        # WHEN one solve runs
        result = _solve(server.index_url, tmp_path / "cache")
    # THEN each stage ran once, in order
    assert [name for name, _, _ in calls] == list(STAGES)
    (_, _, collected), (_, built_args, built), (_, resolve_args, resolution), *later = calls
    explain_call, install_call = later
    # AND each was handed the value of the one before it (the same object, not something read again)
    assert built_args[0] is collected
    assert resolve_args == (built,)
    _, explain_args, explained = explain_call
    assert explain_args[:3] == (built, resolution, collected)
    _, install_args, installs = install_call
    assert install_args[:2] == (built, resolution)
    # AND the later stages are told of the reads by a value, not handed the live reader
    assert isinstance(explain_args[3], ReadLedger)
    # AND the result is made of the stages' values: the matrix with its counts, the installs, the listing
    assert result.matrix is explained.matrix and result.resolution is resolution
    assert result.installs is installs and result.chosen_ids is not None
    assert result.matrix.stats.analyses == built.builder.stats.analyses
    assert {"torch", "flashinfer-python"} <= set(result.listed)


def test_the_projects_a_solve_listed_are_part_of_its_value(tmp_path: Path) -> None:
    # GIVEN the fixture stack on the local index server
    with IndexServer() as server:
        serve(server, solve_stack(tmp_path / "stack"))
        # WHEN a solve runs (its closures and runtime wheels list more than the stack's projects)
        result = _solve(server.index_url, tmp_path / "cache")
    # THEN every project it listed is in its value, sorted, the runtime wheels' and the install's too
    assert list(result.listed) == sorted(set(result.listed))
    installed = {str(w.name) for members in result.installs for w in result.installs[members].wheels}
    assert installed <= set(result.listed)
