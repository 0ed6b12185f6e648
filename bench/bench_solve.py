"""Benchmark ``abiprobe solve`` on the fixture stack served by the local index server.

Scenarios: fully cold (empty cache), warm re-solve (pages within the freshness window, every fact
cached), warm online (every page past the window: revalidated with conditional requests, each answered
after ``--rtt`` seconds, as a distant index would), fresh machine (a copy of the cache only,
``--offline``). Reports wall time, peak Python memory (tracemalloc), requests and bytes fetched, the
candidate wheels' total size and what a naive loop (download every candidate) would fetch, and warm
online against warm offline measured in the same run.

    python bench/bench_solve.py [--rtt 0.1] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
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
from abiprobe.store.cache import Cache  # noqa: E402


def age_pages(cache: Path, seconds: float) -> int:
    """Make every stored page look fetched ``seconds`` ago (past the freshness window)."""
    store = Cache(cache)
    pages = store.stale_pages(-1.0)
    for page in pages:
        store.touch_page(page.url, time.time() - seconds)
    return len(pages)


def verification(cache: Path, served: dict[str, int]) -> dict[str, int]:
    """Of the wheels whose facts a cold solve stored: how many were hashed whole (verified) and how many
    were range-read (unverified), and the cost of verifying those too: their bytes not fetched."""
    store = Cache(cache)
    out = {"verified": 0, "unverified": 0, "bytes_to_verify": 0}
    for path in sorted((cache / "facts").rglob("*.facts.gz")):
        facts = store.load_facts(path.name.split(".")[0], allow_partial=True, allow_unverified=True)
        if facts is None:
            continue
        if facts.verified:
            out["verified"] += 1
            continue
        out["unverified"] += 1
        fetched = sum(n for p, n in served.items() if p.endswith("/" + facts.filename))
        out["bytes_to_verify"] += max(0, facts.size - fetched)
    return out


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
        "requests": sum(server.requests.values()),
        "not_pages": sorted({p for p, _h, _s in server.log if not p.startswith("/simple/")}),
        "analyses": doc["stats"]["analyses"],
        "naive_analyses": doc["stats"]["naive_analyses"],
    }


def main_bench() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--rtt", type=float, default=0.1, help="seconds each page request waits (warm online)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        stack = solve_stack(tmp / "build")
        wheel_bytes = sum(p.stat().st_size for p in stack.wheels.values())
        with IndexServer() as server:
            serve(server, stack)
            results = {"cold": run(server, tmp / "cache", tmp / "m1")}
            verify = verification(tmp / "cache", dict(server.bytes_served))
            results["warm"] = run(server, tmp / "cache", tmp / "m2")
            shutil.copytree(tmp / "cache", tmp / "fresh-cache")
            results["fresh_offline"] = run(server, tmp / "fresh-cache", tmp / "m3", "--offline")
            aged = age_pages(tmp / "cache", 3600)
            server.fail(match="/simple/", delay=args.rtt)
            results["warm_online"] = run(server, tmp / "cache", tmp / "m4")
            server.clear_faults()
            results["warm_offline"] = run(server, tmp / "cache", tmp / "m5", "--offline")
    online, offline = results["warm_online"]["seconds"], results["warm_offline"]["seconds"]
    ratio = float(online) / max(float(offline), 1e-9)  # type: ignore[arg-type]
    summary = {"candidate_wheel_bytes": wheel_bytes, "naive_loop_bytes": wheel_bytes, "scenarios": results,
               "warm_online_over_offline": round(ratio, 2), "load": os.getloadavg(),
               "cold_verification": verify}  # fmt: skip
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"all served wheels: {wheel_bytes} bytes (a naive loop downloads each candidate whole)")
        for name, r in results.items():
            print(
                f"{name:>14}: rc={r['rc']} {r['seconds']:.2f}s peak {r['peak_mib']} MiB, "
                f"{r['requests']} requests, fetched {r['bytes_fetched']} bytes, {r['analyses']} analyses "
                f"(naive {r['naive_analyses']})"
                + (f"; not pages: {r['not_pages']}" if r["not_pages"] else "")
            )
        print(
            f"cold: facts of {verify['verified']} wheels verified (hashed whole), {verify['unverified']} "
            f"range-read; verifying those too would fetch {verify['bytes_to_verify']} more bytes"
        )
        load = os.getloadavg()
        print(
            f"warm online ({aged} pages past the window, {args.rtt:.2f} s a request) / warm offline: "
            f"{ratio:.2f}x; target warm online under 0.5 s: "
            f"{'met' if float(online) < 0.5 else 'NOT met'} (load {load[0]:.2f})"  # type: ignore[arg-type]
        )
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
