"""Benchmark the real ``abiprobe solve --cuda 13.0 --arch sm120`` against the live indexes (run by hand).

Three scenarios, each in a fresh interpreter: fully cold (empty cache), fresh machine (the committed
``wheel_index_cache/`` exported from git, nothing else), warm re-solve (the same cache right after).
Prints wall time, peak RSS, bytes fetched, and those bytes against the candidate wheels' total size and
against what the naive loop (a venv per set, install, import) downloads for the same sets: a lower bound
(the stack wheels of every cell), every cell's whole install with no cache shared, and the union of those
installs (what uv downloads when its cache is shared by the cells). After the cold run it also measures
the floor of any static reader of these sets: the compressed size of the members the cold solve had to
read (each wheel's central directory is fetched again for the sizes; deflate has no random access, so
a member whose fatbin or dynamic section is needed is needed whole).

    python bench/bench_solve_real.py [--skip-cold] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--cuda", "13.0", "--arch", "sm120", "--python", "3.12", "--platform", "manylinux_2_28_x86_64"]

# Runs inside the child: counts every byte the solve's HTTP clients receive.
CHILD = r"""
import json, sys
import abiprobe.net.http as H
total = [0]
orig_exit = H.Http.__exit__
def counting_exit(self, *exc):
    total[0] += self.bytes_received
    return orig_exit(self, *exc)
H.Http.__exit__ = counting_exit
from abiprobe.cli import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["solve", *sys.argv[2:], "--cache-dir", sys.argv[1], "--no-write", "--json"])
print(json.dumps({"rc": rc, "bytes": total[0]}))
"""


def run(cache: Path) -> dict[str, float]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(cache), *ARGS], capture_output=True, text=True,
                          cwd=ROOT, check=False)  # fmt: skip
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"seconds": round(seconds, 1), "peak_rss_mb_max_so_far": round(peak), "bytes": out["bytes"],
            "rc": out["rc"]}  # fmt: skip


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


def naive_installs(cache: Path) -> dict[str, int]:
    """What the naive loop downloads when every cell's set is installed *with its dependencies*, from
    the same committed/solved cache (offline): each cell's whole install (the set, the runtime wheels
    torch pins, and everything they require, as the lock resolves it), summed over cells with no cache
    shared between them, and as the union of distinct wheels (uv's cache shared by all cells)."""
    from abiprobe.analyze.profiles import profile_for
    from abiprobe.cli import build_parser
    from abiprobe.commands.solve import build_stack, index_config
    from abiprobe.index.client import IndexClient
    from abiprobe.model.target import Target
    from abiprobe.net.http import Http
    from abiprobe.solve.candidates import FilterOptions
    from abiprobe.solve.closure import Completion
    from abiprobe.solve.pipeline import solve
    from abiprobe.store.cache import Cache
    from abiprobe.store.reads import WheelReads

    args = build_parser("solve").parse_args(["solve", *ARGS, "--offline"])
    target = Target.parse(
        cuda=args.cuda, arch=args.arch, python=args.python, platform=args.platform, base=Target()
    )
    stack = build_stack(args)
    config = index_config(args, target)
    store = Cache(cache)
    with Http(progress=False) as http:
        client = IndexClient(config.sources, store, http, offline=True)
        reads = WheelReads(http, store, offline=True)
        result, providers = solve(
            stack, target, profile_for(target.machine, target.glibc), client,
            reads.info, FilterOptions(window=args.window), metadata_for=reads.metadata,
        )  # fmt: skip
        complete = Completion(providers.collector, target)
        groups = {g.id: g for gs in result.matrix.groups.values() for g in gs}
        per_cell: list[int] = []
        union: dict[str, int] = {}
        for cell in result.matrix.cells:
            picked = [groups[m] for m in cell.members]
            wheels = [w for g in picked for w in g.wheels]
            wheels += providers.wheels(next(g for g in picked if g.role == stack.roles[0]))
            wheels += complete(wheels)
            sizes = {w.filename: int(w.candidate.file.size or 0) for w in wheels}
            per_cell.append(sum(sizes.values()))
            union.update(sizes)
    return {
        "naive_full_installs_no_shared_cache": sum(per_cell),
        "naive_full_installs_uv_cache": sum(union.values()),
    }


def read_floor(cache: Path) -> dict[str, int]:
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

    args = build_parser("solve").parse_args(["solve", *ARGS])
    target = Target.parse(
        cuda=args.cuda, arch=args.arch, python=args.python, platform=args.platform, base=Target()
    )
    config = index_config(args, target)
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


def targets(results: dict[str, object], candidates: int, full: dict[str, int]) -> dict[str, str]:
    """The issue's targets, met or missed; the cold one against both readings of "the naive loop"."""
    out: dict[str, str] = {}
    warm, fresh, cold = (results.get(k) for k in ("warm", "fresh", "cold"))
    if isinstance(warm, dict):
        out["warm under 2 s"] = f"{'met' if warm['seconds'] < 2 else 'missed'} ({warm['seconds']} s)"
    if isinstance(fresh, dict):
        share = fresh["bytes"] / candidates
        out["fresh machine under 2% of the candidates"] = (
            f"{'met' if share < 0.02 else 'missed'} ({share:.3%})"
        )
    if isinstance(cold, dict):
        readings = (
            ("naive_full_installs_no_shared_cache", "a venv per set, each downloading its install"),
            ("naive_full_installs_uv_cache", "a venv per set, uv's cache shared"),
        )
        for key, label in readings:
            share = cold["bytes"] / full[key]
            out[f"cold at most a fifth of the naive loop ({label})"] = (
                f"{'met' if share <= 0.2 else 'missed'} ({share:.1%})"
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        if not args.skip_cold:
            results["cold"] = run(t / "cold")
            results.update(read_floor(t / "cold"))
        export_committed_cache(t / "fresh")
        results["fresh"] = run(t / "fresh" / "wheel_index_cache")
        results["warm"] = run(t / "fresh" / "wheel_index_cache")
        full = naive_installs(t / "fresh" / "wheel_index_cache")
    candidates, naive = wheel_totals()
    results["candidate_wheels_bytes"] = candidates
    results["naive_loop_bytes_lower_bound"] = naive
    results.update(full)
    for name in ("cold", "fresh", "warm"):
        r = results.get(name)
        if isinstance(r, dict):
            r["share_of_candidate_wheels"] = f"{r['bytes'] / candidates:.3%}"
            r["share_of_naive_loop"] = f"{r['bytes'] / naive:.3%}"
            for key, total in full.items():
                r[f"share_of_{key}"] = f"{r['bytes'] / total:.3%}"
    cold, floor = results.get("cold"), results.get("floor_members_read_bytes")
    if isinstance(cold, dict) and isinstance(floor, int) and floor:
        cold["over_floor"] = f"{cold['bytes'] / floor - 1:.2%}"
        for key, total in full.items():
            results[f"floor_share_of_{key}"] = f"{floor / total:.3%}"
    results["targets"] = targets(results, candidates, full)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
