"""Probe real sets that share a torch release against the bare import and the naive loop (run by hand).

Sets: torch==2.14.1 (with its locked runtime wheels) plus each of the given kernel wheels. Per set, with
warm caches, in one run:
- bare import: ``python -c "import torch, sgl_kernel"`` in a venv that already holds the set;
- abiprobe: ``probe_sets`` over all sets (one torch layer, fork-server children), total / sets;
- naive loop: fresh venv, ``uv pip install`` of the set's wheel files, then the import.
The driver stub stands in for libcuda.so.1 on GPU-less hosts (for all three).

    python bench/bench_probe_real.py [--work DIR] [--kernel sglang-kernel==0.4.10 ...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from live_predictions import fetch, lock  # noqa: E402

from abiprobe.binary.wheel import wheel_facts_from_path  # noqa: E402
from abiprobe.model.stack import default_stack  # noqa: E402
from abiprobe.probe import ProbeOptions, ProbeSet, probe_sets  # noqa: E402
from abiprobe.probe.stub import build_stub, driver_symbols, host_has_driver  # noqa: E402

PY = "/root/.pyenv/versions/3.12.1/bin/python3.12"


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, env=env, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, default=Path("/tmp/abiprobe-bench-probe"))
    parser.add_argument("--python", default=PY)
    parser.add_argument("--kernel", action="append", default=None)
    args = parser.parse_args()
    kernels = args.kernel or ["sglang-kernel==0.4.10", "sglang-kernel==0.4.9"]
    work: Path = args.work
    wheels_dir = work / "wheels"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    base = [fetch(p, wheels_dir)[0] for p in lock("torch==2.14.1", work)]
    sets = []
    for k in kernels:
        (pin,) = lock(k, work, no_deps=True)
        sets.append((k, [*base, fetch(pin, wheels_dir)[0]]))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work)}
    stub = None
    if not host_has_driver():
        facts = [
            wheel_facts_from_path(w, unread_sources=default_stack().unread_sources())
            for _, s in sets
            for w in s
            if "kernel" in w.name or "torch-" in w.name
        ]
        stub = build_stub(work / "stub", driver_symbols(facts), 13000)
        env["LD_LIBRARY_PATH"] = str(stub)
    uv = shutil.which("uv") or "uv"
    for n, (_, files) in enumerate(sets):  # fills uv's cache, so every timed install below is a warm one
        warm = work / f"warm-up-{n}"
        subprocess.run([uv, "venv", "-q", "--python", args.python, str(warm)], check=True)
        subprocess.run([uv, "pip", "install", "-q", "--python", str(warm / "bin/python"), "--no-deps",
                        *map(str, files)], check=True)  # fmt: skip
        shutil.rmtree(warm, ignore_errors=True)
    bare: list[float] = []
    naive: list[float] = []
    for label, files in sets:
        venv = work / f"naive-{label.replace('==', '-')}"
        shutil.rmtree(venv, ignore_errors=True)
        started = time.perf_counter()
        subprocess.run([uv, "venv", "-q", "--python", args.python, str(venv)], check=True)
        subprocess.run([uv, "pip", "install", "-q", "--python", str(venv / "bin/python"), "--no-deps",
                        "--offline", *map(str, files)], check=True)  # fmt: skip
        imp = timed([str(venv / "bin/python"), "-c", "import torch, sgl_kernel"], env)
        naive.append(time.perf_counter() - started)
        bare.append(min(imp, *(timed([str(venv / "bin/python"), "-c", "import torch, sgl_kernel"], env)
                               for _ in range(2))))  # fmt: skip
        shutil.rmtree(venv, ignore_errors=True)
    probes = [ProbeSet(tuple(files), ("torch", "sgl_kernel"), label) for label, files in sets]
    started = time.perf_counter()
    results = probe_sets(probes, ProbeOptions(python=args.python, smoke=False))
    total = time.perf_counter() - started
    per_set = total / len(sets)
    mean_bare = sum(bare) / len(bare)
    mean_naive = sum(naive) / len(naive)
    print(f"sets: {', '.join(label for label, _ in sets)} on torch 2.14.1 ({len(base)} wheels in its layer)")
    print(f"outcomes: {[(r.label, r.outcome, r.mode) for r in results]}; driver stubbed: {stub is not None}")
    print(f"bare import per set      {mean_bare:7.2f} s  (best of 3, venv already installed)")
    print(f"abiprobe probe per set   {per_set:7.2f} s  (total {total:.2f} s, layer install included)")
    print(f"naive loop per set       {mean_naive:7.2f} s  (uv venv + uv pip install --offline + import)")
    print(f"probe overhead           {per_set / mean_bare - 1:+7.1%} of the bare import")
    print(f"speed-up over the naive  {mean_naive / per_set:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
