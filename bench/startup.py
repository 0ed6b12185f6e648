"""Start-up of the abiprobe command: ``--version`` and a solve's imports and parser (``solve --help``),
each the median of fresh interpreters with bytecode cached (as an installed tool runs). Used by
bench_solve_real.py; runnable alone: ``python bench/startup.py [RUNS]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROWS = {"version": ["--version"], "solve_startup": ["solve", "--help"]}


def median_seconds(argv: Sequence[str], env: Mapping[str, str], cwd: Path, runs: int) -> float:
    """The median wall time of ``runs`` runs of ``argv`` after one run that warms the bytecode cache."""
    times = []
    for i in range(runs + 1):
        started = time.perf_counter()
        subprocess.run(argv, env=dict(env), cwd=cwd, capture_output=True, check=True)
        if i:
            times.append(time.perf_counter() - started)
    return round(statistics.median(times), 3)


def startup_rows(env: Mapping[str, str], cwd: Path, runs: int = 5) -> dict[str, float]:
    """Seconds for each row of ``ROWS``, and for a bare interpreter (the floor under them)."""
    rows = {name: median_seconds([sys.executable, "-m", "abiprobe", *args], env, cwd, runs)
            for name, args in ROWS.items()}  # fmt: skip
    rows["bare_python"] = median_seconds([sys.executable, "-c", "pass"], env, cwd, runs)
    return rows


if __name__ == "__main__":
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    print(json.dumps(startup_rows(env, Path(__file__).resolve().parent.parent, count), indent=1))
