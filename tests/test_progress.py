"""Progress of cold work: the wheel being read, wheels done of the total, bytes, rate and ETA."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_argv, solve_stack

from abiprobe.cli import main
from abiprobe.ui.progress import Display, status_line


def test_status_line_counts_wheels_and_bytes_with_rate_and_eta() -> None:
    assert status_line(3, 17, 45_200_000, 10.0, count=True) == "3/17 wheels, 45.2 MB at 4.5 MB/s, ETA 0:46"
    assert status_line(1_000_000, 4_000_000, 1_000_000, 2.0, count=False) == (
        "1.0 MB of 4.0 MB at 500.0 kB/s, ETA 0:06"
    )


def test_the_overall_line_names_the_wheel_being_read() -> None:
    # GIVEN a display on a terminal-like console
    out = io.StringIO()
    display = Display(Console(file=out, force_terminal=True, width=200, color_system=None))
    # WHEN three wheels are read and bytes arrive for the first
    with display.wheels(3) as work:
        work.started("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl")
        display.received(2_500_000)
        work.finished("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl")
        work.started("sglang_kernel-0.4.0-cp310-abi3-manylinux_2_28_x86_64.whl")
    text = out.getvalue()
    # THEN the line names the wheel and counts wheels done, bytes, rate and time left
    assert "reading sglang_kernel-0.4.0-cp310-abi3-manylinux_2_28_x86_64.whl" in text
    assert "1/3 wheels, 2.5 MB at " in text and "ETA " in text


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_on_a_terminal_the_overall_bytes_follow_the_bytes_as_they_arrive() -> None:
    # GIVEN a display on a terminal-like console, two wheels being read
    out, clock = io.StringIO(), Clock()
    display = Display(Console(file=out, force_terminal=True, width=200, color_system=None), clock=clock)
    with display.wheels(2) as work:
        work.started("a-1.0-py3-none-any.whl")
        work.started("b-1.0-py3-none-any.whl")
        # WHEN bytes arrive a second later, before either is finished
        clock.now += 1
        display.received(2_500_000)
    # THEN the overall line counts them (it did not move from 0 B until a wheel finished)
    assert "0/2 wheels, 2.5 MB at " in out.getvalue()


def test_off_a_terminal_a_plain_line_is_printed_every_interval_with_the_counts() -> None:
    # GIVEN a display writing plain lines every 5 s of a hand-moved clock, three wheels being read
    out, clock = io.StringIO(), Clock()
    display = Display(stream=out, clock=clock, interval=5.0)
    with display.wheels(3) as work:
        work.started("a-1.0-py3-none-any.whl")
        # WHEN bytes arrive within the first interval: nothing is printed
        clock.now += 2
        display.received(1_000_000)
        assert out.getvalue() == ""
        # WHEN they keep arriving past it: one line, then another once a wheel is done and 5 s more passed
        clock.now += 3
        display.received(1_000_000)
        work.finished("a-1.0-py3-none-any.whl")
        work.started("b-1.0-py3-none-any.whl")
        work.started("c-1.0-py3-none-any.whl")
        clock.now += 1
        display.received(1_000_000)
        clock.now += 4
        display.received(1_000_000)
    # THEN each line names what is read, done of the total, bytes and rate; a last one when the work ends
    assert out.getvalue().splitlines() == [
        "abiprobe: reading a-1.0-py3-none-any.whl: 0/3 wheels, 2.0 MB at 400.0 kB/s, ETA -:--",
        "abiprobe: reading b-1.0-py3-none-any.whl (+1 more): 1/3 wheels, 4.0 MB at 400.0 kB/s, ETA 0:20",
        "abiprobe: reading b-1.0-py3-none-any.whl (+1 more): 1/3 wheels, 4.0 MB at 400.0 kB/s, ETA 0:20",
    ]


def test_off_a_terminal_a_lone_download_gets_plain_lines_too() -> None:
    # GIVEN a display writing plain lines, and one download outside any wheel work
    out, clock = io.StringIO(), Clock()
    display = Display(stream=out, clock=clock, interval=5.0)
    with display.file("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl", 8_000_000) as advance:
        # WHEN half its bytes arrive over 6 s
        clock.now += 6
        advance(4_000_000)
        display.received(4_000_000)
    # THEN one line says what is downloaded, how much of the total, and the rate
    assert out.getvalue() == (
        "abiprobe: downloading torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl: "
        "4.0 MB of 8.0 MB at 666.7 kB/s, ETA 0:06\n"
    )


def test_a_cold_solve_off_a_terminal_prints_plain_progress_lines_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the fixture stack on a local index, stderr not a terminal, and plain lines due at every event
    from abiprobe.ui.progress import DISPLAY

    stack = solve_stack(tmp_path / "stack")
    monkeypatch.setattr(DISPLAY, "interval", 0.0)
    with IndexServer() as srv:
        serve(srv, stack)
        # WHEN a cold solve reads the wheels
        main(solve_argv(srv.index_url, tmp_path / "cache", tmp_path / "m"))
    err = capsys.readouterr().err.splitlines()
    # THEN stderr has plain progress lines: the wheel read, done of the total, bytes and a rate
    lines = [line for line in err if line.startswith("abiprobe: reading ")]
    assert lines
    assert all(re.search(r": \d+/\d+ wheels, [\d.]+ [kMG]?B at ", line) for line in lines)
    assert any(not line.endswith(" 0 B at -, ETA -:--") for line in lines)
