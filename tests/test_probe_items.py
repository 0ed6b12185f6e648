"""``probe PROJECT==VERSION...`` takes the items ``check`` takes: the wheels pip would install for this
Python (the items and their install closure) are fetched hash-checked into ``--wheels-dir``, then
imported for real."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_stack

from abiprobe.cli import main

PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    """The fixture solve stack, served (its wheels: ``solve_stack``, built once per process)."""
    with IndexServer() as srv:
        serve(srv, solve_stack(tmp_path_factory.mktemp("solve-stack")))
        yield srv


def probe(server: IndexServer, tmp: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Any]:
    argv = ["probe", "torch==2.9.0", "sglang-kernel==0.4.0", "--python", PYTHON, "--json"]
    argv += [
        "--index-url",
        server.index_url,
        "--cache-dir",
        str(tmp / "cache"),
        "--wheels-dir",
        str(tmp / "w"),
    ]
    rc = main([*argv, *extra])
    return rc, json.loads(capsys.readouterr().out)


def test_probe_of_requirements_installs_their_closure_and_imports(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, doc = probe(server, tmp_path, capsys)
    (result,) = doc["results"]
    assert (rc, result["outcome"]) == (0, "ok"), result
    assert [a["wheel"] for a in doc["added"]] == ["nvidia-cuda-runtime 13.0.96"]
    # every wheel fetched into --wheels-dir is byte for byte the one the index lists
    fetched = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / "w").glob("*.whl")}
    served = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in solve_stack(tmp_path).wheels.values()
    }
    assert len(fetched) == 3 and all(served[name] == sha for name, sha in fetched.items())


def test_probe_no_deps_installs_the_named_items_alone(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the runtime wheel's namespace package is importable only where the closure installed it (this host
    # may well have a libcudart.so.13 of its own, so the kernel's import alone proves nothing)
    order = ("--import-order", "torch,sgl_kernel,nvidia")
    assert probe(server, tmp_path, capsys, *order)[0] == 0
    rc, doc = probe(server, tmp_path, capsys, *order, "--no-deps")
    (result,) = doc["results"]
    assert (rc, doc["added"], result["outcome"]) == (1, [], "python_exception")
    assert "No module named 'nvidia'" in json.dumps(result)
