"""Benchmark: all dynamic symbols of torch's libtorch_cpu.so, abiprobe.binary.elf against readelf.

Run by hand (not part of pytest):

    python bench/bench_dynsyms.py                      # extracts libtorch_cpu.so from the local torch wheel
    python bench/bench_dynsyms.py --lib PATH --runs 7  # any ELF object

Prints symbol counts (ours and readelf's must agree), best-of-N times in-process, the time of a fresh
process (interpreter start + import + read), the ratio to readelf, CPU times, and our peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
MEMBER = "torch/lib/libtorch_cpu.so"
CHILD = """
import json, resource, sys, time
start = time.perf_counter()
from abiprobe.binary.elf import read_elf
with open(sys.argv[1], "rb") as stream:
    facts = read_elf(stream, sys.argv[1])
elapsed = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_and_read_s": elapsed, "maxrss_kb": usage.ru_maxrss,
                  "cpu_s": usage.ru_utime + usage.ru_stime,
                  "exports": len(facts.exports), "imports": len(facts.imports)}))
"""


def readelf_counts(text: str) -> tuple[int, int, int]:
    """(entries, loader-visible defined, undefined non-local) from `readelf --dyn-syms -W` output."""
    entries = exports = imports = 0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].rstrip(":").isdigit():
            continue
        entries += 1
        bind, vis, ndx = fields[4], fields[5], fields[6]
        if bind == "LOCAL":
            continue
        if ndx == "UND":
            imports += 1
        elif vis not in ("HIDDEN", "INTERNAL"):
            exports += 1
    return entries, exports, imports


def time_readelf(lib: Path) -> tuple[float, float, str]:
    """Wall time, CPU time (user+sys of the child) and output of one readelf run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        ["readelf", "--dyn-syms", "-W", str(lib)], capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def time_ours(lib: Path) -> tuple[float, float, int, int]:
    from abiprobe.binary.elf import read_elf

    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    with lib.open("rb") as stream:
        facts = read_elf(stream, str(lib))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    counts = len(facts.exports), len(facts.imports)
    del facts
    return wall, cpu, *counts


def fresh_process(lib: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(lib)], capture_output=True, text=True, check=True, env=env
    )
    result: dict[str, float] = json.loads(out.stdout)
    result["process_wall_s"] = time.perf_counter() - start
    return result


def extract(wheel: Path, into: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        return Path(zf.extract(MEMBER, into))


def run(lib: Path, runs: int) -> int:
    sys.path.insert(0, str(REPO))
    ours, ours_cpu, theirs, theirs_cpu = [], [], [], []
    exports = imports = 0
    output = ""
    for _ in range(runs):
        wall, cpu, exports, imports = time_ours(lib)
        ours.append(wall)
        ours_cpu.append(cpu)
        wall, cpu, output = time_readelf(lib)
        theirs.append(wall)
        theirs_cpu.append(cpu)
    fresh = [fresh_process(lib) for _ in range(3)]
    entries, re_exports, re_imports = readelf_counts(output)
    best_ours, best_theirs = min(ours), min(theirs)
    best_fresh = min(f["import_and_read_s"] for f in fresh)
    best_process = min(f["process_wall_s"] for f in fresh)
    peak_mb = max(f["maxrss_kb"] for f in fresh) / 1024
    size_mb = lib.stat().st_size / 1e6
    ours_ms, theirs_ms = min(ours_cpu) * 1e3, min(theirs_cpu) * 1e3
    lines = [
        f"library           {lib} ({size_mb:.0f} MB), load average {os.getloadavg()[0]:.2f}",
        f"readelf           {entries} dynsym entries: {re_exports} exports, {re_imports} imports",
        f"abiprobe          {exports} exports, {imports} imports",
        f"counts agree      {(exports, imports) == (re_exports, re_imports)}",
        f"readelf           best {best_theirs * 1e3:7.1f} ms   cpu {theirs_ms:7.1f} ms   (N={runs})",
        f"read_elf          best {best_ours * 1e3:7.1f} ms   cpu {ours_ms:7.1f} ms   (in-process)",
        f"read_elf fresh    best {best_fresh * 1e3:7.1f} ms   (import + read in a new interpreter)",
        f"fresh process     best {best_process * 1e3:7.1f} ms   (interpreter start included)",
        f"ratio             {best_theirs / best_ours:.1f}x in-process, {best_theirs / best_fresh:.1f}x fresh",
        f"ratio (cpu)       {min(theirs_cpu) / min(ours_cpu):.1f}x",
        f"peak RSS          {peak_mb:.0f} MB (child: interpreter + import + read)",
    ]
    print("\n".join(lines))
    return 0 if (exports, imports) == (re_exports, re_imports) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", type=Path, help="ELF object to read (default: libtorch_cpu.so from --wheel)")
    parser.add_argument("--wheel", type=Path, default=DEFAULT_WHEEL)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if shutil.which("readelf") is None:
        print("readelf not found", file=sys.stderr)
        return 2
    if args.lib is not None:
        return run(args.lib, args.runs)
    with tempfile.TemporaryDirectory(prefix="bench-dynsyms-") as tmp:
        lib = extract(args.wheel, Path(tmp))
        try:
            return run(lib, args.runs)
        finally:
            lib.unlink()


if __name__ == "__main__":
    raise SystemExit(main())
