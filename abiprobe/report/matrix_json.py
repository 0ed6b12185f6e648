"""The matrix as versioned JSON (``matrix.schema.json``): the one source Markdown and HTML render from."""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from typing import Any

from abiprobe import __version__
from abiprobe.model.candidate import NOT_CACHED
from abiprobe.model.target import Target
from abiprobe.model.verdict import Verdict
from abiprobe.report.jsondoc import load_versioned
from abiprobe.solve.candidates import StackCandidate
from abiprobe.solve.matrix import Group, Matrix
from abiprobe.solve.override import blocking
from abiprobe.solve.result import SolveResult

MATRIX_SCHEMA_VERSION = 1
MATRIX_KIND = "abiprobe-matrix"


def target_json(target: Target) -> dict[str, Any]:
    return {
        "key": target.key(),
        "cuda": f"{target.cuda[0]}.{target.cuda[1]}",
        "arch": str(target.arch) if target.arch is not None else None,
        "python": target.python_tag,
        "platform": target.platform,
        "driver": ".".join(map(str, target.driver)) if target.driver else None,
    }


def wheel_entry(w: StackCandidate) -> dict[str, Any]:
    """A wheel as the matrix (and the probe jobs) describe it."""
    f = w.candidate.file
    return {
        "name": str(w.name),
        "version": str(w.version),
        "filename": f.filename,
        "url": f.url,
        "sha256": f.sha256 or (w.summary.sha256 if w.summary else None),
        "size": f.size if f.size is not None else (w.summary.size if w.summary else None),
        "index": f.index_url,
        "cuda": w.variant.to_json(),
    }


def _group(g: Group) -> dict[str, Any]:
    return {
        "id": g.id,
        "wheels": [wheel_entry(w) for w in g.wheels],
        "missing_companions": list(g.missing),
        "providers": [p.to_json() for p in g.arch_wheels],
    }


def _verdict(v: Verdict) -> dict[str, Any]:
    data = v.to_json()
    if v.status == "ok":
        data["evidence"] = {}
    return data


def matrix_document(result: SolveResult) -> dict[str, Any]:
    """Everything a reader needs, ordered for stable diffs; no timestamps, so re-solves compare equal."""
    m: Matrix = result.matrix
    roles = m.stack.roles
    return {
        "kind": MATRIX_KIND,
        "schema_version": MATRIX_SCHEMA_VERSION,
        "generated_by": f"abiprobe {__version__}",
        "target": target_json(m.target),
        "stack": m.stack.to_json(),
        "indexes": [i.to_json() for i in result.indexes],
        "complete": result.complete,
        "problems": list(result.problems),
        "axes": {"rows": roles[0], "cols": roles[1] if len(roles) > 1 else None, "per_cell": list(roles[2:])},
        "groups": {role: [_group(g) for g in m.groups.get(role, ())] for role in roles},
        "excluded": [e.to_json() for e in result.excluded],
        "pairs": {
            pid: {
                "base": p.base,
                "member": p.member,
                "status": p.status,
                "checks": p.checks(),
                "verdicts": [_verdict(v) for v in p.verdicts],
            }
            for pid, p in sorted(m.pairs.items())
        },
        "cells": [
            {
                "row": c.row,
                "col": c.col,
                "members": list(c.members),
                "status": c.status,
                "checks": dict(c.checks),
                "pairs": list(c.pairs),
                "set_verdicts": [_verdict(v) for v in c.set_verdicts],
                "blocked_by": [b.to_json() for b in blocking(c.set_verdicts)],
                "choices": [
                    {
                        "role": ch.role,
                        "chosen": ch.chosen,
                        "options": [{"id": i, "status": s} for i, s in ch.options],
                    }
                    for ch in c.choices
                ],
                "explanation": c.explanation,
                "first_error": c.first_error,
            }
            for c in m.cells
        ],
        "chosen": dict(result.resolution.chosen) if result.resolution.chosen is not None else None,
        "conflicts": list(result.resolution.conflicts),
        "empty_roles": [e.to_json() for e in result.empty_roles],
        "twins": [t.to_json() for t in result.twins],
        "near_misses": [n.to_json() for n in result.near_misses],
        "if_pins_overridden": result.override.to_json() if result.override is not None else None,
        "stats": {
            "cells": len(m.cells),
            "pairs": len(m.pairs),
            "analyses": m.stats.analyses,
            "naive_analyses": m.stats.naive_analyses,
            "analyses_run": m.stats.analyses_run,
            "analyses_stored": m.stats.analyses_stored,
        },
    }


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def matrix_schema() -> dict[str, Any]:
    text = resources.files("abiprobe").joinpath("schemas/matrix.schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def load_document(path: Path) -> dict[str, Any]:
    """Read a matrix JSON file written by ``solve``; refuses other kinds and newer schema versions."""
    return load_versioned(path, MATRIX_KIND, MATRIX_SCHEMA_VERSION, "matrix")


def title_of(doc: dict[str, Any]) -> str:
    t = doc["target"]
    arch = t["arch"] or "no GPU arch"
    return f"abiprobe matrix: CUDA {t['cuda']} · {arch} · {t['python']} · {t['platform']}"


def axis_ids(doc: dict[str, Any]) -> tuple[list[str], list[str | None]]:
    """Row ids and column ids (``[None]`` for a one-role stack) of a matrix document."""
    axes = doc["axes"]
    rows = [g["id"] for g in doc["groups"].get(axes["rows"], [])]
    if not axes["cols"]:
        return rows, [None]
    return rows, [g["id"] for g in doc["groups"].get(axes["cols"], [])]


def index_state(entry: dict[str, Any], now: float | None = None) -> str:
    """One index's line: answered (live, or from the cache with the age of its oldest page), what it did
    not answer, or no answer and why."""
    uncached = entry.get("uncached") or []
    more = f" (+{len(uncached) - 3} more)" if len(uncached) > 3 else ""
    missing = (
        f"; {len(uncached)} page(s) not in the cache: {', '.join(uncached[:3])}{more}" if uncached else ""
    )
    if not entry["answered"] and uncached and entry["error"] == NOT_CACHED:
        return f"no answer: none of the {len(uncached)} page(s) asked for is in the cache (offline)"
    if not entry["answered"]:
        return f"no answer: {entry['error'] or 'unknown error'}{missing}"
    text = "answered"
    if entry["from_cache"]:
        cached_at = entry.get("cached_at")
        age = f", pages fetched {age_text((now or time.time()) - cached_at)} ago" if cached_at else ""
        text = f"answered from the cache{age}"
    if entry["error"]:
        text += f" (the index itself did not answer: {entry['error']})"
    return text + missing


def age_text(seconds: float) -> str:
    """``45 s``, ``12 min``, ``5 h``, ``3 days``."""
    s = max(0.0, seconds)
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if s >= size * (2 if unit == "days" else 1):
            return f"{s / size:.0f} {unit}"
    return f"{s:.0f} s"
