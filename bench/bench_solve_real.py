"""Benchmark the real ``abiprobe solve --cuda 13.0 --arch sm120`` against the live indexes (run by hand).

Scenarios, each in a fresh interpreter with bytecode caching on (as an installed tool has it) and the
installer's default index configuration (no user pip/uv configuration): fully cold (empty cache), fresh
machine (the committed ``wheel_index_cache/`` exported from git), warm online once the freshness window
has passed (every stored page is revalidated; the child runs with its clock moved on 11 minutes a run),
warm online inside the window, and warm offline; each warm one is run three times and the fastest
counts. Prints wall time, peak RSS, bytes and requests (conditional and range requests counted apart),
and the ratios the issue asks for, each against a baseline measured in the same run:

- cold bytes / the floor: the compressed size of the members the cold solve had to read (each wheel's
  central directory is fetched again for the sizes; deflate has no random access, so a member whose
  fatbin or dynamic section is needed is needed whole);
- cold bytes / the naive loop's downloads: for each cell of the matrix, ``uv venv`` + ``uv pip install``
  of the cell's set + an import of its packages, uv's cache shared by the cells (a scratch one, deleted
  afterwards); the bytes are counted by a CONNECT proxy the uv processes talk through. ``--naive-cells N``
  runs the first N cells only (0: none); the lock-derived estimates (every cell's whole install from the
  index's file sizes) are printed beside it;
- warm online / warm offline;
- start-up (bench/startup.py): ``abiprobe --version`` and ``solve --help`` (the solve's imports and
  parser, before any solving), medians of fresh interpreters.

    python bench/bench_solve_real.py [--skip-cold] [--naive-cells N] [--json OUT]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from countingproxy import CountingProxy  # noqa: E402
from startup import startup_rows  # noqa: E402

ARGS = ["--cuda", "13.0", "--arch", "sm120", "--python", "3.12", "--platform", "manylinux_2_28_x86_64"]
WARM_RUNS = 3

# Runs inside the child: counts every byte the solve's HTTP clients receive and every request they make
# (by neutral host, conditional and range ones apart); "--clock-offset S" runs it S seconds in the future
# (time.time moved on), so that every page the runs before it stored is past the freshness window.
CHILD = r"""
import json, sys, time
args = sys.argv[2:]
if args[0] == "--clock-offset":  # the clock moved on: every stored page that many seconds older
    offset, args, now = float(args[1]), args[2:], time.time
    time.time = lambda: now() + offset
import abiprobe.net.http as H
from abiprobe.model.hosts import neutral
counts = {"bytes": 0, "requests": 0, "conditional": 0, "ranges": 0, "by_host": {}}
orig_exit = H.Http.__exit__
def counting_exit(self, *exc):
    counts["bytes"] += self.bytes_received
    return orig_exit(self, *exc)
H.Http.__exit__ = counting_exit
orig_send = H.Http._send
def counting_send(self, url, headers):
    h = headers or {}
    counts["requests"] += 1
    counts["conditional"] += "If-None-Match" in h or "If-Modified-Since" in h
    counts["ranges"] += "Range" in h
    host = neutral(H.display_url(url)).split("/")[2]
    counts["by_host"][host] = counts["by_host"].get(host, 0) + 1
    return orig_send(self, url, headers)
H.Http._send = counting_send
from abiprobe.cli import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["solve", *args, "--cache-dir", sys.argv[1], "--no-write", "--json"])
print(json.dumps({"rc": rc, **counts}))
"""


def child_env(local: Path) -> dict[str, str]:
    """The installer's default indexes only, this machine's state in a scratch folder, bytecode cached."""
    dropped = ("PIP_FIND_LINKS", "PIP_CERT", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1", "ABIPROBE_LOCAL_DIR": str(local)}


def run(cache: Path, local: Path, *extra: str) -> dict[str, Any]:
    started = time.perf_counter()
    argv = [sys.executable, "-c", CHILD, str(cache), *extra, *ARGS]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=child_env(local), check=False)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    lines = proc.stdout.strip().splitlines()
    if not lines:
        sys.exit(f"solve failed (rc {proc.returncode}): {proc.stderr.strip()[-800:]}")
    out = json.loads(lines[-1])
    return {"seconds": round(seconds, 2), "peak_rss_mb_max_so_far": round(peak), **out}


WINDOW_PASSED = 11 * 60  # seconds: past the 10 minutes a page is reused without asking


def fastest(
    cache: Path,
    local: Path,
    offsets: list[int],
    *extra: str,
    runner: Callable[..., dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The fastest of one run per clock offset (each run ``offset`` seconds in the future), each made by
    ``runner`` (default :func:`run`)."""
    runs = [(runner or run)(cache, local, "--clock-offset", str(o), *extra) for o in offsets]
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "all_seconds": [r["seconds"] for r in runs]}


def export_committed_cache(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", "HEAD", "wheel_index_cache"], cwd=ROOT, capture_output=True,
                             check=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def wheel_totals() -> tuple[int, int]:
    """(candidate wheels' bytes, the naive loop's downloads) from the committed matrix.

    The naive loop: for each cell, a fresh venv and ``uv pip install`` of the cell's set with no cache
    shared between cells. Only the stack wheels are counted (not the runtime wheels torch pins), so this
    is a lower bound of what that loop downloads.
    """
    doc = json.loads(next((ROOT / "matrices").glob("cu130-sm120-cp312-*.json")).read_text())
    size_of: dict[str, int] = {}
    for groups in doc["groups"].values():
        for g in groups:
            size_of[g["id"]] = sum(int(w.get("size") or 0) for w in g["wheels"])
    naive = sum(sum(size_of.get(m, 0) for m in cell["members"]) for cell in doc["cells"])
    return sum(size_of.values()), naive


def naive_installs(
    cache: Path, extra: tuple[str, ...] = (), installable: set[tuple[str, str | None]] | None = None
) -> dict[str, int]:
    """What the naive loop downloads when every cell's set is installed *with its dependencies*, from
    the same committed/solved cache (offline): each cell's whole install (the set, the runtime wheels
    torch pins, and everything they require, as the lock resolves it), summed over cells with no cache
    shared between them, and as the union of distinct wheels (uv's cache shared by all cells); the
    union again over ``installable``, the (row, column) cells whose requirements agree in the matrix the
    solve wrote (those uv's resolver would install at all)."""
    from abiprobe.analyze.preloads import preload_pattern
    from abiprobe.analyze.profiles import profile_for
    from abiprobe.cli import build_parser
    from abiprobe.commands.solve import build_stack, index_config, solve_reads
    from abiprobe.index.client import IndexClient
    from abiprobe.model.target import Target
    from abiprobe.net.http import Http
    from abiprobe.solve.candidates import FilterOptions
    from abiprobe.solve.pipeline import solve
    from abiprobe.store.cache import Cache
    from abiprobe.store.reads import WheelReads

    args = build_parser("solve").parse_args(["solve", *ARGS, *extra, "--offline"])
    target = Target.parse(
        cuda=args.cuda, arch=args.arch, python=args.python, platform=args.platform, base=Target()
    )
    stack = build_stack(args)
    config = index_config(
        target, indexes=args.index, extra_indexes=args.extra_index, strategy=args.index_strategy
    )
    store = Cache(cache)
    with Http(progress=False) as http:
        client = IndexClient(config.sources, store, http, offline=True)
        wheels = WheelReads(
            http,
            store,
            offline=True,
            preloaded=preload_pattern(stack.loading()),
            unread_sources=stack.unread_sources(),
        )
        reads = solve_reads(client, wheels)
        result = solve(
            stack, target, profile_for(target.machine, target.glibc), reads, FilterOptions(),
            window=None if args.all_versions else args.window, installs="all",
        )  # fmt: skip
        per_cell: list[int] = []
        union: dict[str, int] = {}
        agreed: dict[str, int] = {}
        for cell in result.matrix.cells:
            sizes = {w.filename: int(w.candidate.file.size or 0) for w in result.install(cell.members).wheels}
            per_cell.append(sum(sizes.values()))
            union.update(sizes)
            if installable is not None and (cell.row, cell.col) in installable:
                agreed.update(sizes)
    return {
        "naive_full_installs_no_shared_cache": sum(per_cell),
        "naive_full_installs_uv_cache": sum(union.values()),
        "naive_installable_cells_uv_cache": sum(agreed.values()),
        "cells": len(result.matrix.cells),
    }


def read_floor(cache: Path, extra: tuple[str, ...] = ()) -> dict[str, int]:
    """Compressed bytes of the members the cold solve read (its facts say which; one read only up to
    its loader tables counts whole), and of every binary member of the same wheels, from their central
    directories; and of the wheels whose facts are unverified (range-read), the bytes verifying them
    would fetch on top."""
    from abiprobe.binary.wheel_members import dist_info_dir, installed_path
    from abiprobe.cli import build_parser
    from abiprobe.commands.solve import index_config
    from abiprobe.index.client import IndexClient
    from abiprobe.model.target import Target
    from abiprobe.net.http import Http
    from abiprobe.net.remote_wheel import RemoteZip
    from abiprobe.store.cache import Cache

    args = build_parser("solve").parse_args(["solve", *ARGS, *extra])
    target = Target.parse(
        cuda=args.cuda, arch=args.arch, python=args.python, platform=args.platform, base=Target()
    )
    config = index_config(
        target, indexes=args.index, extra_indexes=args.extra_index, strategy=args.index_strategy
    )
    store = Cache(cache)
    read = binaries = unverified = to_verify = 0
    with Http(progress=False) as http:
        client = IndexClient(config.sources, store, http, offline=True)
        for entry in sorted((cache / "facts").glob("*/*.facts.gz")):
            facts = store.load_facts(entry.name.split(".")[0], allow_partial=True, allow_unverified=True)
            if facts is None:
                continue
            files = {c.file.filename: c.file for c in client.list_project(facts.metadata.name).candidates}
            file = files.get(facts.filename)
            if file is None:
                continue
            with RemoteZip(http, file.url, file.sha256, file.size) as remote:
                members = remote.members()
            info = dist_info_dir([m.name for m in members]) + "/"
            elf = {e.path for e in facts.elf}
            this = 0
            for m in members:
                path = installed_path(m.name)
                if path in elf or m.name.startswith(info):
                    this += m.compressed_size
                if path in elf or path in facts.unread:
                    binaries += m.compressed_size
            read += this
            if not facts.verified:  # range-read: hashing it whole would fetch the rest too
                unverified += 1
                to_verify += max(0, (file.size or facts.size) - this)
    return {"floor_members_read_bytes": read, "all_binary_members_bytes": binaries,
            "unverified_wheels": unverified, "verify_cost_bytes": to_verify}  # fmt: skip


IMPORT_ALL = r"""
import importlib, importlib.metadata as md, json, sys, time
out = {}
for name in sys.argv[1:]:
    files = md.distribution(name).files or ()
    tops = sorted({f.parts[0] for f in files if len(f.parts) > 1 and f.parts[1] == "__init__.py"}
                  | {f.stem for f in files if len(f.parts) == 1 and f.suffix == ".py"})
    for top in tops:
        started = time.perf_counter()
        try:
            importlib.import_module(top)
            out[top] = "ok"
        except BaseException as exc:
            out[top] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
        out[top + ":seconds"] = round(time.perf_counter() - started, 2)
print(json.dumps(out))
"""


def python312() -> str:
    """A Python 3.12 interpreter that runs (a version manager's shim that cannot is skipped)."""
    candidates = [
        shutil.which("python3.12") or "",
        *sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.12*/bin/python3.12"))),
    ]
    for c in candidates:
        if c and subprocess.run([c, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return c
    sys.exit("the naive loop needs a Python 3.12 interpreter (none runs here)")


def naive_loop(cells: list[dict[str, Any]], groups: dict[str, list[str]], work: Path) -> dict[str, Any]:
    """The naive loop, run for real: per cell a fresh ``uv venv``, ``uv pip install`` of the cell's set
    (the default index, the target's platform), an import of every package the set installs, the venv
    removed; uv's cache (a scratch folder) shared by the cells. Bytes are what the uv processes received
    through the counting proxy."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(UV_CACHE_DIR=str(work / "uv-cache"), UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never")
    rows: list[dict[str, Any]] = []
    interpreter = python312()
    with CountingProxy() as proxy:
        env.update(HTTPS_PROXY=proxy.url, HTTP_PROXY=proxy.url, ALL_PROXY=proxy.url)
        for cell in cells:
            venv = work / "venv"
            pins = [p for m in cell["members"] for p in groups[m]]
            before, started = proxy.received, time.perf_counter()
            subprocess.run([uv, "venv", "-q", "--python", interpreter, str(venv)], env=env, check=True)
            python = venv / "bin" / "python"
            install = subprocess.run(
                [uv, "pip", "install", "-q", "--python", str(python), "--python-platform",
                 "x86_64-manylinux_2_28", *pins], env=env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            imported: dict[str, Any] = {}
            if install.returncode == 0:
                names = [p.split("==")[0] for p in pins]
                probe = subprocess.run([str(python), "-c", IMPORT_ALL, *names], capture_output=True,
                                       text=True, check=False)  # fmt: skip
                lines = probe.stdout.strip().splitlines()
                imported = json.loads(lines[-1]) if lines else {"error": probe.stderr.strip()[-200:]}
            shutil.rmtree(venv)
            failed = (install.stderr.strip().splitlines() or [""])[-1][:200] if install.returncode else None
            rows.append({
                "members": cell["members"], "verdict": cell.get("status"),
                "install_rc": install.returncode,
                "install_error": failed,
                "imports": imported, "bytes": proxy.received - before,
                "seconds": round(time.perf_counter() - started, 1),
            })  # fmt: skip
            print(f"naive cell {len(rows)}/{len(cells)}: {rows[-1]['bytes']} bytes, "
                  f"{rows[-1]['seconds']} s", file=sys.stderr)  # fmt: skip
        total = proxy.received
    shutil.rmtree(work / "uv-cache", ignore_errors=True)
    return {"cells_run": len(rows), "bytes": total, "seconds": round(sum(r["seconds"] for r in rows), 1),
            "cells": rows}  # fmt: skip


def save(path: Path | None, results: dict[str, Any]) -> None:
    """What is measured so far, written as it comes (a later phase may fail or be stopped)."""
    if path is not None:
        path.write_text(json.dumps(results, indent=1))


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def targets(results: dict[str, Any]) -> dict[str, str]:
    """The issue's targets, met or missed, from the ratios measured in this run."""
    out: dict[str, str] = {}
    r = results["ratios"]

    def said(name: str, value: float | None, ok: bool, unit: str = "") -> None:
        if value is not None:
            out[name] = f"{'met' if ok else 'missed'} ({value}{unit})"

    startup = results.get("startup")
    if isinstance(startup, dict):
        said("--version within 0.10 s", startup["version"], startup["version"] <= 0.10, " s")
    online = results.get("warm_online_window_passed")
    if isinstance(online, dict):
        said("warm online under 0.5 s", online["seconds"], online["seconds"] < 0.5, " s")
    if r.get("cold_over_floor") is not None:
        said("cold bytes within 1.25x of the floor", r["cold_over_floor"], r["cold_over_floor"] <= 1.25, "x")
    if r.get("cold_over_naive_loop") is not None:
        value = r["cold_over_naive_loop"]
        said("cold bytes at most a third of the naive loop's", value, value <= 1 / 3, "x")
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--skip-warm", action="store_true", help="no fresh-machine or warm runs")
    parser.add_argument("--naive-cells", type=int, default=-1, help="naive loop cells to run (-1: all)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    for name in ("PIP_FIND_LINKS", "PIP_CERT"):  # this process reads the same configuration as the child
        os.environ.pop(name, None)
    os.environ.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1")
    results: dict[str, Any] = {}
    doc = json.loads(next((ROOT / "matrices").glob("cu130-sm120-cp312-*.json")).read_text())
    groups = {g["id"]: [f"{w['name']}=={w['version']}" for w in g["wheels"]]
              for gs in doc["groups"].values() for g in gs}  # fmt: skip
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        t = Path(tmp)
        os.environ["ABIPROBE_LOCAL_DIR"] = str(t / "local")
        results["startup"] = startup_rows(child_env(t / "local"), ROOT)
        if not args.skip_cold:
            results["cold"] = run(t / "cold", t / "local-cold", "--clock-offset", "0")
            save(args.json, results)
            results.update(read_floor(t / "cold"))
            save(args.json, results)
            shutil.rmtree(t / "cold")
        export_committed_cache(t / "fresh")
        cache = t / "fresh" / "wheel_index_cache"
        if not args.skip_warm:
            results["fresh"] = run(cache, t / "local", "--clock-offset", "0")
            passed = [WINDOW_PASSED * (i + 1) for i in range(WARM_RUNS)]
            results["warm_online_window_passed"] = fastest(cache, t / "local", passed)
            inside = [passed[-1]] * WARM_RUNS
            results["warm_online_in_window"] = fastest(cache, t / "local", inside)
            results["warm_offline"] = fastest(cache, t / "local", inside, "--offline")
            save(args.json, results)
        results.update(naive_installs(cache))
        cells = doc["cells"] if args.naive_cells < 0 else doc["cells"][: args.naive_cells]
        if cells:
            results["naive_loop"] = naive_loop(cells, groups, t)
    candidates, stack_only = wheel_totals()
    results["candidate_wheels_bytes"] = candidates
    results["naive_stack_wheels_only_bytes"] = stack_only
    cold, naive = results.get("cold"), results.get("naive_loop")
    floor = results.get("floor_members_read_bytes")
    results["ratios"] = {}
    if not args.skip_warm:
        offline = results["warm_offline"]["seconds"]
        passed, inside = results["warm_online_window_passed"], results["warm_online_in_window"]
        results["ratios"] = {
            "warm_online_window_passed_over_offline": ratio(passed["seconds"], offline),
            "warm_online_in_window_over_offline": ratio(inside["seconds"], offline),
            "fresh_bytes_over_candidate_wheels": ratio(results["fresh"]["bytes"], candidates),
        }
    if isinstance(cold, dict):
        results["ratios"]["cold_over_floor"] = ratio(cold["bytes"], floor or 0)
        results["ratios"]["cold_over_candidate_wheels"] = ratio(cold["bytes"], candidates)
        for key in ("naive_full_installs_uv_cache", "naive_full_installs_no_shared_cache"):
            results["ratios"][f"cold_over_{key}_estimate"] = ratio(cold["bytes"], results[key])
        if isinstance(naive, dict):
            share = "" if naive["cells_run"] == len(doc["cells"]) else f"_{naive['cells_run']}_cells"
            results["ratios"][f"cold_over_naive_loop{share}"] = ratio(cold["bytes"], naive["bytes"])
            results["ratios"][f"floor_over_naive_loop{share}"] = ratio(floor or 0, naive["bytes"])
            results["ratios"]["naive_loop_cells_installed"] = sum(
                c["install_rc"] == 0 for c in naive["cells"]
            )
    results["targets"] = targets(results)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
