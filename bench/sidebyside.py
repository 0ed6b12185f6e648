"""Two commands measured side by side: each in a fresh process, alternated run by run (so that a load
that comes and goes on the machine falls on both), the median wall time and the median peak RSS of N
runs (``os.wait4``: the child's own rusage, not the largest child so far). Used by bench_inspect.py,
bench_warm_compile.py and bench_solve_real.py.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def measure(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, ok: Sequence[int] = (0,)
) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of one run of ``argv`` in ``cwd``; its output discarded, its exit
    status one of ``ok``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=None if env is None else dict(env),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) not in ok:
        raise SystemExit(f"{argv[0]} failed ({os.waitstatus_to_exitcode(status)}): {err.strip()[-800:]}")
    return wall, usage.ru_maxrss * 1024


def summary(samples: list[tuple[float, int]]) -> dict[str, Any]:
    return {
        "seconds": round(statistics.median(s for s, _ in samples), 3),
        "peak_rss_mib": round(statistics.median(r for _, r in samples) / 2**20, 1),
        "runs": [[round(s, 3), round(r / 2**20, 1)] for s, r in samples],
    }


def alternate(
    commands: Mapping[str, Sequence[str]],
    cwd: Path,
    runs: int = 5,
    env: Mapping[str, str] | None = None,
    ok: Sequence[int] = (0,),
) -> dict[str, dict[str, Any]]:
    """One unmeasured run of each command (caches, bytecode and the page cache warmed), then ``runs``
    rounds of one run each, in turn; the summary of each."""
    for argv in commands.values():
        measure(argv, cwd, env, ok)
    samples: dict[str, list[tuple[float, int]]] = {k: [] for k in commands}
    for _ in range(runs):
        for key, argv in commands.items():
            samples[key].append(measure(argv, cwd, env, ok))
    return {k: summary(v) for k, v in samples.items()}


def ratios(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, float | None]:
    """Our medians over theirs, time and memory."""

    def over(a: float, b: float) -> float | None:
        return round(a / b, 2) if b else None

    return {
        "ratio_seconds": over(ours["seconds"], theirs["seconds"]),
        "ratio_peak_rss": over(ours["peak_rss_mib"], theirs["peak_rss_mib"]),
    }
