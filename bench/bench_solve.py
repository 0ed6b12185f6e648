"""Benchmark ``abiprobe solve`` on the fixture stack served by the local index server.

Scenarios: fully cold (empty cache), warm re-solve (pages revalidated, every fact cached), fresh machine
(a copy of the cache only, ``--offline``). Reports wall time, peak Python memory (tracemalloc), bytes
fetched, the candidate wheels' total size and what a naive loop (download every candidate) would fetch.

    python bench/bench_solve.py [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.indexserver import IndexServer  # noqa: E402
from support.solve_stacks import serve, solve_argv, solve_stack  # noqa: E402

from abiprobe.cli import main  # noqa: E402


def run(server: IndexServer, cache: Path, out: Path, *extra: str) -> dict[str, object]:
    server.reset_counts()
    tracemalloc.start()
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(solve_argv(server.index_url, cache, out, *extra))
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    doc = json.loads(next(out.glob("*.json")).read_text())
    return {
        "rc": rc,
        "seconds": round(seconds, 3),
        "peak_mib": round(peak / 2**20, 1),
        "bytes_fetched": server.total_bytes,
        "analyses": doc["stats"]["analyses"],
        "naive_analyses": doc["stats"]["naive_analyses"],
    }


def main_bench() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        stack = solve_stack(tmp / "build")
        wheel_bytes = sum(p.stat().st_size for p in stack.wheels.values())
        with IndexServer() as server:
            serve(server, stack)
            results = {"cold": run(server, tmp / "cache", tmp / "m1")}
            results["warm"] = run(server, tmp / "cache", tmp / "m2")
            shutil.copytree(tmp / "cache", tmp / "fresh-cache")
            results["fresh_offline"] = run(server, tmp / "fresh-cache", tmp / "m3", "--offline")
    summary = {"candidate_wheel_bytes": wheel_bytes, "naive_loop_bytes": wheel_bytes, "scenarios": results}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"all served wheels: {wheel_bytes} bytes (a naive loop downloads each candidate whole)")
        for name, r in results.items():
            print(
                f"{name:>14}: rc={r['rc']} {r['seconds']:.2f}s peak {r['peak_mib']} MiB, "
                f"fetched {r['bytes_fetched']} bytes, {r['analyses']} analyses "
                f"(naive {r['naive_analyses']})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
