"""Stored verdicts are keyed by all the code that made them: editing any module on the verdict path in a
copy of the package makes a warm re-solve run its analyses again; editing a module off it does not."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_argv, solve_stack
from support.stacks import PY_TAG

import abiprobe
from abiprobe.solve import codedigest
from abiprobe.solve.codedigest import import_closure
from abiprobe.solve.evaluate import VERDICT_ENTRY

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
# The modules the issue found missing from the old hand list: the closure must hold each.
ONCE_MISSED = ("abiprobe.model.cxxnames", "abiprobe.model.facts", "abiprobe.binary.wheel_members",
               "abiprobe.model.requirements", "abiprobe.model.target",
               "abiprobe.model.candidate")  # fmt: skip
OFF_PATH = ("abiprobe.report.ticket_html", "abiprobe.commands.probe", "abiprobe.binary.wheel")

# Runs inside the copy: one warm solve per edited module (the digest's memo cleared, as a new process
# would have it), printing how many analyses each solve ran.
_SCRIPT = """
import contextlib, io, json, sys
from pathlib import Path
from abiprobe.solve import codedigest
from abiprobe.cli import main
argv, out, modules = json.loads(sys.argv[1])
def solve():
    codedigest.code_digest.cache_clear()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0
    return json.loads(Path(out).read_text())["stats"]["analyses_run"]
runs = {"(cold)": solve(), "(none)": solve()}
for name in modules:
    path = Path(codedigest.__file__).parent.parent.joinpath(*name.split(".")[1:])
    path = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
    before = path.read_bytes()
    path.write_bytes(before + b"\\n# edited\\n")
    runs[name] = solve()
    path.write_bytes(before)
print(json.dumps(runs))
"""


def test_the_verdict_path_is_the_import_closure_python_really_loads(tmp_path: Path) -> None:
    # GIVEN the static closure of the analysis entry point
    closure = set(import_closure((VERDICT_ENTRY,)))
    # WHEN a fresh interpreter imports the entry point
    code = f"import sys, {VERDICT_ENTRY}; print(sorted(m for m in sys.modules if m.startswith('abiprobe')))"
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        .stdout.strip()
        .replace("'", '"')
    )
    # THEN every abiprobe module it loaded is in the closure, and the ones once missed are too
    assert set(loaded) <= closure
    assert set(ONCE_MISSED) <= closure
    assert not set(OFF_PATH) & closure


def test_editing_any_module_on_the_verdict_path_runs_the_analyses_again(tmp_path: Path) -> None:
    # GIVEN a copy of the package and the fixture stack solved once into a cache
    copy = tmp_path / "pkg"
    shutil.copytree(
        Path(abiprobe.__file__).parent, copy / "abiprobe", ignore=shutil.ignore_patterns("__pycache__")
    )
    modules = [*import_closure((VERDICT_ENTRY,), copy / "abiprobe"), *OFF_PATH]
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        serve(server, stack)
        argv = solve_argv(server.index_url, tmp_path / "cache", tmp_path / "m", "--json")
        args = json.dumps([argv, str(tmp_path / "m" / f"{NAME}.json"), modules])
        # WHEN each module in turn gets one more line and the stack is solved again
        proc = subprocess.run(
            [sys.executable, "-c", _SCRIPT, args],
            capture_output=True,
            text=True,
            cwd=copy,
            env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
            timeout=600,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = json.loads(proc.stdout.strip().splitlines()[-1])
    # THEN an unedited re-solve runs nothing, each edit on the path runs analyses again, others do not
    assert (runs.pop("(cold)") > 0, runs.pop("(none)")) == (True, 0)
    assert {m: n for m, n in runs.items() if m not in OFF_PATH and n == 0} == {}
    assert {m: runs[m] for m in OFF_PATH} == dict.fromkeys(OFF_PATH, 0)


def test_the_import_patterns_find_every_import_the_parser_finds_in_every_module() -> None:
    # GIVEN every module of the package, and sources written to trip a line-based reader
    root = Path(abiprobe.__file__).parent
    tricky = {
        "abiprobe.solve.x": "if True: import abiprobe.model.facts\n"
        "from . import (\n    matrix,  # (\n    lock)\n",
        "abiprobe.analyze.y": "x = 1; from abiprobe.model \\\n import target\n"
        "import_module('abiprobe.errors')",
    }
    modules = {p: p.relative_to(root).with_suffix("").parts for p in root.rglob("*.py")}
    sources = {
        ".".join(("abiprobe", *parts)).removesuffix(".__init__"): p.read_text()
        for p, parts in modules.items()
    }
    assert len(sources) > 100
    # WHEN both readers list what each may import
    for name, source in {**sources, **tricky}.items():
        parsed = codedigest._parsed_imports(name, source, root)
        # THEN the patterns miss nothing (they may find more: a name in a docstring only adds a file)
        assert parsed <= codedigest._imports(name, source, root), name
    assert codedigest._imports("abiprobe.solve.x", tricky["abiprobe.solve.x"], root) >= {
        "abiprobe.model.facts", "abiprobe.solve.matrix", "abiprobe.solve.lock"
    }  # fmt: skip
