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
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from sidebyside import alternate, ratios  # noqa: E402


def inspect_vs_auditwheel(
    wheel: Path, auditwheel: str, runs: int = 5, abiprobe: list[str] | None = None
) -> dict[str, Any]:
    """The row: both commands' medians on ``wheel``, their ratios and the goal."""
    abiprobe = abiprobe or [str(Path(sys.executable).with_name("abiprobe"))]
    wheel = wheel.resolve()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        cache = Path(tmp) / "wheel_index_cache"
        shutil.copytree(ROOT / "wheel_index_cache", cache)
        commands = {
            "abiprobe_inspect": [*abiprobe, "inspect", str(wheel), "--cache-dir", str(cache)],
            "auditwheel_show": [auditwheel, "show", str(wheel)],
        }
        # away from a checkout that ``python -m`` would import first
        results: dict[str, Any] = {"wheel": wheel.name, **alternate(commands, Path(tmp), runs)}
    results.update(ratios(results["abiprobe_inspect"], results["auditwheel_show"]))
    results["goal"] = {
        "within 1.5x auditwheel's time": (results["ratio_seconds"] or 99) <= 1.5,
        "at most 60 MiB": results["abiprobe_inspect"]["peak_rss_mib"] <= 60,
    }
    return results


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
    abiprobe = shlex.split(args.abiprobe) if args.abiprobe else None
    results = inspect_vs_auditwheel(args.wheel, args.auditwheel, args.runs, abiprobe)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
