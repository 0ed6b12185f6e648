"""Benchmark ``abiprobe inspect WHEEL`` against ``auditwheel show WHEEL`` on the same file (run by hand).

The two commands alternate, each in a fresh process, against a scratch copy of the committed
``wheel_index_cache/`` (so the cached torch releases are there, as in a clone); one unmeasured run of
each first (abiprobe stores the wheel's facts, both warm the page cache). Per command: the median wall
time and the median peak RSS of N runs (``os.wait4``: the child's own rusage), and their ratio to
auditwheel's, measured in the same run. Issue 31's goal: within 1.5x auditwheel's time and 60 MiB.

    python bench/bench_inspect.py WHEEL [--auditwheel PATH] [--abiprobe CMD] [--runs 5] [--json OUT]

``--abiprobe`` runs another build (``"env PYTHONPATH=/tmp/old python -m abiprobe"``) for a before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def measure(argv: list[str], cwd: Path) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of one run of ``argv`` in ``cwd`` (away from a checkout that
    ``python -m`` would import first); its output discarded, it must succeed."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_maxrss * 1024


def summary(samples: list[tuple[float, int]]) -> dict[str, Any]:
    return {
        "seconds": round(statistics.median(s for s, _ in samples), 3),
        "peak_rss_mib": round(statistics.median(r for _, r in samples) / 2**20, 1),
        "runs": [[round(s, 3), round(r / 2**20, 1)] for s, r in samples],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--auditwheel", default=shutil.which("auditwheel"), help="auditwheel executable")
    parser.add_argument("--abiprobe", help="command that runs abiprobe (default: the one beside python)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.auditwheel:
        raise SystemExit("auditwheel not found: pip install it into a scratch venv and pass --auditwheel")
    abiprobe = (
        shlex.split(args.abiprobe) if args.abiprobe else [str(Path(sys.executable).with_name("abiprobe"))]
    )
    wheel = args.wheel.resolve()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        cache = Path(tmp) / "wheel_index_cache"
        shutil.copytree(ROOT / "wheel_index_cache", cache)
        commands = {
            "abiprobe_inspect": [*abiprobe, "inspect", str(wheel), "--cache-dir", str(cache)],
            "auditwheel_show": [args.auditwheel, "show", str(wheel)],
        }
        samples: dict[str, list[tuple[float, int]]] = {k: [] for k in commands}
        for argv in commands.values():
            measure(argv, Path(tmp))
        for _ in range(args.runs):
            for key, argv in commands.items():
                samples[key].append(measure(argv, Path(tmp)))
    results: dict[str, Any] = {"wheel": args.wheel.name, **{k: summary(v) for k, v in samples.items()}}
    ours, theirs = results["abiprobe_inspect"], results["auditwheel_show"]
    results["ratio_seconds"] = round(ours["seconds"] / theirs["seconds"], 2)
    results["ratio_peak_rss"] = round(ours["peak_rss_mib"] / theirs["peak_rss_mib"], 2)
    results["goal"] = {
        "within 1.5x auditwheel's time": results["ratio_seconds"] <= 1.5,
        "at most 60 MiB": ours["peak_rss_mib"] <= 60,
    }
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
