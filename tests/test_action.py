"""What users drop into their own repositories: the composite action (its check step run here for real, as
a runner runs it, against a local index) and the pre-commit hook definition."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.first_error_wheels import build_first_error_wheels
from support.indexserver import IndexServer
from support.stacks import PLATFORM, PY_TAG
from support.wheelbuild import build_wheel
from test_workflows import REPO, run_step

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    root = tmp_path_factory.mktemp("action")
    with IndexServer() as srv:
        srv.add_wheel(build_wheel(root, "plainpkg", "1.0", {"plainpkg/__init__.py": b""}, tag="py3-none-any"))
        srv.add_wheel(build_first_error_wheels(root).needed)
        yield srv


def _step(name: str) -> dict[str, Any]:
    return next(s for s in ACTION["runs"]["steps"] if s["name"] == name)


def _check(tmp: Path, server: IndexServer, requirement: str) -> tuple[int, str, dict[str, str]]:
    """The action's check step with the inputs a workflow would give (env as the step maps them)."""
    reqs = tmp / "requirements.txt"
    reqs.write_text(requirement + "\n")
    inputs = {"file": str(reqs), "cuda": "13.0", "arch": "sm120", "python": PY_TAG, "platform": PLATFORM,
              "args": f"--index {server.index_url} --cache-dir {tmp / 'cache'}"}  # fmt: skip
    step = _step("Check")
    env = {
        k: re.sub(r"\$\{\{ inputs\.(\w+) \}\}", lambda m: inputs[m.group(1)], v)
        for k, v in step["env"].items()
    }
    env["RUNNER_TEMP"] = str(tmp)
    run = run_step(step["run"], tmp, env)
    return run.rc, run.summary, run.outputs


def test_the_action_declares_every_input_its_steps_use() -> None:
    used = set(re.findall(r"inputs\.(\w+)", (REPO / "action.yml").read_text()))
    assert ACTION["runs"]["using"] == "composite"
    assert used == set(ACTION["inputs"])
    # AND no input is spliced into a script (the runner would run it as code): only through env
    assert all("inputs." not in s["run"] for s in ACTION["runs"]["steps"])


def test_the_action_passes_a_set_that_loads(tmp_path: Path, server: IndexServer) -> None:
    rc, summary, outputs = _check(tmp_path, server, "plainpkg==1.0")
    assert (rc, outputs["exit-code"]) == (0, "0")
    assert "OK" in summary


def test_the_action_fails_the_job_with_the_loaders_words(tmp_path: Path, server: IndexServer) -> None:
    # GIVEN a requirements file naming a wheel whose extension needs a library nobody ships
    rc, summary, outputs = _check(tmp_path, server, "fe-needed==1.0")
    # THEN the step fails with check's exit code, and the summary says why in the loader's words
    assert rc == 12 and outputs["exit-code"] == "12"  # 4 missing soname | 8 the symbols it would bind
    assert "libzz_absent.so.1: cannot open shared object file" in summary


def test_the_install_step_installs_the_action_checkout() -> None:
    step = _step("Install abiprobe")
    assert step["env"]["ABIPROBE_SOURCE"] == "${{ github.action_path }}"
    assert 'pip install --quiet "$ABIPROBE_SOURCE"' in step["run"]


def test_the_pre_commit_hook_checks_requirements_and_lock_files() -> None:
    (hook,) = HOOKS
    assert hook["entry"] == "abiprobe check" and hook["language"] == "python" and hook["pass_filenames"]
    files = re.compile(hook["files"])
    for name in ("requirements.txt", "ci/requirements-gpu.txt", "pylock.toml", "pylock.cu130.toml"):
        assert files.search(name), name
    for name in ("README.txt", "pyproject.toml", "requirements.in"):
        assert not files.search(name), name


def test_the_hook_entry_runs_as_pre_commit_runs_it(tmp_path: Path, server: IndexServer) -> None:
    # GIVEN the hook's entry, a user's args and a changed requirements file, in pre-commit's order
    (hook,) = HOOKS
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("fe-needed==1.0\n")
    args = ["--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG, "--platform", PLATFORM,
            "--index", server.index_url, "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    from support.tools import venv_path_env

    done = subprocess.run([*hook["entry"].split(), *args, str(reqs)], capture_output=True, text=True,
                          env=venv_path_env())  # fmt: skip
    # THEN the commit is stopped, with the reason
    assert done.returncode == 12, done.stderr
    assert "libzz_absent.so.1" in done.stdout
