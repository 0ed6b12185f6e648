"""The unit planner follows calls with their arguments: a call run once with given arguments is not run
again, except one cut short by a recursive call (called from elsewhere, that call runs in full)."""

from __future__ import annotations

from pathlib import Path

from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.wheelbuild import build_wheel

from abiprobe.analyze.layout import Layout
from abiprobe.analyze.units import plan_units
from abiprobe.binary.wheel import wheel_facts_from_path

# at import: a("libtop.so") loads libtop.so and calls b(), which calls a("libinner.so") while a is still
# running (left out: a recursion); then b() is called again from the top level, with a no longer
# running, so a("libinner.so") runs and loads libinner.so at import too (not only on first use)
RECURSIVE = b"""import ctypes
import os

_HERE = os.path.dirname(__file__)


def a(name):
    ctypes.CDLL(os.path.join(_HERE, name))
    b()


def b():
    a("libinner.so")


a("libtop.so")
b()
"""

# the same call with the same arguments from two places, and with other arguments from a third: each
# library is a unit once, where the first call loads it
REPEATED = b"""import ctypes
import os

_HERE = os.path.dirname(__file__)


def load(name):
    ctypes.CDLL(os.path.join(_HERE, name))


def first():
    load("libone.so")


def second():
    load("libone.so")
    load("libtwo.so")


first()
second()
"""


def _plan(tmp: Path, name: str, source: bytes, libs: tuple[str, ...]) -> list[tuple[str, str, str]]:
    files: dict[str, bytes | Path] = {f"{name}/__init__.py": source}
    for lib in libs:
        files[f"{name}/{lib}"] = build_shared(
            tmp / "libs", lib, f"int {lib.split('.')[0]}_fn(void) {{ return 1; }}\n"
        )
    wheel = build_wheel(tmp / "wheels", name, "1.0", files)
    facts = wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)
    return [(u.path, u.timing, u.where) for u in plan_units(Layout([facts]), [facts])]


def test_a_call_cut_short_by_recursion_runs_in_full_when_called_again(tmp_path: Path) -> None:
    # GIVEN a package whose second call of b reaches a with arguments the first left out (a recursion)
    units = _plan(tmp_path, "recur", RECURSIVE, ("libtop.so", "libinner.so"))
    # THEN both libraries load at import: the cut-short run of b was not taken as done
    assert units == [
        ("recur/libtop.so", "import", "recur/__init__.py line 8"),
        ("recur/libinner.so", "import", "recur/__init__.py line 8"),
    ]


def test_a_call_run_before_with_the_same_arguments_adds_nothing(tmp_path: Path) -> None:
    # GIVEN load("libone.so") called from two functions, and load("libtwo.so") from the second
    units = _plan(tmp_path, "rep", REPEATED, ("libone.so", "libtwo.so"))
    # THEN each library is one unit at import, from the line that loads it
    assert units == [
        ("rep/libone.so", "import", "rep/__init__.py line 8"),
        ("rep/libtwo.so", "import", "rep/__init__.py line 8"),
    ]
