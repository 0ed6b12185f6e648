"""Per-set probe time vs the naive loop (fresh venv, install the set, ``python -c "import ..."``).

Run from the repository root: ``python bench/bench_probe.py [--sets N] [--installer pip|uv]``.
Fixture sets: one torch-like base wheel plus one small kernel wheel each, with warm caches.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.probe_wheels import build_probe_wheels  # noqa: E402

from abiprobe.probe import ProbeOptions, ProbeSet, find_interpreter, probe_sets  # noqa: E402
from abiprobe.probe.procs import ProcessRegistry  # noqa: E402
from abiprobe.probe.venv import create_venv, find_installer, install_wheels  # noqa: E402


def naive(sets: list[ProbeSet], installer: str, tmp: Path) -> float:
    """What a person would script: a new venv per set, install it, import it in a new interpreter."""
    py = find_interpreter(None).path
    inst = find_installer(installer)
    procs = ProcessRegistry()
    started = time.monotonic()
    for n, s in enumerate(sets):
        venv = tmp / f"naive{n}"
        vpy = create_venv(procs, py, venv, tmp)
        install_wheels(procs, inst, vpy, s.wheels, tmp)
        code = "; ".join(f"import {m}" for m in s.import_order)
        subprocess.run([str(vpy), "-c", code], capture_output=True, check=False, timeout=60)
        shutil.rmtree(venv)
    return time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=6)
    ap.add_argument("--installer", default="auto")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as tmp_s:
        tmp = Path(tmp_s)
        w = build_probe_wheels(tmp / "wheels")
        kernels = [w.good, w.missing, w.undefined, w.symver, w.pyexc, w.driver]
        names = ["good", "missing", "undefined", "symver", "pyexc", "driver"]
        sets = [ProbeSet((w.base, kernels[i % 6]), ("base", names[i % 6]), f"s{i}") for i in range(args.sets)]
        kind = find_installer(args.installer).kind
        probe_sets(sets[:1], ProbeOptions(installer=args.installer))  # warm caches
        t_naive = naive(sets, args.installer, tmp)
        rows = [("naive loop", t_naive)]
        for fork in ("never", "auto"):
            started = time.monotonic()
            results = probe_sets(sets, ProbeOptions(installer=args.installer, fork=fork, timeout=30))
            rows.append((f"probe_sets fork={fork}", time.monotonic() - started))
            assert len(results) == len(sets)
    print(f"{args.sets} sets, installer {kind}")
    for name, seconds in rows:
        print(
            f"{name:24s} total {seconds:6.2f}s  per set {seconds / args.sets:6.3f}s  "
            f"naive/this {t_naive / seconds:5.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
