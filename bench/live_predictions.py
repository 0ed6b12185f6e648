"""Static predictions vs real imports of real wheels from the default index (docs/live-results.md).

Run by hand on a host with network (several GB of downloads), e.g.::

    python bench/live_predictions.py --work /tmp/live --set torch==2.11.0:sglang-kernel==0.4.0 \
        --set torch==2.9.1:sgl-kernel==0.3.21 --out /tmp/live/table.json

For every set: resolve the torch release's complete runtime lock for CPython 3.12 / manylinux_2_28_x86_64
with ``uv pip compile`` (the kernel wheel is added without dependencies), download the exact wheels
(sha256-checked), run ``abiprobe check`` on the local files, then ``abiprobe probe`` on the same files, and
print one Markdown row per set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import httpx

from abiprobe.model.stack import default_stack

BUILT_IN_STACK = default_stack()

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PYTHON = "3.12"
PLATFORM = "x86_64-manylinux_2_28"


@dataclass(frozen=True)
class Pin:
    """One exact wheel of a lock: where to get it and the hash it must have."""

    name: str
    version: str
    url: str
    sha256: str
    size: int

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class LiveSet:
    torch: str  # "torch==2.11.0"
    kernel: str  # "sglang-kernel==0.4.0"

    @property
    def label(self) -> str:
        return f"{self.torch} + {self.kernel}"

    @property
    def kernel_module(self) -> str:
        return "sgl_kernel"


def uv_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("UV_CACHE_DIR", str(work / "uvcache"))
    return env


def lock(requirement: str, work: Path, no_deps: bool = False) -> list[Pin]:
    """The wheels ``uv pip compile`` picks for ``requirement`` on CPython 3.12, manylinux_2_28 x86_64."""
    stem = re.sub(r"[^A-Za-z0-9]+", "_", requirement.strip())
    req = work / f"{stem}.in"
    out = work / f"pylock.{stem}.toml"
    req.write_text(requirement + "\n")
    argv = ["uv", "pip", "compile", str(req), "--python-version", PYTHON, "--python-platform", PLATFORM]
    argv += ["--format", "pylock.toml", "-o", str(out), "-q"]
    if no_deps:
        argv.append("--no-deps")
    subprocess.run(argv, check=True, env=uv_env(work))
    doc = tomllib.loads(out.read_text())
    pins = []
    for pkg in doc.get("packages", []):
        wheels = sorted(pkg.get("wheels", []), key=_wheel_preference)
        if not wheels:
            raise SystemExit(f"{pkg['name']}: no wheel for the platform")
        w = wheels[0]
        pins.append(Pin(pkg["name"], pkg["version"], w["url"], w["hashes"]["sha256"], int(w.get("size", 0))))
    return pins


def _wheel_preference(wheel: dict[str, Any]) -> tuple[int, int]:
    """pip's order among a release's wheels for CPython 3.12 on Linux: a platform wheel before a pure one,
    cp312 before abi3."""
    name = wheel["url"].rsplit("/", 1)[-1]
    return (name.endswith("-none-any.whl"), "-cp312-" not in name)


def fetch(pin: Pin, dest: Path) -> tuple[Path, int]:
    """Download ``pin`` into ``dest`` unless already there; returns (path, bytes downloaded now)."""
    path = dest / pin.filename
    if path.is_file() and (pin.size == 0 or path.stat().st_size == pin.size):
        return path, 0
    part = path.with_suffix(".part")
    digest = hashlib.sha256()
    got = 0
    with httpx.stream("GET", pin.url, follow_redirects=True, timeout=60.0) as resp:
        resp.raise_for_status()
        with open(part, "wb") as out:
            for chunk in resp.iter_bytes(1 << 20):
                digest.update(chunk)
                out.write(chunk)
                got += len(chunk)
    if digest.hexdigest() != pin.sha256:
        part.unlink()
        raise SystemExit(f"{pin.filename}: sha256 mismatch")
    part.rename(path)
    return path, got


_FACTS: dict[str, Any] = {}


def check(
    files: list[str], profile: Path | None, cuda: str = "13.0", arch: str = "sm90"
) -> tuple[int, dict[str, Any], float]:
    """What ``abiprobe check FILES... --cuda CUDA --arch ARCH --python 3.12 --platform
    manylinux_2_28_x86_64 [--profile P] --json`` prints and exits with, in process: the facts of a torch
    layer's wheels are read once and shared by every set of the run."""
    from abiprobe.analyze.analysis import analyze_set
    from abiprobe.analyze.profiles import builtin_profile, load_profile
    from abiprobe.binary.wheel import wheel_facts_from_path
    from abiprobe.commands.check import exit_code
    from abiprobe.model.stack import default_stack
    from abiprobe.model.target import Target

    start = time.monotonic()
    for stale in set(_FACTS) - set(files):
        del _FACTS[stale]
    for f in files:
        if f not in _FACTS:
            _FACTS[f] = wheel_facts_from_path(Path(f), unread_sources=default_stack().unread_sources())
    target = Target.parse(cuda=cuda, arch=arch, python="3.12", platform="manylinux_2_28_x86_64")
    prof = builtin_profile("manylinux_2_28_x86_64") if profile is None else load_profile(profile)
    analysis = analyze_set([_FACTS[f] for f in files], target, prof, stack=BUILT_IN_STACK)
    return exit_code(analysis), analysis.to_json(), time.monotonic() - start


def run_json(argv: list[str]) -> tuple[int, dict[str, Any], float, str]:
    start = time.monotonic()
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    took = time.monotonic() - start
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        doc = {}
    return proc.returncode, doc, took, proc.stderr.strip()[-400:]


def static_summary(doc: dict[str, Any]) -> tuple[str, str]:
    """(ok/fail, one line naming the first failing verdict) of an ``abiprobe check --json`` document."""
    if not doc:
        return "error", "no analysis"
    verdicts = [(1, v) for v in doc.get("set_verdicts", [])]
    for unit in doc.get("units", []):
        rank = 0 if unit.get("selected") else 2  # the extension the package picks for the GPU first
        verdicts.extend((rank, v) for v in unit.get("verdicts", []))
    fails = [(rank, v) for rank, v in verdicts if v["status"] == "fail"]
    if not fails:
        warns = [v for _, v in verdicts if v["status"] == "warn" and v["check"] == "gpu_arch"]
        extra = f"; warn: gpu_arch: {warns[0]['subject']}: {warns[0]['explanation']}" if warns else ""
        return "ok", f"all load checks pass{extra}"
    order = ("sonames", "symbols", "symbol_versions", "driver", "tags", "requires", "gpu_arch")
    fails.sort(key=lambda rv: (rv[0], order.index(rv[1]["check"]) if rv[1]["check"] in order else 9))
    v = fails[0][1]
    more = f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""
    return "fail", f"{v['check']}: {v['subject']}: {v['explanation']}{more}"


def load_verdict(doc: dict[str, Any]) -> str:
    """ok/fail from the checks a real import can see (not gpu_arch, not Requires-Dist metadata)."""
    checks = doc.get("checks", {})
    seen = ("sonames", "symbols", "symbol_versions", "tags", "files")
    return "fail" if any(checks.get(c) == "fail" for c in seen) else "ok"


def missing_sonames(doc: dict[str, Any]) -> list[str]:
    """Sonames a failing ``sonames`` verdict of the analysis could not find anywhere."""
    found: set[str] = set()
    for unit in doc.get("units", []):
        for v in unit.get("verdicts", []):
            if v["check"] == "sonames" and v["status"] == "fail":
                found.update(m["soname"] for m in v.get("evidence", {}).get("missing", []))
    return sorted(found)


def host_profile(sonames: list[str], path: Path) -> list[str]:
    """Write a profile: the target's plus those of ``sonames`` this host has (read from their bytes).

    The probe runs on this host, so its loader finds them; the static check against this profile is
    what the probe can confirm or refute. Returns the sonames added."""
    from abiprobe.host.ldconfig import ldconfig_paths, read_library

    add: dict[str, Any] = {}
    for soname, lib_path in ldconfig_paths(sonames).items():
        lib = read_library(soname, lib_path)
        entry: dict[str, Any] = {"versions": sorted(lib.versions)}
        if lib.exports is not None:
            entry["exports"] = {k: sorted(v) for k, v in sorted(lib.exports.items())}
        add[soname] = entry
    doc = {"format": "abiprobe-profile/1", "base": "manylinux_2_28_x86_64", "name": "manylinux_2_28+host"}
    doc["add"] = add
    path.write_text(json.dumps(doc))
    return sorted(add)


def run_set(s: LiveSet, work: Path, python: str, stats: dict[str, Any]) -> dict[str, Any]:
    wheels_dir = work / "wheels"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    pins = lock(s.torch, work) + lock(s.kernel, work, no_deps=True)
    files = []
    t0 = time.monotonic()
    for pin in pins:
        path, got = fetch(pin, wheels_dir)
        stats["bytes"] += got
        files.append(str(path))
    stats["download_s"] += time.monotonic() - t0
    abiprobe = [sys.executable, "-m", "abiprobe"]  # run from any directory: ROOT goes on PYTHONPATH
    rc, check_doc, check_s = check(files, None)
    key = hashlib.sha256(" ".join(sorted(files)).encode()).hexdigest()[:16]
    (work / f"check-{key}.json").write_text(json.dumps(check_doc))
    static, why = static_summary(check_doc)
    expect = load_verdict(check_doc) if check_doc else "ok"
    host_added: list[str] = []
    host_static, host_why = static, why
    if expect == "fail" and (missing := missing_sonames(check_doc)):
        profile = work / f"profile-{len(files)}-{Path(files[-1]).stem}.json"
        host_added = host_profile(missing, profile)
        if host_added:
            _, host_doc, _ = check(files, profile)
            host_static, host_why = static_summary(host_doc)
            expect = load_verdict(host_doc) if host_doc else expect
    probe_argv = [
        *abiprobe,
        "probe",
        *files,
        "--python",
        python,
        "--import-order",
        f"torch,{s.kernel_module}",
    ]
    probe_argv += ["--json", "--expect", expect, "--timeout", "300"]
    saved = work / f"probe-{hashlib.sha256(' '.join(sorted(files)).encode()).hexdigest()[:16]}.json"
    if saved.is_file():
        prc, probe_doc, probe_s, probe_err = 0, json.loads(saved.read_text()), 0.0, ""
    else:
        prc, probe_doc, probe_s, probe_err = run_json(probe_argv)
        if probe_doc:
            saved.write_text(json.dumps(probe_doc))
    results = probe_doc.get("results", []) if probe_doc else []
    result = results[0] if results else {}
    outcome = result.get("outcome", "error") if result else "error"
    message = result.get("message", probe_err) if result else probe_err
    agree = (expect == "ok") == (outcome == "ok")
    return {
        "set": s.label,
        "wheels": [Path(f).name for f in files],
        "check_exit": rc,
        "check_seconds": round(check_s, 1),
        "static": static,
        "static_load": expect,
        "static_why": why,
        "checks": check_doc.get("checks", {}),
        "host_libraries_added": host_added,
        "host_static": host_static,
        "host_static_why": host_why,
        "probe_exit": prc,
        "probe_seconds": round(probe_s, 1),
        "probe_outcome": outcome,
        "probe_message": message,
        "probe_stubbed": bool(result.get("stubbed")) if result else False,
        "probe_detail": result.get("detail", {}) if result else {},
        "probe_loaded_kernel": [x for x in result.get("loaded", []) if x.startswith("sgl_kernel/")],
        "agree": agree,
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    out = ["| set | static verdict | probe outcome | agree? |", "|---|---|---|---|"]
    for r in rows:
        static = f"**{r['static']}**: {r['static_why']}"
        if r["host_libraries_added"]:
            added = ", ".join(r["host_libraries_added"])
            static += f"<br>with this host's {added}: **{r['host_static']}**: {r['host_static_why']}"
        probe = f"**{r['probe_outcome']}**" + (f": {r['probe_message']}" if r["probe_message"] else "")
        if r.get("probe_detail", {}).get("soname"):
            probe += f" (loader: {r['probe_detail']['soname']} not found)"
        if r.get("probe_loaded_kernel"):
            probe += f"; loaded {', '.join(r['probe_loaded_kernel'])}"
        cells = [r["set"], static, probe, "yes" if r["agree"] else "**NO**"]
        out.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(out)


def parse_set(text: str) -> LiveSet:
    torch, sep, kernel = text.partition(":")
    if not sep or "==" not in torch or "==" not in kernel:
        raise argparse.ArgumentTypeError(f"{text}: expected torch==X:KERNEL==Y")
    return LiveSet(torch, kernel)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("live-work"), help="downloads and locks (reused)")
    ap.add_argument("--set", dest="sets", type=parse_set, action="append", default=[])
    ap.add_argument("--python", default=PYTHON, help="interpreter (version or path) for the probe")
    ap.add_argument("--out", type=Path, help="write rows and stats as JSON here")
    ap.add_argument("--render", type=Path, help="only print the table of a JSON file --out wrote")
    args = ap.parse_args(argv)
    if args.render:
        print(markdown(json.loads(args.render.read_text())["rows"]))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    stats: dict[str, Any] = {"bytes": 0, "download_s": 0.0}
    rows = []
    for s in args.sets:
        row = run_set(s, args.work.absolute(), args.python, stats)
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("set", "static", "static_why", "probe_outcome", "agree")}))
        if args.out:
            args.out.write_text(json.dumps({"rows": rows, "stats": stats}, indent=2))
    print(markdown(rows))
    print(f"downloaded {stats['bytes'] / 1e9:.2f} GB in {stats['download_s']:.0f}s")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
