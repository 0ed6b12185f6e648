"""abiprobe installed as a tool (`uv tool install` of its built wheel), run outside the clone with no pip in
the tool's environment, configured only by the user's installer settings, against the local index server.

Offline: the wheel is built from this checkout without build isolation, and its dependencies come from a
wheelhouse packed again from the pure-Python distributions installed in the test interpreter
(tests/support/wheelhouse.py); the test skips (fails under CI) when that house cannot be built honestly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.solve_stacks import PY_TAG, SolveStack, serve, solve_stack
from support.tools import missing, venv_tool
from support.wheelbuild import build_wheel
from support.wheelhouse import wheelhouse_of

import abiprobe
from abiprobe.installers.toml import read_toml

CLONE = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "abiprobe")
DEMO = "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"


@dataclass(frozen=True)
class Tool:
    abiprobe: Path
    python: Path
    home: Path
    outside: Path

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
        base |= {"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"), "UV_NO_CONFIG": "1"}
        base |= {"PIP_CONFIG_FILE": os.devnull, "PYTHONPATH": "", **env}
        # the test venv's bin leads PATH: the pip on this machine that pip's default index is read from
        base["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        return subprocess.run(
            [str(self.abiprobe), *args], cwd=self.outside, env=base, capture_output=True, text=True
        )


def _dependencies() -> list[str]:
    project = (read_toml(CLONE / "pyproject.toml") or {})["project"]
    return list(project["dependencies"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of this checkout's sources (no stale build folder in it)."""
    dist, source = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("source")
    for name in SOURCES:
        copy = shutil.copytree if (CLONE / name).is_dir() else shutil.copy
        copy(CLONE / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w",
         str(dist)],
        check=True, capture_output=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
    )  # fmt: skip
    (built,) = dist.glob("abiprobe-*.whl")
    return built


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Tool:
    uv = venv_tool("uv")
    tmp = tmp_path_factory.mktemp("tool")
    house = wheelhouse_of(_dependencies(), tmp / "house")
    if house is None:
        missing("a pure-Python wheelhouse of abiprobe's dependencies", "install them as wheels into the venv")
    home, outside = tmp / "home", tmp / "elsewhere"
    home.mkdir()
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env |= {
        "HOME": str(home),
        "UV_TOOL_DIR": str(tmp / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp / "bin"),
        "UV_CACHE_DIR": str(tmp / "uv-cache"),
        "UV_NO_CONFIG": "1",
        "UV_PYTHON_DOWNLOADS": "never",
    }
    subprocess.run(
        [uv, "tool", "install", "--offline", "--no-index", "--find-links", str(house),
         "--python", sys.executable, str(wheel)],
        check=True, capture_output=True, env=env, cwd=outside,
    )  # fmt: skip
    python = next((tmp / "tools" / "abiprobe" / "bin").glob("python3*"))
    return Tool(tmp / "bin" / "abiprobe", python, home, outside)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("solve-stack"))


@pytest.fixture(scope="module")
def server(stack: SolveStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        serve(srv, stack)
        srv.add_wheel(build_wheel(tmp_path_factory.mktemp("demo"), "demo", "1.0", {"demo/__init__.py": b""}))
        yield srv


def test_the_wheel_is_typed_licensed_and_versioned_once(wheel: Path) -> None:
    # GIVEN the built wheel; THEN it ships py.typed and the licence, its metadata names the licence as an
    # SPDX expression and the version abiprobe reports, and pyelftools (used by the tests alone) is no
    # runtime requirement
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    fields = [line.partition(": ") for line in meta.split("\n\n")[0].splitlines()]
    assert "abiprobe/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert ("License-Expression", ": ", "Apache-2.0") in fields
    assert ("Version", ": ", abiprobe.__version__) in fields
    assert ("Classifier", ": ", "Typing :: Typed") in fields
    runtime = [v for k, _, v in fields if k == "Requires-Dist" and "extra ==" not in v]
    assert runtime and not any(v.startswith("pyelftools") for v in runtime)


def test_the_tools_environment_has_no_pip(tool: Tool) -> None:
    probe = subprocess.run([str(tool.python), "-c", "import pip"], capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'pip'" in probe.stderr


def test_version_runs_outside_the_clone(tool: Tool) -> None:
    done = tool.run("--version")
    assert (done.returncode, done.stdout.split()[0]) == (0, "abiprobe")


def test_index_ls_reads_uvs_default_index_variable(tool: Tool, server: IndexServer) -> None:
    # GIVEN only UV_DEFAULT_INDEX naming the local index server (and pip's find-links, as on this machine)
    # WHEN the installed tool lists demo outside the clone
    done = tool.run("index", "ls", "demo", "--json", UV_DEFAULT_INDEX=server.index_url)
    # THEN it finds the wheel there
    assert done.returncode == 0, done.stderr
    files = [c["file"]["filename"] for c in json.loads(done.stdout)["candidates"]]
    assert files == [DEMO]


def test_config_finds_pips_default_index_from_a_pip_elsewhere(tool: Tool, server: IndexServer) -> None:
    # GIVEN pip configured with an extra index only, so pip's built-in default is its primary index
    done = tool.run("config", "--cuda", "none", "--json", PIP_EXTRA_INDEX_URL=server.index_url)
    # THEN the tool, without pip of its own, names that default (read from the machine's pip)
    assert done.returncode == 0, done.stderr
    indexes = json.loads(done.stdout)["indexes"]
    assert [i["origin"] for i in indexes] == ["PIP_EXTRA_INDEX_URL", "pip's built-in default"]


def test_solve_runs_outside_the_clone_and_again_offline(tool: Tool, server: IndexServer) -> None:
    # GIVEN the fixture stack on the local index server
    args = ["solve", "--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG,
            "--platform", "manylinux_2_28_x86_64", "--index", server.index_url, "--json"]  # fmt: skip
    # WHEN the tool solves it, then solves it again offline
    first = tool.run(*args)
    again = tool.run(*args, "--offline")
    # THEN both choose the stack's newest passing set
    for done in (first, again):
        assert done.returncode == 0, done.stderr
        chosen = json.loads(done.stdout)["chosen"]
        assert chosen is not None and "torch==2.9.0" in json.dumps(chosen)
