"""Static `check --installed --all` against a real import of every distribution with native code.

Run on a host with a real environment, from the repository root, with no network:

    python3 tools/installed_table.py [--python PY] [--arch sm90] [--out DIR]

It runs ``abiprobe check --installed --all --arch ARCH --json`` for the environment of PY (default: the
interpreter running this script), then imports every distribution that ships native code, each in its
own subprocess of PY (its importable top-level modules, as a probe imports them), and prints a Markdown
table: distribution, static verdict, real import, agree. abiprobe's own dependencies (packaging,
pyelftools, resolvelib, httpx, rich) must be importable: when they are not installed there, put them in
a directory (``pip install --target DIR ...`` from wheels) and pass ``--deps DIR`` (default
/tmp/abiprobe-deps when it exists).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
_IMPORT = r"""
import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as exc:
        print(f"{name}: {type(exc).__name__}: {exc}".splitlines()[0][:300])
        sys.exit(1)
"""
_LOADS = {"ok": "loads", "warn": "loads", "blocked": "loads"}


def _env(deps: Path | None) -> dict[str, str]:
    paths = [str(REPO), *([str(deps)] if deps is not None else [])]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME",)}
    env["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [env.get("PYTHONPATH")])])
    return env


def static_check(python: str, arch: str, deps: Path | None) -> tuple[int, dict[str, Any]]:
    """abiprobe's own answer for the environment: its exit status and JSON document."""
    cmd = [sys.executable, "-m", "abiprobe", "check", "--installed", "--all", "--python", python]
    cmd += ["--arch", arch, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(deps), cwd=REPO)
    if not proc.stdout.strip():
        sys.exit(f"abiprobe check gave no JSON (rc {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return proc.returncode, json.loads(proc.stdout)


def native_distributions(python: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(name, version, importable top-level modules) of every installed distribution with a shared
    object among its files, as a probe chooses the modules to import (abiprobe.binary.wheel)."""
    from abiprobe.binary.wheel import provided_tops
    from abiprobe.host.installed import list_installed

    out: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    for rec in list_installed(python):
        files = [str(f) for f in rec["files"]]  # type: ignore[attr-defined]
        if not any(f.endswith(".so") or ".so." in f.rsplit("/", 1)[-1] for f in files):
            continue
        meta = str(rec["metadata"])
        name = next((ln[5:].strip() for ln in meta.splitlines() if ln.startswith("Name:")), "?")
        version = next((ln[8:].strip() for ln in meta.splitlines() if ln.startswith("Version:")), "?")
        listed = {t.strip() for t in str(rec["top_level"] or "").splitlines() if t.strip()}
        tops = tuple(sorted(provided_tops(listed, files)))
        out.setdefault(name.lower(), (name, version, tops))
    return sorted(out.values(), key=lambda d: d[0].lower())


def real_import(python: str, modules: tuple[str, ...], timeout: float) -> tuple[bool, str, float]:
    """Import ``modules`` in a fresh process of ``python``: (ok, first error line, seconds)."""
    start = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    try:
        proc = subprocess.run(
            [python, "-c", _IMPORT, *modules],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd="/",
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f} s", time.perf_counter() - start
    took = time.perf_counter() - start
    if proc.returncode == 0:
        return True, "", took
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return False, (lines[-1] if lines else f"exit {proc.returncode}"), took


def static_of(doc: dict[str, Any], name: str, version: str) -> tuple[str, str, list[str]]:
    """The static verdict of importing one distribution: (status, first explanation, features that will
    not load) from the units of that distribution and the set verdicts about it."""
    from abiprobe.model.verdict import STATUS_ORDER

    label = f"{name} {version}"
    verdicts = [v for v in doc["set_verdicts"] if v.get("subject") == label]
    verdicts += [
        v
        for u in doc["units"]
        if u["dist"] == label and u.get("timing") not in ("first_use", "optional")
        for v in u["verdicts"]
    ]
    bad = sorted((v for v in verdicts if v["status"] != "ok"), key=lambda v: -STATUS_ORDER[v["status"]])
    status = bad[0]["status"] if bad else "ok"
    features = [f["path"] for f in doc.get("features", []) if f["dist"] == label]
    return status, (bad[0]["explanation"] if bad else ""), features


def _cell(text: str, limit: int = 140) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the environment's interpreter")
    parser.add_argument("--arch", default="sm90")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per real import")
    parser.add_argument("--deps", type=Path, default=None, help="directory holding abiprobe's dependencies")
    parser.add_argument("--out", type=Path, help="also write rows.json and table.md here")
    args = parser.parse_args(argv)
    deps = args.deps or (Path("/tmp/abiprobe-deps") if Path("/tmp/abiprobe-deps").is_dir() else None)
    sys.path[:0] = [str(REPO), *([str(deps)] if deps else [])]
    started = time.perf_counter()
    code, doc = static_check(args.python, args.arch, deps)
    static_s = time.perf_counter() - started
    rows: list[dict[str, Any]] = []
    for name, version, tops in native_distributions(args.python):
        status, why, features = static_of(doc, name, version)
        ok, error, took = real_import(args.python, tops, args.timeout) if tops else (True, "", 0.0)
        predicted = _LOADS.get(status, "fails" if status in ("fail", "system") else "unknown")
        agree = "?" if predicted == "unknown" else ("yes" if (predicted == "loads") == ok else "**no**")
        real = "ok" if ok else error
        row = {"distribution": f"{name} {version}", "modules": list(tops), "static": status, "why": why}
        rows.append({**row, "features": features, "real": real, "import_s": round(took, 2), "agree": agree})
    lines = [
        f"`check --installed --all --arch {args.arch}`: exit {code}, "
        f"import_status {doc.get('import_status')}, profile {doc.get('profile')}, {static_s:.1f} s; "
        f"{len(rows)} distributions with native code",
        "",
        "| distribution | static verdict | real import | agree |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        static = r["static"] + (f": {r['why']}" if r["why"] else "")
        if r["features"]:
            static += f" (features that will not load: {', '.join(r['features'])})"
        lines.append(f"| {r['distribution']} | {_cell(static)} | {_cell(r['real'])} | {r['agree']} |")
    agreed = sum(r["agree"] == "yes" for r in rows)
    lines += ["", f"agree {agreed}, disagree {sum(r['agree'] == '**no**' for r in rows)}, "
              f"not known {sum(r['agree'] == '?' for r in rows)}"]  # fmt: skip
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table.md").write_text(table + "\n")
        (args.out / "rows.json").write_text(json.dumps({"check_exit": code, "rows": rows}, indent=1) + "\n")
        (args.out / "check.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0 if all(r["agree"] != "**no**" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
