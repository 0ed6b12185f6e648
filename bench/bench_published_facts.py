"""Benchmark a first solve on a new machine that fetches published facts (issue 31), run by hand.

Publishes a cache (default: the committed ``wheel_index_cache/``, exported from git) with ``abiprobe cache
publish``, serves the tree with ``python -m http.server`` on 127.0.0.1, then solves the default target
(CUDA 13.0, sm120, cp312, manylinux_2_28_x86_64) with an empty ``--cache-dir`` and
ABIPROBE_PUBLISHED_FACTS at the tree, the installer's default index read for pages (no user pip or uv
configuration). Prints wall time, peak RSS, and the requests and bytes of every GET (from ``-v``), apart
for the published tree, index pages and METADATA, and wheel reads; and whether the matrix is the one the
cache's own solve wrote (``matrices/``, run counts aside). ``--cold`` solves once more without published
facts (minutes and gigabytes on the real indexes).

    python bench/bench_published_facts.py [--cache DIR] [--cold] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--cuda", "13.0", "--arch", "sm120", "--python", "3.12", "--platform", "manylinux_2_28_x86_64"]
NAME = "cu130-sm120-cp312-manylinux_2_28_x86_64"
UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3}
GET = re.compile(r"abiprobe: GET (\S+).* -> (\S+), ([\d.]+) (B|kB|MB|GB) in")


def env_for(local: Path, published: str | None) -> dict[str, str]:
    dropped = ("PIP_FIND_LINKS", "PIP_CERT", "PYTHONDONTWRITEBYTECODE", "ABIPROBE_PUBLISHED_FACTS")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1", ABIPROBE_LOCAL_DIR=str(local))
    if published is not None:
        env["ABIPROBE_PUBLISHED_FACTS"] = published
    return env


def tally(stderr: str, published: str | None) -> dict[str, dict[str, float]]:
    """Requests and bytes per kind: the published tree, index pages and METADATA, wheel reads."""
    out: dict[str, dict[str, float]] = {}
    for line in stderr.splitlines():
        m = GET.match(line)
        if m is None:
            continue
        url = m.group(1)
        if published is not None and url.startswith(published):
            kind = "published"
        elif url.endswith(".whl"):
            kind = "wheels"
        else:
            kind = "pages"
        row = out.setdefault(kind, {"requests": 0, "bytes": 0})
        row["requests"] += 1
        row["bytes"] += round(float(m.group(3)) * UNITS[m.group(4)])
    return out


def solve(work: Path, published: str | None) -> dict[str, Any]:
    cache, out, local = work / "cache", work / "out", work / "local"
    argv = [
        sys.executable,
        "-m",
        "abiprobe",
        "-v",
        "solve",
        *ARGS,
        "--cache-dir",
        str(cache),
        "--out-dir",
        str(out),
    ]
    started = time.perf_counter()
    proc = subprocess.run(
        argv, capture_output=True, text=True, cwd=work, env=env_for(local, published), check=False
    )
    seconds = time.perf_counter() - started
    kinds = tally(proc.stderr, published)
    doc_path = out / f"{NAME}.json"
    return {
        "rc": proc.returncode,
        "seconds": round(seconds, 2),
        "peak_rss_mb_max_so_far": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        "kinds": kinds,
        "bytes": sum(int(k["bytes"]) for k in kinds.values()),
        "warnings": [line for line in proc.stderr.splitlines() if line.startswith("abiprobe: warning:")],
        "matrix": json.loads(doc_path.read_text()) if doc_path.exists() else None,
    }


def same_matrix(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    def bare(doc: dict[str, Any]) -> dict[str, Any]:
        stats = {k: v for k, v in doc["stats"].items() if k not in ("analyses_run", "analyses_stored")}
        return {**doc, "stats": stats}

    return a is not None and b is not None and bare(a) == bare(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="the cache to publish (default: the committed one)")
    parser.add_argument("--matrix", type=Path, default=ROOT / "matrices" / f"{NAME}.json")
    parser.add_argument("--cold", action="store_true", help="also solve cold, without published facts")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-published-") as tmp:
        work = Path(tmp)
        cache = args.cache
        if cache is None:
            archive = subprocess.run(["git", "archive", "HEAD", "wheel_index_cache"], cwd=ROOT,
                                     capture_output=True, check=True).stdout  # fmt: skip
            subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
            cache = work / "wheel_index_cache"
        tree = work / "tree"
        publish = subprocess.run([sys.executable, "-m", "abiprobe", "cache", "publish", str(tree),
                                  "--cache-dir", str(cache), "--json"], capture_output=True, text=True,
                                 cwd=ROOT, check=True)  # fmt: skip
        server = [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"]
        served = subprocess.Popen(
            server, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        try:
            assert served.stdout is not None
            port = re.search(r"port (\d+)", served.stdout.readline())
            assert port is not None
            location = f"http://127.0.0.1:{port.group(1)}/"
            results: dict[str, Any] = {"published": json.loads(publish.stdout)}
            (work / "first").mkdir()
            results["first"] = solve(work / "first", location)
            if args.cold:
                (work / "cold").mkdir()
                results["cold"] = solve(work / "cold", None)
        finally:
            served.terminate()
            served.wait()
    expected = json.loads(args.matrix.read_text()) if args.matrix.exists() else None
    for name in ("first", "cold"):
        if name in results:
            run = results[name]
            run["same_matrix_as_committed"] = same_matrix(run.pop("matrix"), expected)
            print(f"{name}: rc {run['rc']}, {run['seconds']} s, {run['bytes']:,} bytes, "
                  f"same matrix: {run['same_matrix_as_committed']}, {json.dumps(run['kinds'])}")  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
