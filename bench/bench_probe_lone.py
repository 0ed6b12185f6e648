"""One set probed alone against a bare import of it, all measured in the same run.

Per scenario, wall time of:
- bare import: ``python -I -c "import A, B"`` in a venv that already holds the set;
- probe: ``probe_sets([set])`` with a fresh layer each time (venv, install, import, removal);
- probe --keep-layers, first: the layer is built and kept;
- probe --keep-layers, warm: the kept layer is reused;
- the same warm probe through the CLI (``abiprobe probe --keep-layers``, interpreter start-up included).
The bare import and the warm probes run interleaved, ``--repeat`` rounds; best and median are shown.

Default set: the fixture base wheel + a small extension wheel. A real set: ``--wheel FILE`` (repeat) and
``--import-order torch``; the wheels' deps must be among them (installs are ``--no-deps``).

    python bench/bench_probe_lone.py [--wheel W ... --import-order torch] [--python 3.12] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from abiprobe.probe import ProbeOptions, ProbeSet, find_interpreter, probe_sets  # noqa: E402
from abiprobe.probe.procs import ProcessRegistry  # noqa: E402
from abiprobe.probe.venv import create_venv, find_installer, install_wheels  # noqa: E402


def _timed(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - started


def _run_cli(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        sys.exit(f"the CLI probe exited {proc.returncode}: {(proc.stdout + proc.stderr).strip()[-1500:]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", action="append", type=Path, default=[])
    ap.add_argument("--import-order", default="")
    ap.add_argument("--python", default="3.12")
    ap.add_argument("--repeat", type=int, default=5, help="rounds of the repeated measurements")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-lone-") as tmp_s:
        tmp = Path(tmp_s)
        os.environ["ABIPROBE_LOCAL_DIR"] = str(tmp / "local")  # a private bytecode and layer store
        os.environ["ABIPROBE_CACHE_DIR"] = str(tmp / "cache")  # the wheels' facts, not the repository's
        if args.wheel:
            wheels = tuple(w.absolute() for w in args.wheel)
            order = tuple(m for m in args.import_order.split(",") if m)
        else:
            from support.probe_wheels import build_probe_wheels

            w = build_probe_wheels(tmp / "wheels")
            wheels, order = (w.base, w.good), ("base", "good")
        interp = find_interpreter(args.python).path
        installer = find_installer("auto")
        procs = ProcessRegistry()
        venv = tmp / "bare"
        vpy = create_venv(procs, interp, venv, tmp)
        install_wheels(procs, installer, vpy, wheels, tmp)
        code = "; ".join(f"import {m}" for m in order)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "LANG": "C.UTF-8"}
        bare_argv = [str(vpy), "-I", "-c", code]
        subprocess.run(bare_argv, check=True, env=env, capture_output=True)  # compiles its bytecode
        temp = tmp / "probe-temp"
        temp.mkdir()
        sets = [ProbeSet(wheels, order, "lone")]

        def probe(keep: bool) -> None:
            options = ProbeOptions(python=args.python, temp_dir=temp, keep_layers=keep, smoke=False)
            (r,) = probe_sets(sets, options)
            assert r.outcome == "ok", r.explanation()

        cli = [sys.executable, "-m", "abiprobe", "probe", *map(str, wheels), "--import-order",
               ",".join(order), "--python", args.python, "--keep-layers", "--no-smoke", "--json"]  # fmt: skip
        probe(False)  # warms the installer's cache and the bytecode store, as every later run finds them
        rows = {"probe": _timed(lambda: probe(False))}
        rows["probe --keep-layers, first"] = _timed(lambda: probe(True))
        # the repeated ones interleaved, so a change of the machine's load falls on all of them alike
        runs: dict[str, list[float]] = {"bare import": [], "probe --keep-layers, warm": [],
                                        "CLI probe --keep-layers, warm": []}  # fmt: skip
        for _ in range(args.repeat):
            runs["bare import"].append(
                _timed(lambda: subprocess.run(bare_argv, check=True, env=env, capture_output=True))
            )
            runs["probe --keep-layers, warm"].append(_timed(lambda: probe(True)))
            runs["CLI probe --keep-layers, warm"].append(_timed(lambda: _run_cli(cli)))
        rows.update({k: min(v) for k, v in runs.items()})
        medians = {k: statistics.median(v) for k, v in runs.items()}
        shutil.rmtree(venv)
        bare = rows["bare import"]
    load = os.getloadavg()
    if args.json:
        print(
            json.dumps(
                {"load": load, "seconds": rows, "ratio_to_bare": {k: v / bare for k, v in rows.items()}}
            )
        )
        return 0
    print(f"set: {', '.join(w.name for w in wheels)}; {code}")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for name, seconds in rows.items():
        shown = ""
        if name in medians:
            m = medians[name]
            shown = f"best of {args.repeat}, median {m:6.3f} s ({m / medians['bare import']:4.2f}x)"
        print(f"{name:32s} {seconds:7.3f} s   {seconds / bare:5.2f}x the bare import   {shown}")
    warm = rows["probe --keep-layers, warm"] / bare
    print(f"target (a lone warm probe within 25% of the bare import): {'met' if warm <= 1.25 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
