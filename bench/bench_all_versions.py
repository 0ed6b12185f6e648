"""``solve --all-versions`` at fixture scale: T torch x K kernel x F flashinfer releases, cold and warm.

Each scenario runs ``abiprobe solve --all-versions`` in its own process against the local index server
(real wheels with real ELF objects, ``tests/support/solve_stacks.build_history_stack``), so wall time
includes interpreter start-up and peak memory is the process's maximum RSS. Ratios are against the
smallest scale measured in the same run (cost should grow with pairs, T*K + T*F, not with T*K*F).

    python bench/bench_all_versions.py [--scale 10x15x20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.indexserver import IndexServer  # noqa: E402
from support.solve_stacks import build_history_stack, solve_argv  # noqa: E402

# the solve's own process reports its peak RSS (ru_maxrss of a waited child is the largest child so far)
CHILD = """
import resource, sys
from abiprobe.cli import main
try:
    rc = main(sys.argv[1:])
finally:
    print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(rc)
"""


def _solve(server: IndexServer, cache: Path, out: Path, *extra: str) -> dict[str, object]:
    """One solve in a fresh process: wall seconds, that process's peak RSS, bytes the server sent."""
    server.reset_counts()
    argv = [sys.executable, "-c", CHILD, *solve_argv(server.index_url, cache, out, "--all-versions", *extra)]
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    seconds = time.perf_counter() - started
    # offline, a project no index lists (sgl-kernel here) was never stored as a page: rc 3 says so
    if proc.returncode not in (0, 1) and not (proc.returncode == 3 and "--offline" in extra):
        sys.exit(f"solve failed (rc {proc.returncode}): {(proc.stdout + proc.stderr).strip()[-600:]}")
    doc = json.loads(next(out.glob("*.json")).read_text())
    stats = doc["stats"]
    return {
        "rc": proc.returncode,
        "seconds": round(seconds, 3),
        "peak_rss_mib": round(int(proc.stderr.rsplit("maxrss_kib ", 1)[1]) / 1024, 1),
        "requests": dict(server.requests),
        "bytes_fetched": server.total_bytes,
        "cells": len(doc["cells"]),
        "analyses": stats["analyses"],
        "analyses_run": stats.get("analyses_run"),
        "naive_analyses": stats["naive_analyses"],
    }


def scale_run(tmp: Path, t: int, k: int, f: int) -> dict[str, object]:
    stack = build_history_stack(tmp / f"build-{t}x{k}x{f}", t, k, f)
    with IndexServer() as server:
        for wheel in stack.wheels:
            server.add_wheel(wheel)
        cache = tmp / f"cache-{t}x{k}x{f}"
        cold = _solve(server, cache, tmp / f"m-cold-{t}x{k}x{f}")
        warm = _solve(server, cache, tmp / f"m-warm-{t}x{k}x{f}")
        offline = _solve(server, cache, tmp / f"m-off-{t}x{k}x{f}", "--offline")
    return {"scale": f"{t}x{k}x{f}", "pairs": t * (k + f), "product": t * k * f,
            "cold": cold, "warm": warm, "warm_offline": offline}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="10x15x20", help="torch x kernel x flashinfer releases")
    ap.add_argument("--base", default="2x3x4", help="the small scale the ratios are taken against")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    scales = [tuple(int(n) for n in s.split("x")) for s in (args.base, args.scale)]
    with tempfile.TemporaryDirectory(prefix="bench-allv-") as tmp_s:
        runs = [scale_run(Path(tmp_s), *s) for s in scales]
    load = os.getloadavg()
    base, big = runs
    summary = {"load": load, "runs": runs}
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for r in runs:
        for name in ("cold", "warm", "warm_offline"):
            s = r[name]
            assert isinstance(s, dict)
            print(
                f"{r['scale']:>9} {name:>12}: {s['seconds']:6.2f}s  peak RSS {s['peak_rss_mib']} MiB  "
                f"{s['cells']} cells  {s['analyses']} analyses ({s['analyses_run']} run, naive "
                f"{s['naive_analyses']})  fetched {s['bytes_fetched']} B"
            )
    for name in ("cold", "warm"):
        b, g = base[name], big[name]
        assert isinstance(b, dict) and isinstance(g, dict)
        pairs = int(big["pairs"]) / int(base["pairs"])  # type: ignore[call-overload]
        product = int(big["product"]) / int(base["product"])  # type: ignore[call-overload]
        print(
            f"{name}: {big['scale']} / {base['scale']} time {g['seconds'] / b['seconds']:.2f}x  "
            f"for pairs {pairs:.1f}x, product {product:.1f}x"
        )
    w = big["warm"]
    assert isinstance(w, dict)
    verdict = "met" if float(w["seconds"]) < 5 and float(w["peak_rss_mib"]) < 300 else "NOT met"
    print(f"target (warm {big['scale']} under 5 s and 300 MB): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
