"""Probe jobs: (set × GPU architecture) units any scheduler can run, and folding their results back.

``solve --emit-probe-jobs`` writes a job file (``probe-jobs.schema.json``) whose ``include`` list is a
GitHub Actions matrix as is; ``probe --job FILE --job-id ID`` runs one job (see
``abiprobe.probe.job_runner``);
``matrix merge`` folds the result files into the matrix whose target and cell each job names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abiprobe import __version__
from abiprobe.binary.wheel import importable
from abiprobe.errors import UsageError
from abiprobe.model.cuda_arch import parse_known_arch
from abiprobe.model.verdict import Verdict, worst
from abiprobe.report.jsondoc import load_versioned
from abiprobe.report.matrix_json import wheel_entry
from abiprobe.solve.candidates import StackCandidate
from abiprobe.solve.matrix import explain
from abiprobe.solve.result import CellSelection, SolveResult

JOBS_KIND = "abiprobe-probe-jobs"
RESULT_KIND = "abiprobe-probe-job-result"
JOBS_SCHEMA_VERSION = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def arch_label(arch: str) -> str:
    """``12.0`` / ``sm120`` / ``sm_90a`` -> ``sm120`` / ``sm90a``: the runner label and id fragment."""
    a = parse_known_arch(arch)
    return f"sm{a.sm}{a.variant}"


def default_runner_labels(arch: str) -> list[str]:
    return ["self-hosted", "linux", "gpu", arch_label(arch)]


def job_id(arch: str, members: Sequence[str]) -> str:
    """A file- and artifact-safe id: ``sm120-torch-2.9.0-sglang-kernel-0.4.0-...``."""
    return _UNSAFE.sub("-", "-".join([arch_label(arch), *(m.replace("==", "-") for m in members)])).strip("-")


def _wheel(w: StackCandidate) -> dict[str, Any]:
    return {k: v for k, v in wheel_entry(w).items() if k in _JOB_WHEEL_FIELDS}


_JOB_WHEEL_FIELDS = ("name", "version", "filename", "url", "sha256")


def _tops(w: StackCandidate) -> tuple[str, ...]:
    return tuple(sorted(importable(w.summary.metadata.top_level))) if w.summary is not None else ()


def _selected(doc: dict[str, Any], cells: CellSelection) -> list[dict[str, Any]]:
    if cells == "all":
        return list(doc["cells"])
    if cells == "ok":
        return [c for c in doc["cells"] if c["status"] == "ok"]
    chosen = doc.get("chosen")
    if not chosen:
        return []
    picked = set(chosen.values())
    return [c for c in doc["cells"] if set(c["members"]) <= picked][:1]


def probe_jobs(
    doc: dict[str, Any],
    result: SolveResult,
    *,
    archs: Sequence[str] = (),
    cells: CellSelection = "chosen",
    labels: Callable[[str], list[str]] = default_runner_labels,
) -> dict[str, Any]:
    """The job document for the selected cells of a matrix × each GPU arch (default: the target's); each
    job installs the cell's whole install as the solve resolved it (``result.installs``)."""
    target = doc["target"]
    major, minor = target["python"][2:3], target["python"][3:]
    wanted = list(archs) or ([target["arch"]] if target["arch"] else [])
    if not wanted:
        raise UsageError("the target has no GPU arch: pass --probe-arch")
    jobs = []
    for cell in _selected(doc, cells):
        install = result.install(cell["members"])
        wheels, added = install.stack, install.added  # added: runtime wheels, numpy, sympy, ...
        order = list(dict.fromkeys(t for w in wheels for t in _tops(w)))
        for arch in wanted:
            a = parse_known_arch(arch)
            job_target = {**target, "arch": f"{a.major}.{a.minor}{a.variant}"}
            jobs.append(
                {
                    "id": job_id(arch, cell["members"]),
                    "name": f"{' + '.join(cell['members'])} on sm_{a.sm}{a.variant}",
                    "runs_on": labels(arch),
                    "matrix": target["key"],
                    "target": job_target,
                    "cell": {"row": cell["row"], "col": cell["col"]},
                    "python": f"{major}.{minor}",
                    "wheels": [_wheel(w) for w in (*wheels, *added)],
                    "import_order": order,
                    "expected": cell["status"],
                    "expected_gpu": cell["checks"].get("gpu_arch", "ok") if job_target == target else None,
                    "expected_message": cell.get("first_error") if job_target == target else None,
                }
            )
    return {
        "kind": JOBS_KIND,
        "schema_version": JOBS_SCHEMA_VERSION,
        "generated_by": f"abiprobe {__version__}",
        "matrix": target["key"],
        "include": jobs,
    }


def _load(path: Path, kind: str) -> dict[str, Any]:
    return load_versioned(path, kind, JOBS_SCHEMA_VERSION, f"{kind} file")


def load_jobs(path: Path) -> dict[str, Any]:
    return _load(path, JOBS_KIND)


def load_result(path: Path) -> dict[str, Any]:
    return _load(path, RESULT_KIND)


def select_job(jobs: dict[str, Any], ident: str | None) -> dict[str, Any]:
    """The job with ``ident``; without one, the only job of the file."""
    entries: list[dict[str, Any]] = jobs["include"]
    if ident is None:
        if len(entries) != 1:
            raise UsageError(f"the job file holds {len(entries)} jobs: pass --job-id")
        return entries[0]
    for job in entries:
        if job["id"] == ident:
            return job
    raise UsageError(f"no job {ident!r} in the job file")


def result_document(
    job: dict[str, Any], result: dict[str, Any], verdicts: Iterable[Verdict], host: dict[str, Any]
) -> dict[str, Any]:
    """What one job reports: which job, on which host, the probe result and its verdicts."""
    return {
        "kind": RESULT_KIND,
        "schema_version": JOBS_SCHEMA_VERSION,
        "generated_by": f"abiprobe {__version__}",
        "job": {k: job[k] for k in ("id", "name", "matrix", "target", "cell")},
        "host": host,
        "result": result,
        "verdicts": [v.to_json() for v in verdicts],
    }


@dataclass(frozen=True)
class MergeReport:
    merged: tuple[str, ...]
    unmatched: tuple[str, ...]  # result ids whose target or cell this matrix does not have


_TARGET_FIELDS = ("cuda", "arch", "python", "platform", "driver")


def merge_results(
    doc: dict[str, Any], results: Sequence[dict[str, Any]]
) -> tuple[dict[str, Any], MergeReport]:
    """Fold probe job results into the cells they name; a re-run replaces that job's earlier verdicts."""
    out = json.loads(json.dumps(doc))
    cells = {(c["row"], c["col"]): c for c in out["cells"]}
    pair_verdicts = {pid: [Verdict.from_json(v) for v in p["verdicts"]] for pid, p in out["pairs"].items()}
    merged: list[str] = []
    unmatched: list[str] = []
    for res in results:
        job = res["job"]
        same = all(job["target"].get(k) == out["target"].get(k) for k in _TARGET_FIELDS)
        cell = cells.get((job["cell"]["row"], job["cell"]["col"])) if same else None
        if cell is None:
            unmatched.append(job["id"])
            continue
        new = [Verdict.from_json(v) for v in res["verdicts"]]
        kept = [v for v in cell["set_verdicts"] if v.get("subject") != job["id"]]
        cell["set_verdicts"] = kept + [{**v.to_json(), "subject": job["id"]} for v in new]
        verdicts = [v for pid in cell["pairs"] for v in pair_verdicts.get(pid, [])]
        verdicts += [Verdict.from_json(v) for v in cell["set_verdicts"]]
        cell["status"] = worst(v.status for v in verdicts)
        checks: dict[str, str] = dict(cell["checks"])
        for v in new:
            checks[v.check] = worst([*(x.status for x in verdicts if x.check == v.check)])
        cell["checks"] = checks
        cell["explanation"] = explain(verdicts)
        merged.append(job["id"])
    return out, MergeReport(tuple(merged), tuple(unmatched))
