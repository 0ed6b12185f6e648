"""`abiprobe probe` as a user runs it: JSON output, exit codes, and cleanup after Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from support.probe_wheels import ProbeWheels, build_probe_wheels
from support.schemas import assert_valid
from support.wheelbuild import build_wheel

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> ProbeWheels:
    return build_probe_wheels(tmp_path_factory.mktemp("probe-cli-wheels"))


def _cli(args: list[str], tmp: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TMPDIR": str(tmp),
        "ABIPROBE_CACHE_DIR": str(tmp.parent / "cache"),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "abiprobe", "probe", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        # as in a terminal: a test run started in the background inherits SIGINT ignored, and Python
        # installs no KeyboardInterrupt handler for an ignored SIGINT
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if text.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _runner_started(tmp: Path) -> bool:
    """The in-venv runner (not only the CLI) is running: its spec file is on a live command line."""
    return any(b"spec.json" in _cmdline(pid) for pid in _processes_mentioning(str(tmp)))


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_json_result_and_failing_exit_code(wheels: ProbeWheels, tmp_path: Path) -> None:
    # GIVEN a set whose extension imports a symbol nothing exports
    proc = _cli([str(wheels.base), str(wheels.undefined), "--json", "--expect", "ok"], tmp_path)
    out, _err = proc.communicate(timeout=120)
    # THEN the JSON says so, loudly disagrees with the static verdict, and the exit code is 1
    doc = assert_valid(json.loads(out), "probe")
    [result] = doc["results"]
    assert (proc.returncode, result["outcome"], result["disagrees"]) == (1, "undefined_symbol", True)
    assert result["module"] == "undefined"
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_kills_the_probe_and_removes_every_temporary_file(wheels: ProbeWheels, tmp_path: Path) -> None:
    # GIVEN a probe stuck in an import that never ends
    proc = _cli([str(wheels.base), str(wheels.sleeper), "--timeout", "300"], tmp_path)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (
        list(tmp_path.glob("abiprobe-probe-*/layer*/set*/home")) and _runner_started(tmp_path)
    ):
        time.sleep(0.1)
    assert _processes_mentioning(str(tmp_path)), "the probe child never started"
    # WHEN the user presses Ctrl-C
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    # THEN it exits 130, no probed process survives, and the temp root is gone
    assert proc.returncode == 130
    assert _processes_mentioning(str(tmp_path)) == []
    assert list(tmp_path.iterdir()) == []


def test_a_zip_bomb_is_refused_before_any_installer_sees_it(tmp_path: Path) -> None:
    # GIVEN a wheel whose library member is 128 MiB of zeros (deflated to a few hundred kB; its
    # declared sizes are true), and an installer on PATH that notes every time it runs
    wheel = build_wheel(tmp_path / "w", "bombpkg", "1.0", {"bombpkg/__init__.py": b""}, tag="py3-none-any")
    with zipfile.ZipFile(wheel, "a", zipfile.ZIP_DEFLATED) as zf, zf.open("bombpkg/bomb.so", "w") as fh:
        for _ in range(128):
            fh.write(bytes(1 << 20))
    assert wheel.stat().st_size < 1 << 20
    ran = tmp_path / "installer-ran"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "uv").write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    (bindir / "uv").chmod(0o755)
    temp = tmp_path / "t"
    temp.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TMPDIR": str(temp),
        "ABIPROBE_CACHE_DIR": str(tmp_path / "cache"),
    }
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    # WHEN it is probed
    done = subprocess.run(
        [sys.executable, "-m", "abiprobe", "probe", str(wheel), "--installer", "uv"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # THEN one line names the member that is the bomb, the exit is non-zero, no installer ran, and
    # nothing was written
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1 and "bombpkg/bomb.so" in done.stderr and "zip bomb" in done.stderr
    assert not ran.exists()
    assert list(temp.iterdir()) == []
