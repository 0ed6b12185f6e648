"""Run the in-venv runner for prepared sets (fresh process each, or a fork-server) and read its results."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abiprobe.probe.classify import Failure, classify_exit, classify_report, crash
from abiprobe.probe.model import ProbeOptions, ProbeResult, ProbeSet
from abiprobe.probe.procs import Finished, ProcessRegistry
from abiprobe.probe.stub import driver_library_dirs


@dataclass(frozen=True)
class PreparedSet:
    """A set ready to import: its layer venv, its overlay directory, its home and its result file."""

    index: int
    probe: ProbeSet
    python: Path  # the layer venv's interpreter
    site: Path  # the layer venv's site-packages
    overlay: Path | None  # directory holding the set's own wheels, first on sys.path
    workdir: Path
    dists: tuple[str, ...]
    stub_dir: Path | None
    pycache: Path | None = None  # the layer's pycache prefix (abiprobe.probe.bytecode)


@dataclass(frozen=True)
class RunContext:
    procs: ProcessRegistry
    runner: Path
    options: ProbeOptions
    interpreter: Path
    python_label: str
    installer: str
    temp_root: Path


def child_env(venv_bin: Path, home: Path, stub_dir: Path | None) -> dict[str, str]:
    """Clean environment for probed code: PATH, HOME, LANG, TMPDIR, and the stub's directory if any."""
    env = {
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    for key in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        if key in os.environ:
            env[key] = os.environ[key]
    if stub_dir is not None:
        env["LD_LIBRARY_PATH"] = str(stub_dir)
    elif driver_dirs := driver_library_dirs():
        env["LD_LIBRARY_PATH"] = ":".join(driver_dirs)
    return env


def _roots(p: PreparedSet) -> list[str]:
    roots = [os.path.realpath(p.site) + "/"]
    if p.overlay is not None:
        roots.append(os.path.realpath(p.overlay) + "/")
    if p.stub_dir is not None:
        roots.append(os.path.realpath(p.stub_dir) + "/")
    return roots


def _relative(path: str | None, p: PreparedSet) -> str | None:
    if path is None:
        return None
    real = os.path.realpath(path)
    if p.stub_dir is not None and real.startswith(os.path.realpath(p.stub_dir) + "/"):
        return "<driver stub>/" + os.path.basename(real)
    for root in _roots(p):
        if real.startswith(root):
            return real[len(root) :]
    return path


def _scrub(value: Any, p: PreparedSet) -> Any:
    """Temp-directory prefixes cut from a message, so it reads ``pkg/_ext.so: ...`` in any mode."""
    if not isinstance(value, str):
        return value
    for root in _roots(p):
        value = value.replace(root, "")
        value = value.replace(os.path.abspath(root.rstrip("/")) + "/", "")
    return value


def _candidate(p: PreparedSet, modules: Sequence[str], forked: bool) -> dict[str, Any]:
    """The runner's instructions for one set; a forked child loads its driver stub itself."""
    home = p.workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    stub = [str(p.stub_dir / "libcuda.so.1")] if (forked and p.stub_dir is not None) else []
    return {
        "label": p.probe.label,
        "paths": [str(p.overlay)] if p.overlay is not None else [],
        "preload_libs": stub,
        "modules": list(modules),
        "dists": list(p.dists),
        "result": str(p.workdir / "result.json"),
        "home": str(home),
    }


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def build_result(
    ctx: RunContext,
    p: PreparedSet,
    failure: Failure,
    report: dict[str, Any] | None,
    mode: str,
    duration: float,
    extra_modules: dict[str, Any] | None = None,
) -> ProbeResult:
    report = report or {}
    modules = {**(extra_modules or {}), **(report.get("modules") or {})}
    loaded = sorted({r for f in report.get("loaded") or [] if (r := _relative(f, p)) is not None})
    detail = {k: _scrub(v, p) for k, v in failure.detail.items()}
    if isinstance(report.get("import_seconds"), (int, float)):
        detail["import_seconds"] = report["import_seconds"]
    module = failure.detail.get("module") or report.get("module")
    return ProbeResult(
        label=p.probe.label,
        outcome=failure.outcome,
        message=_scrub(failure.message, p),
        module=module if failure.outcome != "ok" else None,
        versions=tuple(sorted((report.get("versions") or {}).items())),
        modules=tuple(sorted((k, _relative(v, p)) for k, v in modules.items())),
        loaded=tuple(loaded),
        stubbed=p.stub_dir is not None,
        python=ctx.python_label,
        installer=ctx.installer,
        mode=mode,
        duration=duration,
        expected=p.probe.expected,
        expected_gpu=p.probe.expected_gpu,
        expected_message=p.probe.expected_message,
        smoke=dict(report.get("smoke") or {}),
        detail=detail,
        temp_root=str(ctx.temp_root) if ctx.options.keep else None,
    )


def _outcome(finished: Finished | None, how: dict[str, Any] | None, report: dict[str, Any] | None) -> Failure:
    if finished is not None:
        dead = classify_exit(finished.returncode, finished.timed_out, finished.stderr[-4000:])
        if dead is not None:
            return _with_module(dead, report)
    if how is not None:
        if how.get("how") == "timeout":
            return _with_module(Failure("timeout", "timed out", {}), report)
        if how.get("how") == "signal":
            return _with_module(crash(int(how.get("value", 0))), report)
    if report is None:
        code = finished.returncode if finished is not None else None
        tail = (finished.stderr.strip().splitlines() or [""])[-1] if finished is not None else ""
        return Failure("crash", f"runner exited with status {code} and no result: {tail}"[:300], {})
    return classify_report(report)


def _with_module(failure: Failure, report: dict[str, Any] | None) -> Failure:
    if report and report.get("status") == "importing":
        return Failure(failure.outcome, failure.message, {**failure.detail, "module": report.get("module")})
    return failure


def _prefix_option(p: PreparedSet) -> list[str]:
    """Bytecode goes to the layer's own prefix tree, never into the installed files."""
    return ["-X", f"pycache_prefix={p.pycache}"] if p.pycache is not None else []


def run_fresh(ctx: RunContext, p: PreparedSet) -> ProbeResult:
    """One new interpreter per set: the plain, always-correct way."""
    cand = _candidate(p, p.probe.import_order, forked=False)
    spec = {
        "mode": "single",
        "paths": [],
        "roots": _roots(p),
        "candidates": [cand],
        "smoke": ctx.options.smoke,
    }
    spec_path = p.workdir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    started = time.monotonic()
    finished = ctx.procs.run(
        [str(p.python), "-I", *(_prefix_option(p) or ["-B"]), str(ctx.runner), str(spec_path)],
        child_env(p.python.parent, Path(cand["home"]), p.stub_dir),
        ctx.options.timeout,
        cwd=Path(cand["home"]),
        log_dir=p.workdir / "log",
    )
    report = _read_json(Path(cand["result"]))
    failure = _outcome(finished, None, report)
    return build_result(ctx, p, failure, report, "fresh", time.monotonic() - started)


def run_server(ctx: RunContext, preload: Sequence[str], group: Sequence[PreparedSet]) -> list[ProbeResult]:
    """One parent imports ``preload`` once inside the layer venv, then forks a child per set."""
    first = group[0]
    server_dir = first.workdir.parent / f"server-{first.index}"
    home = server_dir / "home"
    home.mkdir(parents=True, exist_ok=True)
    cands = [_candidate(p, p.probe.import_order[len(preload) :], forked=True) for p in group]
    roots = sorted({r for p in group for r in _roots(p)})
    preload_result = server_dir / "preload.json"
    spec = {
        "mode": "server",
        "paths": [],
        "roots": roots,
        "preload": list(preload),
        "preload_result": str(preload_result),
        "candidates": cands,
        "timeout": ctx.options.timeout,
        "smoke": ctx.options.smoke,
    }
    spec_path = server_dir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    started = time.monotonic()
    finished = ctx.procs.run(
        [str(first.python), "-I", *(_prefix_option(first) or ["-B"]), str(ctx.runner), str(spec_path)],
        child_env(first.python.parent, home, None),
        ctx.options.timeout * (len(group) + 1),
        cwd=home,
        log_dir=server_dir / "log",
    )
    wall = time.monotonic() - started
    pre = _read_json(preload_result)
    if pre is None or pre.get("status") != "ok" or finished.timed_out:
        failure = _outcome(finished, None, pre)
        return [build_result(ctx, p, failure, pre, "fork", wall) for p in group]
    results = []
    for p, cand in zip(group, cands, strict=True):
        report = _read_json(Path(cand["result"]))
        how = _read_json(Path(cand["result"] + ".exit"))
        failure = _outcome(None, how, report) if how is not None else _outcome(finished, None, report)
        seconds = (report or {}).get("import_seconds") or 0.0
        results.append(build_result(ctx, p, failure, report, "fork", float(seconds), pre.get("modules")))
    return results
