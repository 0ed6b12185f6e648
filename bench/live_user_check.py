"""Live: ``abiprobe check torch==X sglang-kernel==Y`` typed as a user types it, against a real import.

For each ``--set torch==X:sglang-kernel==Y``: the static verdict of ``abiprobe check`` (the install closure
resolved for the target, by PROJECT==VERSION on the configured indexes), then a fresh venv made by
``uv pip install torch==X`` and ``uv pip install --no-deps <kernel>``, imported by ``abiprobe probe
--installed`` (a stub libcuda.so.1 on hosts without a driver). Sets sharing a torch share its venv (the
kernel is replaced). Prints a Markdown table; ``--keep`` keeps the venvs (else they are deleted).

    python bench/live_user_check.py --work /tmp/live --python 3.11 \\
        --set torch==2.14.1:sglang-kernel==0.4.10 --set torch==2.15.0:sglang-kernel==0.4.10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ABIPROBE = [sys.executable, "-m", "abiprobe"]
LOADER_CHECKS = ("sonames", "symbols", "symbol_versions", "tags", "files")


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


def static(torch: str, kernel: str, args: argparse.Namespace) -> tuple[int, dict[str, Any], float]:
    target = ["--cuda", args.cuda, "--arch", args.arch, "--python", args.python, "--platform", args.platform]
    cmd = [*ABIPROBE, "check", torch, kernel, *target, "--cache-dir", str(args.work / "cache"), "--json"]
    start = time.monotonic()
    done = run(cmd)
    if not done.stdout.strip():
        raise SystemExit(f"check failed: {done.stderr.strip()}")
    return done.returncode, json.loads(done.stdout), time.monotonic() - start


def real_import(torch: str, kernel: str, args: argparse.Namespace) -> tuple[dict[str, Any], float]:
    venv = args.work / ("venv-" + torch.split("==")[1])
    python = venv / "bin" / "python"
    env = {**os.environ, "UV_CACHE_DIR": str(args.work / "uv-cache")}
    start = time.monotonic()
    if not python.exists():
        run(["uv", "venv", "-q", "--python", args.python, str(venv)], env=env).check_returncode()
        run(["uv", "pip", "install", "-q", "--python", str(python), torch], env=env).check_returncode()
    run(
        ["uv", "pip", "install", "-q", "--no-deps", "--python", str(python), kernel], env=env
    ).check_returncode()
    probe = run([*ABIPROBE, "probe", "--installed", "--python", str(python), "--import-order",
                 "torch,sgl_kernel", "--json", "--timeout", "300"])  # fmt: skip
    return json.loads(probe.stdout)["results"][0], time.monotonic() - start


def row(torch: str, kernel: str, args: argparse.Namespace) -> dict[str, Any]:
    rc, doc, check_s = static(torch, kernel, args)
    result, probe_s = real_import(torch, kernel, args)
    loads = all(doc["checks"].get(c, "ok") not in ("fail", "unknown") for c in LOADER_CHECKS)
    bad = [f"{k} {v}" for k, v in doc["checks"].items() if v != "ok"]
    return {
        "set": f"{torch} + {kernel}",
        "check": f"**{doc['status']}** (exit {rc}; {', '.join(bad) or 'all ok'}); "
        f"{len(doc['install']['added'])} wheels added",
        "blocked_by": [v["explanation"] for v in doc["set_verdicts"] if v["status"] == "blocked"],
        "probe": f"**{result['outcome']}**"
        + (f": {result['message'][:160]}" if result.get("message") else ""),
        "agree": loads == (result["outcome"] == "ok"),
        "seconds": (round(check_s, 1), round(probe_s, 1)),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--set", dest="sets", action="append", required=True, metavar="TORCH:KERNEL")
    p.add_argument("--python", default="3.11")
    p.add_argument("--cuda", default="13.0")
    p.add_argument("--arch", default="sm120")
    p.add_argument("--platform", default="manylinux_2_28_x86_64")
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = [row(*s.split(":"), args) for s in args.sets]
    print("| set | `abiprobe check` | real import | loader verdict agrees? | seconds (check, venv+import) |")
    print("|---|---|---|---|---|")
    for r in rows:
        blocked = f"<br>blocked by: {'; '.join(r['blocked_by'])}" if r["blocked_by"] else ""
        print(f"| {r['set']} | {r['check']}{blocked} | {r['probe']} | {'yes' if r['agree'] else 'NO'} | "
              f"{r['seconds'][0]}, {r['seconds'][1]} |")  # fmt: skip
    if not args.keep:
        for venv in args.work.glob("venv-*"):
            shutil.rmtree(venv)
        shutil.rmtree(args.work / "uv-cache", ignore_errors=True)


if __name__ == "__main__":
    main()
