#!/usr/bin/env python3
"""Compare abiprobe's fatbin reader with ``cuobjdump --list-elf/--list-ptx`` on one library.

Usage: ``compare_cuobjdump.py LIB [--json OUT] [--cuobjdump PATH]``; exit 0 when the counts per
(kind, SM, variant) agree, 1 when they differ, 2 when a tool failed. Needs only the ``abiprobe`` package
(found next to this script or on PYTHONPATH), no pyelftools. cuobjdump prints ``sm_120f`` entries as
``sm_120``, so family entries are compared folded into plain ones; the fatbin flag bits are the truth.
cuobjdump lists neither LTO-IR (with these options) nor the containers in ``__nv_relfatbin`` or embedded
in other data sections (checked with cuobjdump 13.0), so those entries are shown but not compared.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import abiprobe  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abiprobe.binary.cuda import CUBIN_CONTAINER, gpu_code_of_elf, parse_fatbin
from abiprobe.binary.cuda_fatbin import FATBIN_MAGIC_BYTES
from abiprobe.errors import AbiprobeError
from abiprobe.model.facts import GpuCode

Key = tuple[str, int, str]  # (kind "sass"/"ptx", sm, variant)

_LISTING = re.compile(r"^\s*(ELF|PTX) file\s+\d+:\s*(?P<name>\S.*?)\s*$")
_ARCH_IN_NAME = re.compile(r"\.(?:sm|compute)_(?P<sm>\d+)(?P<variant>[a-z]?)\.(?:cubin|ptx)$")
NO_DEVICE_CODE = "does not contain device code"


def parse_listing(text: str) -> Counter[Key]:
    """Counts per (kind, SM, variant) from ``cuobjdump --list-elf`` and ``--list-ptx`` output."""
    counts: Counter[Key] = Counter()
    for line in text.splitlines():
        match = _LISTING.match(line)
        if match is None:
            continue
        arch = _ARCH_IN_NAME.search(match["name"])
        if arch is None:
            raise ValueError(f"cannot read the architecture from cuobjdump line {line.strip()!r}")
        kind = "sass" if match[1] == "ELF" else "ptx"
        counts[(kind, int(arch["sm"]), arch["variant"])] += 1
    return counts


def in_cuobjdump_view(code: GpuCode, fatbin_file: str | None = None) -> bool:
    """Whether cuobjdump --list-elf/--list-ptx would list this entry (.nv_fatbin, a cubin, a fatbin file)."""
    return code.kind != "ltoir" and code.container in (".nv_fatbin", CUBIN_CONTAINER, fatbin_file)


def count_ours(codes: Iterable[GpuCode], fatbin_file: str | None = None) -> Counter[Key]:
    return Counter((c.kind, c.sm, c.variant) for c in codes if in_cuobjdump_view(c, fatbin_file))


def _folded(counts: Counter[Key]) -> Counter[Key]:
    out: Counter[Key] = Counter()
    for (kind, sm, variant), n in counts.items():
        out[(kind, sm, "" if variant == "f" else variant)] += n
    return out


def _label(key: Key) -> str:
    kind, sm, variant = key
    return f"{'sm' if kind == 'sass' else 'compute'}_{sm}{variant}"


@dataclass
class Comparison:
    """Side-by-side counts; ``agree`` compares with family entries folded into plain ones."""

    ours: Counter[Key]
    theirs: Counter[Key]
    rows: list[dict[str, Any]] = field(default_factory=list)
    agree: bool = False


def compare(ours: Counter[Key], theirs: Counter[Key]) -> Comparison:
    folded_ours, folded_theirs = _folded(ours), _folded(theirs)
    rows = []
    for key in sorted(set(folded_ours) | set(folded_theirs), key=lambda k: (k[0] != "sass", k[1], k[2])):
        family = ours.get((key[0], key[1], "f"), 0) if key[2] == "" else 0
        rows.append(
            {
                "entry": _label(key),
                "ours": folded_ours[key],
                "ours_family": family,
                "cuobjdump": folded_theirs[key],
                "agree": folded_ours[key] == folded_theirs[key],
            }
        )
    return Comparison(ours, theirs, rows, all(r["agree"] for r in rows))


def read_ours(path: Path) -> tuple[tuple[GpuCode, ...], str | None]:
    """Our entries, and the container name used when ``path`` is a bare fatbin file."""
    with path.open("rb") as stream:
        if stream.read(4) == FATBIN_MAGIC_BYTES:
            return parse_fatbin(path.read_bytes(), path.name), path.name
        stream.seek(0)
        return gpu_code_of_elf(stream), None


def run_cuobjdump(tool: str, option: str, path: Path) -> str:
    proc = subprocess.run([tool, option, str(path)], capture_output=True, text=True, errors="replace")
    if proc.returncode != 0 and NO_DEVICE_CODE not in proc.stdout + proc.stderr:
        raise RuntimeError(f"{tool} {option} failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    return proc.stdout


def render(
    library: Path, comparison: Comparison, notes: list[str], codes: Sequence[GpuCode], fatbin_file: str | None
) -> str:
    lines = [f"library: {library}", f"{'entry':<16}{'ours':>8}{'(of them f)':>13}{'cuobjdump':>11}  agree"]
    for row in comparison.rows:
        family = str(row["ours_family"]) if row["ours_family"] else ""
        agree = "yes" if row["agree"] else "NO"
        lines.append(f"{row['entry']:<16}{row['ours']:>8}{family:>13}{row['cuobjdump']:>11}  {agree}")
    per_section = Counter(c.container for c in codes)
    lines.append("ours per section: " + ", ".join(f"{k} {v}" for k, v in sorted(per_section.items())))
    unseen = Counter(f"{c.label()} in {c.container}" for c in codes if not in_cuobjdump_view(c, fatbin_file))
    if unseen:
        lines.append(
            "not compared (cuobjdump does not list them): "
            + ", ".join(f"{n}x {k}" for k, n in sorted(unseen.items()))
        )
    lines += [f"note: {n}" for n in notes]
    lines.append("AGREE" if comparison.agree else "DISAGREE")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("library", type=Path)
    parser.add_argument("--json", type=Path, help="write the comparison as JSON here")
    parser.add_argument("--cuobjdump", default=shutil.which("cuobjdump"), help="path of cuobjdump")
    args = parser.parse_args(argv)
    if not args.cuobjdump:
        print("cuobjdump not found: put it on PATH or pass --cuobjdump", file=sys.stderr)
        return 2
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        elf_job = pool.submit(run_cuobjdump, args.cuobjdump, "--list-elf", args.library)
        ptx_job = pool.submit(run_cuobjdump, args.cuobjdump, "--list-ptx", args.library)
        try:
            codes, fatbin_file = read_ours(args.library)
        except (AbiprobeError, OSError) as exc:
            print(f"abiprobe failed: {exc}", file=sys.stderr)
            return 2
        ours_seconds = time.perf_counter() - started
        try:
            theirs = parse_listing(elf_job.result()) + parse_listing(ptx_job.result())
        except (RuntimeError, ValueError, OSError) as exc:
            print(f"cuobjdump failed: {exc}", file=sys.stderr)
            return 2
    notes = ["cuobjdump prints sm_XXf entries as sm_XX: family entries are counted with plain ones"]
    comparison = compare(count_ours(codes, fatbin_file), theirs)
    print(render(args.library, comparison, notes, codes, fatbin_file))
    print(f"time: abiprobe {ours_seconds:.2f}s, total {time.perf_counter() - started:.2f}s")
    if args.json:
        document = {
            "library": str(args.library),
            "agree": comparison.agree,
            "rows": comparison.rows,
            "ours_per_section": dict(Counter(c.container for c in codes)),
            "not_compared": sum(1 for c in codes if not in_cuobjdump_view(c, fatbin_file)),
            "notes": notes,
            "abiprobe_seconds": round(ours_seconds, 3),
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0 if comparison.agree else 1


if __name__ == "__main__":
    sys.exit(main())
