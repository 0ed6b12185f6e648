"""Issue 31's table in one run: abiprobe against what a user would run instead (run by hand).

Each row sets abiprobe against a peer measured in the same run, with the ratio and the issue's goal;
every command runs in a fresh process with bytecode cached and the installer's default index
configuration only (no user pip/uv configuration). The default run takes a few minutes and fetches a few
MB (uv's metadata for its warm cache, the pages of the warm online runs, one small wheel and auditwheel);
``--no-network`` leaves out every row that needs the network.

Rows by default:

- warm offline solve of the default stack (``--cuda 13.0 --arch sm120 --python 3.12 --platform
  manylinux_2_28_x86_64``, the committed cache, every verdict stored) against ``uv pip compile
  --offline`` of the three pins it chooses: bench/bench_warm_compile.py (uv as typed, and uv with its
  interpreter named), medians of ``--runs``, alternated;
- ``abiprobe --version`` and ``solve --help`` (bench/startup.py), against a bare interpreter;
- ``inspect`` of a small unrelated wheel (markupsafe 3.0.3, or ``--inspect-wheel``) against
  ``auditwheel show`` (``--auditwheel``, else installed into a scratch venv): bench/bench_inspect.py;
- warm online (the committed cache exported from git): a fresh machine, then past the freshness window
  (every stored page revalidated; the child's clock moved on 11 minutes a run) and inside it, and warm
  offline; the fastest of three each.

With ``--cold`` (about 10 GB over the network, 10-15 minutes here): the cold solve into an empty cache,
its floor (the compressed size of the members it had to read, from the wheels' zip directories: deflate
has no random access, so a member whose fatbin or dynamic section is needed is needed whole), and the
naive loop run for real (per cell ``uv venv`` + ``uv pip install`` of the cell's set + an import of its
packages, uv's cache shared by the cells; bytes counted by a CONNECT proxy the uv processes talk
through; ``--naive-cells N`` runs the first N cells), with the lock-derived estimates beside it.

With ``--history DIR`` (about 19 GB, 15-20 minutes): ``solve --all-versions`` cold into DIR
(bench/bench_all_versions_real.py's cold phase): its wall time, bytes and peak RSS.

    python bench/bench_solve_real.py [--runs 5] [--no-network] [--skip-warm] [--cold [--naive-cells N]]
                                     [--history DIR] [--uv-cache DIR] [--inspect-wheel WHL]
                                     [--auditwheel PATH] [--work DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
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

from bench_inspect import inspect_vs_auditwheel  # noqa: E402
from bench_warm_compile import python312 as find_python312  # noqa: E402
from bench_warm_compile import warm_vs_uv  # noqa: E402
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
    """One solve in a child process: wall time, the child's own peak RSS (``os.wait4``), and what it
    counted."""
    argv = [sys.executable, "-c", CHILD, str(cache), *extra, *ARGS]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, text=True, cwd=ROOT, env=child_env(local))
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    lines = stdout.strip().splitlines()
    if not lines:
        sys.exit(f"solve failed (rc {os.waitstatus_to_exitcode(status)}): {stderr.strip()[-800:]}")
    cpu = round(usage.ru_utime + usage.ru_stime, 2)  # the child's own CPU: on a shared host, wall is not it
    peak = round(usage.ru_maxrss / 1024, 1)
    return {"seconds": round(seconds, 2), "cpu_seconds": cpu, "peak_rss_mib": peak, **json.loads(lines[-1])}


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
    """A Python 3.12 interpreter that runs, for the naive loop's venvs."""
    found = find_python312()
    if found is None:
        sys.exit("the naive loop needs a Python 3.12 interpreter (none runs here)")
    return found


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


def table_rows(results: dict[str, Any]) -> list[dict[str, str]]:
    """Issue 31's table from this run's results: each row's abiprobe, peer, ratio, goal and verdict."""
    rows: list[dict[str, str]] = []

    def row(work: str, ours: str, peer: str, ratio_text: str, goal: str, met: bool | None) -> None:
        verdict = "" if met is None else ("met" if met else "missed")
        rows.append({"work": work, "abiprobe": ours, "peer": peer, "ratio": ratio_text, "goal": goal,
                     "verdict": verdict})  # fmt: skip

    def run_text(r: dict[str, Any]) -> str:
        return f"{r['seconds']:.2f} s, {r['peak_rss_mib']:.0f} MiB"

    warm = results.get("warm_vs_uv")
    if isinstance(warm, dict):
        ours, uv = warm["abiprobe_solve_offline"], warm["uv_pip_compile_offline"]
        work = "warm offline solve of the default stack (9 cells, every verdict stored)"
        row(work, run_text(ours), f"`uv pip compile --offline` of the chosen three pins: {run_text(uv)}",
            f"{warm['ratio_seconds']}x", "<= 1.0x", warm["ratio_seconds"] <= 1.0)  # fmt: skip
        given = warm.get("uv_pip_compile_offline_python_given")
        if isinstance(given, dict):
            row("  the same, uv told its interpreter (`--python`: no interpreter discovery)", run_text(ours),
                run_text(given), f"{warm['ratio_seconds_python_given']}x", "<= 1.0x",
                warm["ratio_seconds_python_given"] <= 1.0)  # fmt: skip
    startup = results.get("startup")
    if isinstance(startup, dict):
        row("`abiprobe --version`", f"{startup['version']:.3f} s",
            f"bare `python -c pass`: {startup['bare_python']:.3f} s", "", "<= 0.10 s",
            startup["version"] <= 0.10)  # fmt: skip
    inspect = results.get("inspect_vs_auditwheel")
    if isinstance(inspect, dict):
        ours, theirs = inspect["abiprobe_inspect"], inspect["auditwheel_show"]
        ok = inspect["ratio_seconds"] <= 1.5 and ours["peak_rss_mib"] <= 60
        name, version = inspect["wheel"].split("-")[:2]
        both = f"{inspect['ratio_seconds']}x, {inspect['ratio_peak_rss']}x"
        row(f"`inspect` of {name} {version}", run_text(ours), f"`auditwheel show`: {run_text(theirs)}", both,
            "<= 1.5x, <= 60 MiB", ok)  # fmt: skip
    cold, naive = results.get("cold"), results.get("naive_loop")
    if isinstance(cold, dict):
        cpu = f" ({cold['cpu_seconds']:.0f} s CPU)" if "cpu_seconds" in cold else ""
        ours = (
            f"{cold['seconds']:.0f} s{cpu}, {cold['bytes'] / 1e9:.2f} GB, peak {cold['peak_rss_mib']:.0f} MiB"
        )
        if isinstance(naive, dict):
            share = "" if naive["cells_run"] == results.get("cells") else f", {naive['cells_run']} cells"
            peer = f"the naive loop: {naive['seconds']:.0f} s, {naive['bytes'] / 1e9:.2f} GB{share}"
            value = ratio(cold["seconds"], naive["seconds"])
            row("cold solve, empty cache", ours, peer, f"{value}x wall", "<= 1.0x wall",
                value is not None and value <= 1.0)  # fmt: skip
        else:
            row("cold solve, empty cache", ours, "(naive loop not run)", "", "<= 1.0x wall", None)
    history = results.get("history")
    if isinstance(history, dict):
        ours = (f"{history['seconds']:.0f} s, {history['bytes'] / 1e9:.2f} GB, "
                f"peak {history['peak_rss_mib'] / 1024:.2f} GB RSS")  # fmt: skip
        row("whole history, cold (`--all-versions`)", ours, "", "", "peak <= 2 GB",
            history["peak_rss_mib"] <= 2048)  # fmt: skip
    online = results.get("warm_online_window_passed")
    if isinstance(online, dict):
        ours = f"{online['seconds']:.2f} s ({online['requests']} requests)"
        row("warm online, pages past the window", ours, "", "", "<= 0.5 s", online["seconds"] <= 0.5)
    inside = results.get("warm_online_in_window")
    if isinstance(inside, dict):
        row("warm online, inside the window", f"{inside['seconds']:.2f} s ({inside['requests']} requests)",
            "", "", "<= 0.5 s", inside["seconds"] <= 0.5)  # fmt: skip
    return rows


def markdown_table(rows: list[dict[str, str]]) -> str:
    keys = ("work", "abiprobe", "peer", "ratio", "goal", "verdict")
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(r[k] for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def history_cold(folder: Path) -> dict[str, Any]:
    """``solve --all-versions`` cold into ``folder`` (emptied first), as bench_all_versions_real's cold
    phase runs it: wall time, bytes, requests and the child's peak RSS."""
    from bench_all_versions_real import solve as solve_all  # it imports this module

    shutil.rmtree(folder, ignore_errors=True)
    local = Path(str(folder) + "-local")
    shutil.rmtree(local, ignore_errors=True)
    try:
        return solve_all(folder, local, "--clock-offset", "0", "--all-versions")
    finally:
        for path in (folder, local, Path(str(folder) + "-matrix")):
            shutil.rmtree(path, ignore_errors=True)


def scratch_auditwheel(work: Path) -> str:
    """auditwheel installed into a scratch venv by uv (from the installer's default index)."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never")
    venv = work / "auditwheel-venv"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], env=env, check=True)
    subprocess.run([uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "auditwheel"],
                   env=env, check=True)  # fmt: skip
    return str(venv / "bin" / "auditwheel")


INSPECT_WHEEL = "markupsafe==3.0.3"  # small, unrelated to torch: inspect's own cost, no torch read


def fetch_wheel(requirement: str, work: Path) -> Path:
    """One cp312 manylinux x86_64 wheel of ``requirement``, downloaded by pip into ``work``."""
    folder = work / "inspect-wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
         "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312",
         "--platform", "manylinux_2_28_x86_64", "-d", str(folder), requirement],
        env={k: v for k, v in os.environ.items() if k != "PIP_FIND_LINKS"}, check=True, capture_output=True,
    )  # fmt: skip
    return next(folder.glob("*.whl"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="runs per side-by-side row (medians)")
    parser.add_argument("--no-network", action="store_true", help="only the rows that need no network")
    parser.add_argument("--skip-warm", action="store_true", help="no fresh-machine or warm online runs")
    parser.add_argument("--skip-cold", action="store_true", help=argparse.SUPPRESS)  # cold is opt-in now
    parser.add_argument("--cold", action="store_true", help="cold solve, its floor, the naive loop (~10 GB)")
    parser.add_argument("--naive-cells", type=int, default=-1, help="naive loop cells to run (-1: all)")
    parser.add_argument("--history", type=Path, metavar="DIR", help="whole history cold into DIR (~19 GB)")
    parser.add_argument("--uv-cache", type=Path, help="a uv cache already filled for the chosen pins")
    parser.add_argument(
        "--inspect-wheel", type=Path, help=f"wheel for the inspect row (default {INSPECT_WHEEL})"
    )
    parser.add_argument("--auditwheel", default=shutil.which("auditwheel"), help="auditwheel executable")
    parser.add_argument("--work", type=Path, default=Path("/tmp"), help="where the scratch folders go")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    for name in ("PIP_FIND_LINKS", "PIP_CERT"):  # this process reads the same configuration as the child
        os.environ.pop(name, None)
    os.environ.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1")
    network = not args.no_network
    results: dict[str, Any] = {"load_before": os.getloadavg()}
    doc = json.loads(next((ROOT / "matrices").glob("cu130-sm120-cp312-*.json")).read_text())
    results["cells"] = len(doc["cells"])
    groups = {g["id"]: [f"{w['name']}=={w['version']}" for w in g["wheels"]]
              for gs in doc["groups"].values() for g in gs}  # fmt: skip
    args.work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        t = Path(tmp)
        os.environ["ABIPROBE_LOCAL_DIR"] = str(t / "local")
        results["startup"] = startup_rows(child_env(t / "local"), ROOT)
        save(args.json, results)
        if network or args.uv_cache is not None:
            results["warm_vs_uv"] = warm_vs_uv(args.runs, args.uv_cache)
            save(args.json, results)
        wheel = args.inspect_wheel or (fetch_wheel(INSPECT_WHEEL, t) if network else None)
        auditwheel = args.auditwheel or (scratch_auditwheel(t) if network else None)
        if wheel is not None and auditwheel is not None:
            results["inspect_vs_auditwheel"] = inspect_vs_auditwheel(wheel, auditwheel, args.runs)
            save(args.json, results)
        if network and args.cold:
            results["cold"] = run(t / "cold", t / "local-cold", "--clock-offset", "0")
            save(args.json, results)
            results.update(read_floor(t / "cold"))
            save(args.json, results)
            shutil.rmtree(t / "cold")
        export_committed_cache(t / "fresh")
        cache = t / "fresh" / "wheel_index_cache"
        if network and not args.skip_warm:
            results["fresh"] = run(cache, t / "local", "--clock-offset", "0")
            passed = [WINDOW_PASSED * (i + 1) for i in range(WARM_RUNS)]
            results["warm_online_window_passed"] = fastest(cache, t / "local", passed)
            inside = [passed[-1]] * WARM_RUNS
            results["warm_online_in_window"] = fastest(cache, t / "local", inside)
            results["warm_offline"] = fastest(cache, t / "local", inside, "--offline")
            save(args.json, results)
        if network and args.cold:
            results.update(naive_installs(cache))
            cells = doc["cells"] if args.naive_cells < 0 else doc["cells"][: args.naive_cells]
            if cells:
                results["naive_loop"] = naive_loop(cells, groups, t)
            save(args.json, results)
    if network and args.history is not None:
        results["history"] = history_cold(args.history)
        save(args.json, results)
    candidates, stack_only = wheel_totals()
    results["candidate_wheels_bytes"] = candidates
    results["naive_stack_wheels_only_bytes"] = stack_only
    cold, naive = results.get("cold"), results.get("naive_loop")
    floor = results.get("floor_members_read_bytes")
    results["ratios"] = {}
    if "warm_offline" in results:
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
            if key in results:
                results["ratios"][f"cold_over_{key}_estimate"] = ratio(cold["bytes"], results[key])
        if isinstance(naive, dict):
            share = "" if naive["cells_run"] == len(doc["cells"]) else f"_{naive['cells_run']}_cells"
            results["ratios"][f"cold_over_naive_loop{share}"] = ratio(cold["bytes"], naive["bytes"])
            results["ratios"][f"cold_wall_over_naive_loop{share}"] = ratio(cold["seconds"], naive["seconds"])
            results["ratios"][f"floor_over_naive_loop{share}"] = ratio(floor or 0, naive["bytes"])
            results["ratios"]["naive_loop_cells_installed"] = sum(
                c["install_rc"] == 0 for c in naive["cells"]
            )
    results["load_after"] = os.getloadavg()
    results["table"] = table_rows(results)
    text = json.dumps(results, indent=1)
    if args.json:
        args.json.write_text(text)
    else:
        print(text)
    load = " / ".join(f"{x:.2f}" for x in results["load_before"])
    print(f"\nload average before: {load}; after: {' / '.join(f'{x:.2f}' for x in results['load_after'])}")
    print(markdown_table(results["table"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
