"""``solve --all-versions`` over the real releases the indexes list for the target (run by hand).

Every torch, kernel (sgl-kernel, sglang-kernel) and flashinfer release the reachable indexes list for
CPython 3.12 / manylinux_2_28_x86_64, CUDA 13.0, sm120. Phases (each in its own interpreter, bytecode
cached, the installer's default index configuration only):

- ``--phase cold``: the solve into ``--cache`` (a scratch folder kept between runs, so that a cold run cut
  short resumes where it stopped: entries are written whole or not at all). Prints wall time, peak RSS,
  requests and bytes received, cells and analyses.
- ``--phase floor``: the floor (compressed bytes of the members the verdicts needed, from the wheels' zip
  directories) and the naive loop estimated from the lock (every cell's whole install; uv's cache shared;
  only the cells whose requirements agree, which uv would install at all), to set the cold bytes against.
- ``--phase warm``: over that cache, the fastest of three runs each of warm offline, warm online inside
  the freshness window and warm online past it (the child's clock moved on 11 minutes a run), and the
  default 3 x 3 x 3 solve offline over the same cache: the ratios are against those, measured in the
  same run (the cost should grow with pairs, T*K + T*F, not with the product T*K*F).

    python bench/bench_all_versions_real.py --cache /var/tmp/allv --phase cold --json cold.json
    python bench/bench_all_versions_real.py --cache /var/tmp/allv --phase warm --json warm.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_solve_real import ARGS, CHILD, WINDOW_PASSED, child_env, naive_installs, read_floor, save  # noqa: E402
from bench_solve_real import fastest as fastest_of  # noqa: E402

# the child writes the matrix document where it is told, and reports its own peak RSS
CHILD_DOC = CHILD.replace(
    'rc = main(["solve", *args, "--cache-dir", sys.argv[1], "--no-write", "--json"])',
    'rc = main(["solve", *args, "--cache-dir", sys.argv[1], "--out-dir", sys.argv[1] + "-matrix"])',
).replace(
    'print(json.dumps({"rc": rc, **counts}))',
    "import resource\n"
    'counts["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n'
    'print(json.dumps({"rc": rc, **counts}))',
)
assert CHILD_DOC.count("--out-dir") == 1 and "peak_rss_mib" in CHILD_DOC


def solve(cache: Path, local: Path, *extra: str) -> dict[str, Any]:
    out = Path(str(cache) + "-matrix")
    for old in out.glob("*"):
        old.unlink()
    argv = [sys.executable, "-c", CHILD_DOC, str(cache), *extra, *ARGS]
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=child_env(local), check=False)
    seconds = time.perf_counter() - started
    lines = proc.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        sys.exit(f"solve failed (rc {proc.returncode}): {(proc.stdout + proc.stderr).strip()[-800:]}")
    result: dict[str, Any] = {"seconds": round(seconds, 2), **json.loads(lines[-1])}
    docs = sorted(out.glob("*.json"))
    if docs:
        doc = json.loads(docs[0].read_text())
        stats = doc.get("stats", {})
        versions: dict[str, set[str]] = {}
        for groups in doc.get("groups", {}).values():
            for g in groups:
                for w in g["wheels"]:
                    versions.setdefault(w["name"], set()).add(w["version"])
        result.update(
            cells=len(doc["cells"]),
            analyses=stats.get("analyses"),
            analyses_run=stats.get("analyses_run"),
            naive_analyses=stats.get("naive_analyses"),
            releases={name: len(v) for name, v in sorted(versions.items())},
            statuses=_count(c.get("status") for c in doc["cells"]),
        )
    return result


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return out


def fastest(cache: Path, local: Path, offsets: list[int], *extra: str) -> dict[str, Any]:
    return fastest_of(cache, local, offsets, *extra, runner=solve)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", type=Path, required=True, help="scratch cache, kept: a cut-short run resumes")
    ap.add_argument("--phase", choices=("cold", "floor", "warm"), required=True)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    for name in ("PIP_FIND_LINKS", "PIP_CERT"):
        os.environ.pop(name, None)
    local = Path(str(args.cache) + "-local")
    results: dict[str, Any] = {"phase": args.phase, "load_before": os.getloadavg()}
    if args.phase == "cold":
        results["cold"] = solve(args.cache, local, "--clock-offset", "0", "--all-versions")
    elif args.phase == "floor":  # from the cache the cold phase filled (zip directories read again)
        os.environ.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1", ABIPROBE_LOCAL_DIR=str(local))
        results.update(read_floor(args.cache, ("--all-versions",)))
        doc = json.loads(next(Path(str(args.cache) + "-matrix").glob("*.json")).read_text())
        agree = {(c["row"], c["col"]) for c in doc["cells"] if c["checks"].get("requires") in ("ok", "warn")}
        results["installable_cells"] = len(agree)
        results.update(naive_installs(args.cache, ("--all-versions",), agree))
    else:
        offsets = [WINDOW_PASSED * (i + 1) for i in range(3)]
        # first: analyses whose stored verdicts no longer match the code's digest are run again here
        results["first_offline"] = solve(
            args.cache, local, "--clock-offset", "0", "--all-versions", "--offline"
        )
        results["warm_offline"] = fastest(args.cache, local, [0] * 3, "--all-versions", "--offline")
        results["default_window_offline"] = fastest(args.cache, local, [0] * 3, "--offline")
        results["warm_online_window_passed"] = fastest(args.cache, local, offsets, "--all-versions")
        inside = [offsets[-1]] * 3
        results["warm_online_in_window"] = fastest(args.cache, local, inside, "--all-versions")
        off, small = results["warm_offline"], results["default_window_offline"]
        results["ratios"] = {
            "all_versions_offline_over_default_offline": round(off["seconds"] / small["seconds"], 2),
            "cells_ratio": round((off.get("cells") or 0) / max(1, small.get("cells") or 1), 1),
            "analyses_ratio": round((off.get("analyses") or 0) / max(1, small.get("analyses") or 1), 1),
            "in_window_over_offline": round(results["warm_online_in_window"]["seconds"] / off["seconds"], 2),
        }
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=1))
    save(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
