"""A pin-blocked set: torch 2.9.1 keeps 2.9.0's ABI, so sglang-kernel 0.4.0 (built against 2.9.0) loads
with it, but the kernel declares ``torch==2.9.0``. That cell is ``blocked``, not ``fail``; the chosen
set still honours the pin, and the solve also names the newer set with a uv and a pip recipe that
install it anyway."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.indexserver import IndexServer
from support.solve_stacks import SolveStack, serve, solve_argv, solve_stack
from support.stacks import PY_TAG, _torch
from support.tools import venv_tool

from abiprobe.cli import main
from abiprobe.report.matrix_html import render_html
from abiprobe.report.matrix_json import matrix_schema
from abiprobe.report.matrix_md import render_markdown

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("solve-stack"))


@pytest.fixture(scope="module")
def server(stack: SolveStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    torch_291, _c10, _cpu = _torch(tmp_path_factory.mktemp("t291"), "2.9.1", unsigned=True, aoti=True)
    with IndexServer() as srv:
        serve(srv, stack)
        srv.add_wheel(torch_291)
        yield srv


@pytest.fixture(scope="module")
def doc(server: IndexServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("solved")
    assert main(solve_argv(server.index_url, tmp / "cache", tmp / "out")) == 0
    data: dict[str, Any] = json.loads((tmp / "out" / f"{NAME}.json").read_text())
    return data


def _cell(doc: dict[str, Any], row: str, col: str) -> dict[str, Any]:
    return next(c for c in doc["cells"] if c["row"] == row and c["col"] == col)


def test_a_set_that_loads_but_a_pin_forbids_is_blocked_with_the_pin(doc: dict[str, Any]) -> None:
    c = _cell(doc, "torch==2.9.1", "sglang-kernel==0.4.0")
    assert c["status"] == "blocked"
    assert {c["checks"][k] for k in ("sonames", "symbols", "symbol_versions", "driver")} == {"ok"}
    assert c["blocked_by"] == [
        {"by": "sglang-kernel 0.4.0", "requirement": "torch==2.9.0", "project": "torch", "found": "2.9.1"}
    ]
    jsonschema.validate(doc, matrix_schema())


def test_a_set_with_a_broken_symbol_stays_fail_though_a_pin_blocks_it_too(doc: dict[str, Any]) -> None:
    assert _cell(doc, "torch==2.9.1", "sgl-kernel==0.3.0")["status"] == "fail"


def test_the_chosen_set_honours_the_pin_and_the_override_set_is_the_newer_one(doc: dict[str, Any]) -> None:
    assert (doc["chosen"]["torch"], doc["chosen"]["kernel"]) == ("torch==2.9.0", "sglang-kernel==0.4.0")
    over = doc["if_pins_overridden"]
    assert (over["chosen"]["torch"], over["chosen"]["kernel"]) == ("torch==2.9.1", "sglang-kernel==0.4.0")
    assert over["overrides"] == ["torch==2.9.1"]
    assert over["pip"][-1].startswith("pip install --no-deps") and "sglang-kernel==0.4.0" in over["pip"][-1]
    assert "sglang-kernel" not in over["pip"][0]


def test_markdown_and_html_give_blocked_its_own_word_and_colour(doc: dict[str, Any]) -> None:
    md, page = render_markdown(doc), render_html(doc)
    assert "🚧 blocked" in md and "### If declared pins were overridden" in md
    assert ".blocked{background:" in page and "class='cell blocked'" in page


def _recipe_env(server: IndexServer, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    return {**env, "PIP_INDEX_URL": server.index_url, "UV_INDEX_URL": server.index_url,
            "UV_NO_CACHE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}  # fmt: skip


def _dry(line: str, installer: str) -> list[str]:
    """A recipe line as a dry run against this interpreter (no environment is changed)."""
    words = shlex.split(line)
    if installer == "uv":
        assert words[0] == "uv", line
        return [venv_tool("uv"), *words[1:3], "--dry-run", "--python", sys.executable, *words[3:]]
    return [sys.executable, "-m", *words[:2], "--dry-run", "--quiet", *words[2:]]


def test_the_uv_override_recipe_resolves_the_blocked_set(
    doc: dict[str, Any], server: IndexServer, tmp_path: Path
) -> None:
    printf, install = doc["if_pins_overridden"]["uv"]
    subprocess.run(printf, shell=True, cwd=tmp_path, check=True)
    done = subprocess.run(_dry(install, "uv"), cwd=tmp_path, env=_recipe_env(server, tmp_path),
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "torch==2.9.1" in done.stderr and "sglang-kernel==0.4.0" in done.stderr


def test_the_pip_recipe_installs_in_its_order(
    doc: dict[str, Any], server: IndexServer, tmp_path: Path
) -> None:
    for line in doc["if_pins_overridden"]["pip"]:
        done = subprocess.run(_dry(line, "pip"), env=_recipe_env(server, tmp_path),
                              capture_output=True, text=True, timeout=180)  # fmt: skip
        assert done.returncode == 0, (line, done.stderr)
