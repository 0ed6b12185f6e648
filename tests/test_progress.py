"""Progress of cold work: the wheel being read, wheels done of the total, bytes, rate and ETA."""

from __future__ import annotations

import io

from rich.console import Console

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
