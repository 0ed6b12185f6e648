"""SIGINT and SIGTERM stop a real `abiprobe solve` or `probe` in whatever phase it is held: page fetches,
wheel range reads, storing an analysis, a venv build, an installer. Each phase is held on purpose (the
local index server stalls until the test ends, a write blocks on a FIFO, an interpreter or installer
never returns), so an exit at all proves the signal stopped it; the exit says so once, with 130 (143
for SIGTERM), and leaves no temporary file, no cache temp entry and no child process."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.holds import held_write
from support.indexserver import IndexServer
from support.probe_wheels import ProbeWheels, build_probe_wheels
from support.solve_stacks import SolveStack, serve, solve_argv, solve_stack

from abiprobe.store.cache import Cache
from abiprobe.store.primitives import HOLD_NAME, HOLD_WRITE

REPO = Path(__file__).resolve().parents[1]
WAIT_S = 180.0  # how long a phase may take to be reached on a loaded machine (not a bound on the exit)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("interrupt-stack"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> ProbeWheels:
    return build_probe_wheels(tmp_path_factory.mktemp("interrupt-wheels"))


@pytest.fixture
def server(stack: SolveStack) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        serve(srv, stack)
        yield srv


def _start(argv: list[str], tmp: Path, **env: str) -> subprocess.Popen[str]:
    """``abiprobe ARGV`` in its own process, its temporary files under ``tmp/t``."""
    (tmp / "t").mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "abiprobe", *argv],
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            "TMPDIR": str(tmp / "t"),
            "ABIPROBE_CACHE_DIR": str(tmp / "default-cache"),  # never the repository's cache
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as in a terminal: a test run started in the background inherits SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _stop(proc: subprocess.Popen[str], signum: int) -> tuple[int, str, float]:
    """Send ``signum``; the exit status, stderr and the seconds until the process was gone."""
    sent = time.monotonic()
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=WAIT_S)
    seconds = time.monotonic() - sent
    print(f"signal {signum}: exited {proc.returncode} after {seconds:.3f} s")  # shown with pytest -s
    return proc.returncode, err, seconds


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _assert_nothing_left(tmp: Path, cache: Path | None = None) -> None:
    assert list((tmp / "t").iterdir()) == []
    assert _processes_mentioning(str(tmp)) == []
    if cache is not None:
        assert list(cache.rglob(".tmp-*")) == []
        assert [p for p in Cache(cache).verify().problems if p.kind == "temp"] == []


def test_sigterm_during_a_cold_page_fetch_stops_the_solve(server: IndexServer, tmp_path: Path) -> None:
    # GIVEN a cold solve whose index takes every project page and never answers
    server.fail(match="/simple/", stall=True)
    cache = tmp_path / "cache"
    proc = _start(solve_argv(server.index_url, cache, tmp_path / "out"), tmp_path)
    assert server.wait_stalled(1, WAIT_S), "no page was asked for"
    # WHEN it is told to terminate
    returncode, err, seconds = _stop(proc, signal.SIGTERM)
    # THEN it exits 143, says so once, and leaves nothing behind
    assert (returncode, err) == (143, "abiprobe: interrupted\n"), seconds
    _assert_nothing_left(tmp_path, cache)


def test_ctrl_c_while_stale_pages_are_revalidated_stops_the_solve(
    server: IndexServer, tmp_path: Path
) -> None:
    # GIVEN a solved stack whose stored pages are past the freshness window, and an index that now
    # takes the conditional requests (asked by a pool of threads at once) and never answers them
    cache = tmp_path / "cache"
    argv = solve_argv(server.index_url, cache, tmp_path / "out")
    assert subprocess.run([sys.executable, "-m", "abiprobe", *argv], capture_output=True).returncode == 0
    store = Cache(cache)
    for page in store.stale_pages(-1.0):
        store.touch_page(page.url, time.time() - 3600)
    server.fail(match="/simple/", stall=True)
    proc = _start(argv, tmp_path)
    assert server.wait_stalled(2, WAIT_S), "the stored pages were not asked about"
    # WHEN the user presses Ctrl-C
    returncode, err, seconds = _stop(proc, signal.SIGINT)
    # THEN it exits 130 without waiting for the threads, and leaves nothing behind
    assert (returncode, err) == (130, "abiprobe: interrupted\n"), seconds
    _assert_nothing_left(tmp_path, cache)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_wheel_range_reads_stops_the_solve(
    server: IndexServer, tmp_path: Path, signum: int, code: int
) -> None:
    # GIVEN a cold solve whose wheel reads send 3,000 bytes each and then hold the rest forever
    server.fail(match="/files/", stall_after=3000, unless=".metadata")
    cache = tmp_path / "cache"
    proc = _start(solve_argv(server.index_url, cache, tmp_path / "out"), tmp_path)
    assert server.wait_stalled(2, WAIT_S), "the wheel reads never started"
    # WHEN the signal comes while several readers wait on their bodies
    returncode, err, seconds = _stop(proc, signum)
    # THEN it exits at once with the signal's status, and no reader left a temporary entry
    assert (returncode, err) == (code, "abiprobe: interrupted\n"), seconds
    _assert_nothing_left(tmp_path, cache)


def test_sigterm_while_an_analysis_is_half_stored_removes_its_temporary_file(
    server: IndexServer, tmp_path: Path
) -> None:
    # GIVEN a cold solve held in the middle of storing its first analysis (half the entry written)
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    cache = tmp_path / "cache"
    argv = solve_argv(server.index_url, cache, tmp_path / "out")
    proc = _start(argv, tmp_path, **{HOLD_WRITE: str(fifo), HOLD_NAME: "*.analysis.gz"})
    temp = held_write(fifo, proc, WAIT_S)
    assert temp.is_file() and temp.stat().st_size > 0
    # WHEN it is told to terminate
    returncode, err, seconds = _stop(proc, signal.SIGTERM)
    # THEN the half-written entry's temporary file is gone with the process
    assert (returncode, err) == (143, "abiprobe: interrupted\n"), seconds
    assert not temp.exists()
    _assert_nothing_left(tmp_path, cache)


def _stalling_program(path: Path, mark: Path, when: str, real: str) -> Path:
    """A shell script that stands for ``real`` but, called with arguments matching ``when``, runs a child
    that never ends (its command line names ``mark``, so a survivor is found)."""
    path.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            case "$*" in
              {when}) exec {sys.executable} -c 'import time; time.sleep(3600)' {mark} ;;
            esac
            exec {real} "$@"
            """
        )
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _wait_for_process(mark: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not _processes_mentioning(str(mark)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the held child never started"
        time.sleep(0.05)


def test_sigterm_during_a_probe_venv_build_kills_the_builder(wheels: ProbeWheels, tmp_path: Path) -> None:
    # GIVEN a probe whose interpreter never finishes building the venv
    mark = tmp_path / "venv-builder"
    python = _stalling_program(tmp_path / "python", mark, '*"-m venv"*', sys.executable)
    proc = _start(["probe", str(wheels.base), str(wheels.good), "--python", str(python)], tmp_path)
    _wait_for_process(mark, proc)
    # WHEN it is told to terminate
    returncode, err, seconds = _stop(proc, signal.SIGTERM)
    # THEN it exits 143, the builder is gone, and so is the probe's temporary root
    assert (returncode, err) == (143, "abiprobe: interrupted\n"), seconds
    _assert_nothing_left(tmp_path)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_an_install_kills_the_installer(
    wheels: ProbeWheels, tmp_path: Path, signum: int, code: int
) -> None:
    # GIVEN a probe whose installer (uv, found on PATH) never finishes installing
    mark = tmp_path / "installer"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _stalling_program(bindir / "uv", mark, '*"pip install"*', "false")
    path = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    argv = ["probe", str(wheels.base), str(wheels.good), "--installer", "uv"]
    proc = _start(argv, tmp_path, PATH=path)
    _wait_for_process(mark, proc)
    # WHEN the signal comes
    returncode, err, seconds = _stop(proc, signum)
    # THEN it exits with the signal's status, the installer is gone, and so is the probe's temporary root
    assert (returncode, err) == (code, "abiprobe: interrupted\n"), seconds
    _assert_nothing_left(tmp_path)
