"""Issue 26's corpus: ``abiprobe check`` on packages that load native code their own way, vs real loads.

One command fills the table of docs/live-results.md ("Packages that load native code their own way")::

    env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null .venv/bin/python bench/live_corpus.py \\
        --work /var/tmp/corpus26/work --out /var/tmp/corpus26/work/after.json

For each set of bench/corpus26.toml (torch==T PKG==V, the torch build's CUDA): lock ``torch==T`` with
``PKG==V`` for CPython 3.12 / manylinux_2_28_x86_64 (``uv pip compile``; ``PKG`` without its dependencies
when they conflict with that torch), download the exact wheels (sha256-checked, reused), then

* **user**: ``abiprobe check torch==T PKG==V --cuda C --arch sm90 --python 3.12 --platform
  manylinux_2_28_x86_64 --json``, typed as a user types it (a scratch copy of the committed cache);
  with ``--bare PYTHON``: ``abiprobe check torch==T PKG==V --cuda C --json`` run by PYTHON's abiprobe,
  so the target is this host and that Python;
* **files**: the same check on the downloaded wheel files (in process, as bench/live_predictions.py does),
  again with this host's libraries added when a missing soname is one this host has;
* **real**: a venv with exactly those wheels, a stub libcuda.so.1, ``import torch``, ``import MODULE``
  and the package's first-use loads, every ``ctypes.CDLL`` and extension load recorded
  (bench/real_load.py).

``--render FILE`` prints the table of an earlier ``--out`` file; ``--before FILE`` adds its verdicts as
the "before" column.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import live_predictions as lp  # noqa: E402

CORPUS = ROOT / "bench" / "corpus26.toml"
# --bare PYTHON: type the check as issue 26 does (``--cuda`` alone), run by PYTHON's abiprobe
BARE: list[str] = []
RUNNER = ROOT / "bench" / "real_load.py"
ARCH = "sm90"
PY312 = next(iter(sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))), Path("python3.12"))
# other libraries of a GPU host's driver (libcuda.so.1 and libnvidia-ml.so.1 are stubbed): a package
# probing for them is not loading a library of its own, and on the CUDA target they are there
DRIVER = re.compile(r"^(libcuda\.so|libnvcuvid|libnvidia-(?!ml))")
# how a package words a library it could not find or load when it raises its own error (no failed dlopen)
LOADISH = re.compile(r"shared object|\.so\b|cannot open|could not load", re.I)
LOADER_CHECKS = ("sonames", "symbols", "symbol_versions", "tags", "files")


@dataclass(frozen=True)
class CorpusSet:
    torch: str
    package: str
    cuda: str
    module: str
    patterns: tuple[int, ...]
    first_use: tuple[tuple[str, str], ...] = ()
    tolerate: str = ""
    notes: str = ""
    also: tuple[str, ...] = ()  # more requirements a user names beside the package (a meta package)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"torch=={self.torch} + {self.package} (CUDA {self.cuda})"

    @property
    def dist(self) -> str:
        return self.package.split("==")[0]


def load_corpus(path: Path) -> list[CorpusSet]:
    doc = tomllib.loads(path.read_text())
    out = []
    for s in doc["set"]:
        out.append(
            CorpusSet(
                torch=s["torch"],
                package=s["package"],
                cuda=s["cuda"],
                module=s["module"],
                patterns=tuple(s.get("patterns", [])),
                first_use=tuple((a, b) for a, b in s.get("first_use", [])),
                tolerate=s.get("tolerate", ""),
                also=tuple(s.get("also", [])),
                notes=s.get("notes", ""),
            )
        )
    return out


def lock_set(s: CorpusSet, work: Path) -> tuple[list[lp.Pin], bool]:
    """The torch release's lock with the package (and its own requirements); (pins, package locked alone)."""
    try:
        return lp.lock("\n".join([f"torch=={s.torch}", s.package, *s.also]), work), False
    except subprocess.CalledProcessError:
        torch = lp.lock(f"torch=={s.torch}", work)
        return torch + lp.lock("\n".join([s.package, *s.also]), work, no_deps=True), True


def user_check(s: CorpusSet, work: Path, no_deps: bool) -> tuple[int, dict[str, Any], float, str]:
    """``abiprobe check torch==T PKG==V --cuda C ...`` as a user types it, on a scratch cache."""
    cache = work / "cache"
    if not cache.exists():
        shutil.copytree(ROOT / "wheel_index_cache", cache)
    python = BARE[0] if BARE else sys.executable
    argv = [python, "-m", "abiprobe", "check", f"torch=={s.torch}", s.package, *s.also]
    argv += ["--cuda", s.cuda]
    if not BARE:  # --bare: the target is this host, its Python the one that runs abiprobe
        argv += ["--arch", ARCH, "--python", lp.PYTHON, "--platform", "manylinux_2_28_x86_64"]
    argv += ["--cache-dir", str(cache), "--json", "-qq"] + (["--no-deps"] if no_deps else [])
    return lp.run_json(argv)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.split(" ")[0]).lower()


def headline(doc: dict[str, Any], rc: int, dist: str = "") -> dict[str, Any]:
    """abiprobe's answer in the table's terms: status, exit, load verdict at import, first message."""
    if not doc:
        return {"status": "error", "exit": rc, "load": "error", "first": "no analysis", "units": 0}
    units = doc.get("units", [])
    mine = [u for u in units if _norm(u.get("dist", "")) == _norm(dist)]
    failing = [u for u in units if u.get("status") in ("fail", "unknown")]
    order = {"import": 0, "unknown": 1, "first_use": 2}
    failing.sort(key=lambda u: (0 if u.get("selected") is not False else 1, order.get(u.get("timing"), 3)))
    first = ""
    for u in failing:
        msg = u.get("loader_message") or {}
        if msg.get("text"):
            first = f"{u['path']} ({u.get('timing')}): {msg['text']}"
            break
    if not first:
        _, first = lp.static_summary(doc)
    at_import = [u for u in failing if u.get("timing") == "import" and u.get("selected") is not False]
    checks = doc.get("checks", {})
    if "import_status" in doc:  # the headline follows importing; features are what fails on first use
        said = doc["import_status"]
        load = {"fail": "fail", "system": "fail", "unknown": "unknown"}.get(said, "ok")
        if load == "ok" and doc.get("features"):
            load = "fail (first use)"
    else:  # documents of abiprobe before the import-first headline
        load = "fail" if any(checks.get(c) == "fail" for c in LOADER_CHECKS) else "ok"
        if load == "fail" and not at_import and failing:
            load = "fail (first use)" if all(u.get("timing") == "first_use" for u in failing) else "fail"
        if load == "ok" and any(checks.get(c) == "unknown" for c in LOADER_CHECKS):
            load = "unknown"
    judged = sorted({u["path"] for u in mine})
    rows = [[u["path"], u.get("timing"), u.get("status"), u.get("where")] for u in mine]
    later = [u for u in mine if u.get("timing") != "import" and u.get("status") in ("fail", "unknown")]
    return {"status": doc.get("status", "?"), "exit": rc, "load": load, "first": first, "units": len(judged),
            "unit_paths": judged[:40], "first_use_flagged": bool(later),
            "unit_rows": rows}  # fmt: skip


def scratch(s: CorpusSet, work: Path) -> Path:
    """This set's own directory for its venv, stub and home (sets of two runs may go at once)."""
    d = work / "sets" / re.sub(r"[^A-Za-z0-9]+", "_", f"{s.torch}_{s.package}")
    d.mkdir(parents=True, exist_ok=True)
    return d


def venv_for(files: list[str], work: Path, python: str) -> Path:
    """A fresh venv with exactly ``files`` installed (offline, no resolution)."""
    venv = work / "venv"
    if venv.exists():
        shutil.rmtree(venv)
    env = lp.uv_env(work.parent.parent)
    subprocess.run(["uv", "venv", "-q", "--python", python, str(venv)], check=True, env=env)
    argv = ["uv", "pip", "install", "-q", "--offline", "--no-deps", "--python", str(venv / "bin" / "python")]
    subprocess.run(argv + files, check=True, env=env)
    return venv


NVML = "libnvidia-ml.so.1"
NVML_ERROR_DRIVER_NOT_LOADED = 9


def stub_dir(files: list[str], work: Path) -> Path:
    """abiprobe's libcuda.so.1 stub, and beside it a libnvidia-ml.so.1 (the driver's too, on the target)
    exporting every ``nvml*`` function the set's objects import, each answering "driver not loaded"."""
    from abiprobe.probe.stub import build_stub, driver_symbols

    facts = [lp._FACTS[f] for f in files if f in lp._FACTS]
    out = build_stub(work / "stub", driver_symbols(facts), 13000)
    names = {i.name for w in facts for e in w.elf if NVML in e.needed for i in e.imports}
    names = {n for n in names if n.startswith("nvml")} | {"nvmlInit", "nvmlInit_v2", "nvmlShutdown"}
    src = out / "libnvml_stub.c"
    src.write_text(
        "".join(f"int {n}(void) {{ return {NVML_ERROR_DRIVER_NOT_LOADED}; }}\n" for n in sorted(names))
    )
    cmd = ["cc", "-shared", "-fPIC", "-w", "-o", str(out / NVML), str(src), f"-Wl,-soname,{NVML}"]
    subprocess.run(cmd, check=True)
    return out


def real_load(s: CorpusSet, files: list[str], top: Path, python: str) -> dict[str, Any]:
    work = scratch(s, top)
    venv = venv_for(files, work, python)
    spec = work / "spec.json"
    spec.write_text(json.dumps({"module": s.module, "first_use": [list(x) for x in s.first_use]}))
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home),
           "LANG": "C.UTF-8", "LD_LIBRARY_PATH": str(stub_dir(files, work))}  # fmt: skip
    start = time.monotonic()
    proc = subprocess.run([str(venv / "bin" / "python"), str(RUNNER), str(spec)], capture_output=True,
                          text=True, env=env, timeout=600)  # fmt: skip
    took = time.monotonic() - start
    try:
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        doc = {"steps": [], "attempts": [], "crash": f"exit {proc.returncode}: {proc.stderr[-600:]}"}
    doc["seconds"] = round(took, 1)
    doc["stderr_tail"] = proc.stderr[-1500:]
    shutil.rmtree(venv)
    return doc


def outcome(s: CorpusSet, doc: dict[str, Any]) -> dict[str, Any]:
    """The real answer: does the import load what the package loads, and do the first-use loads."""
    steps = {st["phase"]: st for st in doc.get("steps", [])}
    site = "site-packages/"
    own = [a for a in doc.get("attempts", []) if a["phase"] != "torch"]
    tolerate = re.compile(s.tolerate) if s.tolerate else None

    def failed(phase: str) -> list[dict[str, Any]]:
        """Failed loads of the package's own files in ``phase``: a bare name is a candidate the package
        probes for (a try-list, an optional system library), and ``tolerate`` names its own candidates."""
        bad = [a for a in own if a["phase"] == phase and not a["ok"] and "/" in a["path"]]
        return [a for a in bad if not (tolerate and tolerate.search(a["path"]))]

    loaded = sorted({a["path"].split(site)[-1] for a in own if a["ok"] and site in a["path"]})
    if doc.get("crash"):
        return {"import": "crash", "first": doc["crash"], "first_use": [], "loaded": loaded}
    if not steps.get("torch", {}).get("ok"):
        return {"import": "torch fails", "first": "; ".join(steps.get("torch", {}).get("error", [])),
                "first_use": [], "loaded": loaded}  # fmt: skip
    imp = steps.get("import", {})
    bad = failed("import")
    if not imp.get("ok"):
        tried = bad or [a for a in own if a["phase"] == "import" and not (a["ok"] or DRIVER.match(a["path"]))]
        first = tried[0]["error"] if tried else (imp.get("error") or ["?"])[-1]
        verdict, why = "fail", f"{first[:300]} (raised: {(imp.get('error') or ['?'])[0][:120]})"
        if not tried and not any(message_key(e) or LOADISH.search(e) for e in imp.get("error", [])):
            verdict, why = "python error", (imp.get("error") or ["?"])[0][:300]
    elif bad:
        verdict, why = "fail (swallowed)", f"{bad[0]['path'].split(site)[-1]}: {bad[0]['error']}"
    else:
        verdict, why = "ok", ""
    uses = []
    for label, _ in s.first_use:
        st = steps.get(f"first_use:{label}")
        if st is None:
            continue
        lb = failed(f"first_use:{label}")
        msg = lb[0]["error"] if lb else (st["error"][-1] if st["error"] else "")
        uses.append({"label": label, "ok": st["ok"] and not lb, "message": msg[:600]})
    return {"import": verdict, "first": why[:900], "first_use": uses, "loaded": loaded}


_KEY = (
    re.compile(r"([\w.+-]+\.so[\w.]*): cannot open shared object file"),
    re.compile(r"undefined symbol: (\S+)"),
    re.compile(r"version `([^']+)' not found"),
)


def message_key(text: str) -> str | None:
    """What a loader line names: the missing soname, the undefined symbol or the missing version."""
    for pat in _KEY:
        if m := pat.search(text or ""):
            return m.group(1).rstrip(",;)")
    return None


def compare(static: dict[str, Any], real: dict[str, Any]) -> dict[str, Any]:
    real_fail = real["import"] not in ("ok", "python error")
    static_fail = static["load"] == "fail"
    agree = real_fail == static_fail and static["load"] != "unknown"
    if (
        real["import"] == "python error"
    ):  # the import fails in Python before or without a load: no loader question
        agree = None
    key = message_key(real["first"]) if real_fail else None
    exact = bool(key and key in static["first"]) if real_fail else None
    fu_real = [u for u in real["first_use"] if not u["ok"]]
    fu_caught = bool(fu_real) and (static_fail or bool(static.get("first_use_flagged")))
    return {"agree": agree, "real_fails": real_fail, "caught": real_fail and static_fail, "exact": exact,
            "first_use_real_fails": len(fu_real), "first_use_caught": fu_caught}  # fmt: skip


def run_set(s: CorpusSet, work: Path, python: str, stats: dict[str, Any]) -> dict[str, Any]:
    pins, alone = lock_set(s, work)
    files = []
    (work / "wheels").mkdir(exist_ok=True)
    t0 = time.monotonic()
    for pin in pins:
        path, got = lp.fetch(pin, work / "wheels")
        stats["bytes"] += got
        files.append(str(path))
    stats["download_s"] += time.monotonic() - t0
    # typed as a user types it, never --no-deps: a pin the package declares against that torch is the
    # check's own to judge (blocked), while torch's closure stays what a real install of torch brings
    rc_u, doc_u, sec_u, err_u = user_check(s, work, False)
    keep = scratch(s, work)
    (keep / "check-user.json").write_text(json.dumps(doc_u))
    user = headline(doc_u, rc_u, s.dist) | {"seconds": round(sec_u, 1), "stderr": err_u[-300:]}
    rc_f, doc_f, sec_f = lp.check(files, None, cuda=s.cuda, arch=ARCH)
    local = headline(doc_f, rc_f, s.dist) | {"seconds": round(sec_f, 1)}
    host_added: list[str] = []
    if lp.load_verdict(doc_f) == "fail" and (missing := lp.missing_sonames(doc_f)):
        profile = work / "host-profile.json"
        host_added = lp.host_profile(missing, profile)
        if host_added:
            rc_h, doc_h, _ = lp.check(files, profile, cuda=s.cuda, arch=ARCH)
            local = headline(doc_h, rc_h, s.dist) | {"seconds": round(sec_f, 1), "host_added": host_added}
            doc_f = doc_h
    (keep / "check-files.json").write_text(json.dumps(doc_f))
    raw = real_load(s, files, work, python)
    real = outcome(s, raw)
    return {
        "set": s.label,
        "patterns": list(s.patterns),
        "package_locked_alone": alone,
        "wheels": [Path(f).name for f in files],
        "user": user,
        "files": local,
        "real": real,
        "real_raw": {k: raw.get(k) for k in ("steps", "attempts", "seconds", "stderr_tail", "crash")},
        "vs_user": compare(user, real),
        "vs_files": compare(local, real),
    }


def recheck(stored: Path, corpus_file: Path, work: Path, only: list[str], out: Path | None) -> int:
    """The sets of an earlier run judged again as a user types them (``check`` only, nothing downloaded
    or imported): a change to abiprobe measured against the real loads that run recorded."""
    corpus = {s.label: s for s in load_corpus(corpus_file)}
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for row in json.loads(stored.read_text())["rows"]:
        s = corpus.get(row["set"])
        if s is None or (only and not any(o in s.label for o in only)):
            continue
        rc, doc, sec, err = user_check(s, work, False)
        user = headline(doc, rc, s.dist) | {"seconds": round(sec, 1), "stderr": err[-300:]}
        row = row | {"user": user, "vs_user": compare(user, row["real"])}
        rows.append(row)
        brief = {"set": s.label, "user": user["status"], "user_load": user["load"],
                 "real": row["real"]["import"], "agree": row["vs_user"]["agree"]}  # fmt: skip
        print(json.dumps(brief), flush=True)
    if out is not None:
        out.write_text(json.dumps({"rows": rows, "stats": {"rechecked": str(stored)}}, indent=1))
    print(summary(rows))
    return 0


def rescore(row: dict[str, Any], corpus: dict[str, CorpusSet], work: Path) -> dict[str, Any]:
    """A stored row judged again from its saved check documents and recorded loads (rules refined since)."""
    s = corpus.get(row["set"])
    if s is None:
        return row
    keep = work / "sets" / re.sub(r"[^A-Za-z0-9]+", "_", f"{s.torch}_{s.package}")
    for form in ("user", "files"):
        if (saved := keep / f"check-{form}.json").is_file():
            doc = json.loads(saved.read_text())
            row = row | {form: row[form] | headline(doc, row[form]["exit"], s.dist)}
    real = outcome(s, row["real_raw"])
    vs = {"vs_user": compare(row["user"], real), "vs_files": compare(row["files"], real)}
    return row | {"real": real} | vs


_SITE = re.compile(r"/\S*?/site-packages/")


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", _SITE.sub("<site-packages>/", text)).replace("|", "\\|")


def _static_cell(h: dict[str, Any], exit_code: bool) -> str:
    """A check's headline: status, exit, load verdict, units of the package, and the first failure."""
    text = f"**{h['status']}**" + (f" (exit {h['exit']})" if exit_code else "")
    text += f", load {h['load']}, {h['units']} units"
    if not h["first"].startswith("all load checks pass"):
        text += f": {h['first'][:260]}"
    if h.get("host_added"):
        text += f" (with this host's {', '.join(h['host_added'])})"
    return text


def markdown(rows: list[dict[str, Any]], before: dict[str, dict[str, Any]] | None = None) -> str:
    head = "| set | patterns | `check` as typed | `check` on the files | real load | agree (typed, files) |"
    if before is not None:
        head = head.replace("| `check` as typed", "| before (as typed) | `check` as typed")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        real = r["real"]
        user, files = _static_cell(r["user"], True), _static_cell(r["files"], False)
        rl = f"import **{real['import']}**" + (f": {real['first'][:260]}" if real["first"] else "")
        for fu in real["first_use"]:
            rl += f"<br>first use {fu['label']}: **{'ok' if fu['ok'] else 'fail'}**"
            rl += f": {fu['message'][:200]}" if not fu["ok"] else ""
        agree = " / ".join(
            ("n/a" if c["agree"] is None else "yes" if c["agree"] else "**NO**")
            + (", exact" if c["exact"] else "")
            for c in (r["vs_user"], r["vs_files"])
        )
        cells = [r["set"], ",".join(map(str, r["patterns"]))]
        if before is not None:
            b = before.get(r["set"], {}).get("user")
            cells.append(f"{b['status']} / load {b['load']}" if b else "-")
        cells += [user, files, rl, agree]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out.append("")
    out.append(summary(rows))
    return "\n".join(out)


def summary(rows: list[dict[str, Any]]) -> str:
    lines = []
    for form in ("vs_user", "vs_files"):
        comparable = [r for r in rows if r[form]["agree"] is not None]
        agree = sum(bool(r[form]["agree"]) for r in comparable)
        fails = [r for r in rows if r[form]["real_fails"]]
        caught = sum(r[form]["caught"] for r in fails)
        exact = sum(bool(r[form]["exact"]) for r in fails)
        fu = sum(r[form]["first_use_real_fails"] > 0 for r in rows)
        fu_caught = sum(bool(r[form].get("first_use_caught")) for r in rows)
        blind = sum(r[form[3:]]["units"] == 0 for r in rows)
        py = len(rows) - len(comparable)
        text = f"{form[3:]}: {agree} of {len(comparable)} sets agree ({py} more fail in Python, no load)"
        text += f"; {caught} of {len(fails)} real import failures"
        text += f" caught, first loader message exact on {exact}; {fu} sets fail on first use"
        text += f" ({fu_caught} of them flagged)"
        lines.append(f"{text}; {blind} sets judge no unit of the package")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/var/tmp/corpus26/work"), help="downloads (reused)")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="the sets (TOML)")
    ap.add_argument("--only", action="append", default=[], help="run only sets whose label has this text")
    ap.add_argument("--python", default=str(PY312), help="interpreter (CPython 3.12) for the real venvs")
    ap.add_argument("--out", type=Path, help="write rows and stats as JSON here")
    ap.add_argument("--render", type=Path, nargs="+", help="only print the table of JSON files --out wrote")
    ap.add_argument("--before", type=Path, help="with --render: an earlier --out file, the 'before' column")
    ap.add_argument(
        "--clean", action="store_true", help="delete the downloads and caches under --work at the end"
    )
    ap.add_argument(
        "--recheck", type=Path,
        help="an earlier --out file: judge its sets again as typed (the check only; its real loads kept)",
    )  # fmt: skip
    ap.add_argument(
        "--bare", metavar="PYTHON",
        help="type the check with --cuda alone (no --arch, --python, --platform), run by the abiprobe "
        "installed for PYTHON (CPython 3.12, as the real venvs): this host is the target",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if args.bare:
        BARE[:] = [args.bare]
    if args.recheck:
        return recheck(args.recheck, args.corpus, args.work.absolute(), args.only, args.out)
    if args.render:
        corpus = {s.label: s for s in load_corpus(args.corpus)}
        before = None
        if args.before:
            stored = json.loads(args.before.read_text())["rows"]  # its check documents are not --work's
            before = {r["set"]: rescore(r, corpus, args.before.parent / "no-such-work") for r in stored}
        merged: dict[str, dict[str, Any]] = {}
        for path in args.render:  # a later file's row replaces an earlier one's
            merged |= {r["set"]: r for r in json.loads(path.read_text())["rows"]}
        order = [s.label for s in corpus.values() if s.label in merged]
        order += [k for k in merged if k not in corpus]
        rows = [rescore(merged[k], corpus, args.work) for k in order]
        print(markdown(rows, before))
        return 0
    work = args.work.absolute()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("UV_CACHE_DIR", str(work / "uvcache"))
    sets = [s for s in load_corpus(args.corpus) if not args.only or any(o in s.label for o in args.only)]
    stats: dict[str, Any] = {"bytes": 0, "download_s": 0.0, "started": time.time()}
    rows: list[dict[str, Any]] = []
    for s in sets:
        t0 = time.monotonic()
        try:
            row = run_set(s, work, args.python, stats)
        except (subprocess.CalledProcessError, SystemExit, OSError) as e:
            print(json.dumps({"set": s.label, "error": str(e)[:400]}), flush=True)
            traceback.print_exc()
            continue
        row["seconds"] = round(time.monotonic() - t0, 1)
        rows.append(row)
        print(json.dumps({"set": row["set"], "user": row["user"]["status"], "user_load": row["user"]["load"],
                          "files_load": row["files"]["load"], "real": row["real"]["import"],
                          "agree": row["vs_user"]["agree"], "s": row["seconds"]}), flush=True)  # fmt: skip
        if args.out:
            stats["wall_s"] = round(time.time() - stats["started"], 1)
            args.out.write_text(json.dumps({"rows": rows, "stats": stats}, indent=1))
    print(markdown(rows))
    print(f"downloaded {stats['bytes'] / 1e9:.2f} GB in {stats['download_s']:.0f}s")
    if args.clean:
        for sub in ("wheels", "uvcache", "cache"):
            shutil.rmtree(work / sub, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
