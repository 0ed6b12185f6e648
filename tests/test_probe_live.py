"""Real imports of real wheel sets from the default index vs the static verdict: docs/live-results.md.

Each test runs one row of bench/live_predictions.py: lock torch for CPython 3.12 with ``uv pip compile``,
download the exact wheels (3-5 GB per torch release, reused from $ABIPROBE_LIVE_WORK), ``abiprobe check``
them, then ``abiprobe probe`` them (driver stub on GPU-less hosts) and compare. Run by hand::

    ABIPROBE_LIVE_WORK=/var/tmp/live ABIPROBE_LIVE_PYTHON=python3.12 pytest -m live tests/test_probe_live.py
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
NEEDED_FREE = 25 * 10**9

# (set, static load verdict, probe outcome, a string the probe message or static line must contain);
# the static verdict is the one under manylinux_2_28 plus the host libraries the probe's loader can see
ROWS = [
    ("torch==2.9.1:sgl-kernel==0.3.21", "ok", "ok", ""),
    ("torch==2.11.0:sgl-kernel==0.3.21", "fail", "missing_soname", ".so.12"),
    ("torch==2.9.1:sglang-kernel==0.4.0", "ok", "ok", ""),
    ("torch==2.9.1:sglang-kernel==0.4.10", "fail", "missing_soname", ".so.13"),
    ("torch==2.11.0:sglang-kernel==0.4.10", "fail", "undefined_symbol", "CUDAErrorLogCapture"),
    ("torch==2.14.1:sglang-kernel==0.4.10", "ok", "ok", ""),
]


def _work() -> Path:
    if shutil.which("uv") is None:
        pytest.skip("uv is not on PATH (needed to lock torch's runtime dependencies)")
    work = Path(os.environ.get("ABIPROBE_LIVE_WORK", "/var/tmp/abiprobe-live"))
    work.mkdir(parents=True, exist_ok=True)
    if shutil.disk_usage(work).free < NEEDED_FREE:
        pytest.skip(f"less than {NEEDED_FREE // 10**9} GB free under {work}")
    return work


def _python312() -> str:
    found = os.environ.get("ABIPROBE_LIVE_PYTHON") or shutil.which("python3.12")
    if found is None:
        pytest.skip("no python3.12 on PATH (or $ABIPROBE_LIVE_PYTHON) for the probe venvs")
    return found


def _row(spec: str) -> dict[str, Any]:
    sys.path.insert(0, str(BENCH))
    try:
        import live_predictions as lp
    finally:
        sys.path.remove(str(BENCH))
    work = _work()
    try:
        return lp.run_set(lp.parse_set(spec), work, _python312(), {"bytes": 0, "download_s": 0.0})
    except (OSError, lp.httpx.HTTPError) as exc:
        pytest.skip(f"network or disk unavailable: {exc}")


@pytest.mark.live
@pytest.mark.parametrize(("spec", "static", "outcome", "needle"), ROWS, ids=[r[0] for r in ROWS])
def test_live_static_verdict_agrees_with_the_real_import(
    spec: str, static: str, outcome: str, needle: str
) -> None:
    # GIVEN a real torch release with its locked runtime wheels and a real kernel wheel
    # WHEN it is checked statically and then imported for real
    row = _row(spec)
    # THEN both say the same thing, and the probe fails (if it does) the way the static line explains
    assert (row["static_load"], row["probe_outcome"]) == (static, outcome)
    assert row["agree"]
    assert needle in row["probe_message"] + row["host_static_why"]
