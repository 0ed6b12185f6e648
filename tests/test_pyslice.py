"""The programs kept for a load's path the scanner could not follow (abiprobe.binary.pyslice): what of
the module and of the enclosing function they take, and when they take nothing."""

from __future__ import annotations

import ast

import pytest

from abiprobe.binary.pyinterp import bound_names
from abiprobe.binary.pyslice import TEST_NAME, path_program, setup_program

MODULE = """
import os
def _find():
    return os.path.join("pkg", "libx.so")
"""


def _program(function: str) -> str:
    """The program for the argument of the ``CDLL(...)`` in ``function`` (a def of its own), with the
    function's statements before the one that holds it."""
    (fn,) = ast.parse(function).body
    assert isinstance(fn, ast.FunctionDef)
    at, call = next(
        (i, n)
        for i, s in enumerate(fn.body)
        for n in ast.walk(s)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "CDLL"
    )
    prefix = fn.body[:at]
    params = {a.arg for a in fn.args.args}
    local = params | {n for s in fn.body for n in bound_names(s)}
    return path_program(call.args[0], ast.parse(MODULE).body, {}, local, prefix)


def test_names_the_function_computes_before_the_load_are_computed_by_the_program() -> None:
    program = _program("def load():\n    p = _find()\n    name = str(p)\n    CDLL(name)\n")
    # THEN the module's function and the function's two statements, in order, end in the path
    assert program.splitlines()[-3:] == ["p = _find()", "name = str(p)", f"{TEST_NAME} = name"]
    assert "def _find" in program
    # AND it computes what Python computes
    scope: dict[str, object] = {}
    exec(program, scope)
    assert scope[TEST_NAME] == "pkg/libx.so"


def test_a_list_the_function_changes_in_place_before_the_load_is_computed_with_its_change() -> None:
    # GIVEN a list built, then appended to and extended by plain statements before the load
    program = _program(
        "def load():\n    p = [_find()]\n    p.append('other')\n    p += ['last']\n    CDLL(p[-2])\n"
    )
    # THEN the program runs each statement in order, so it computes what Python computes
    assert program.splitlines()[-4:-1] == ["p = [_find()]", "p.append('other')", "p += ['last']"]
    scope: dict[str, object] = {}
    exec(program, scope)
    assert scope[TEST_NAME] == "other"


@pytest.mark.parametrize(
    "function",
    [
        "def load(where):\n    p = where + '/libx.so'\n    CDLL(p)\n",  # a parameter
        "def load():\n    if cond():\n        p = _find()\n    CDLL(p)\n",  # bound in a branch
        "def load():\n    CDLL(p)\n    p = _find()\n",  # bound only after the load
    ],
    ids=["parameter", "branch", "later"],
)
def test_a_name_the_function_does_not_compute_plainly_before_the_load_gives_no_program(function: str) -> None:
    assert _program(function) == ""


def test_a_module_list_appended_to_after_its_assignment_keeps_the_append() -> None:
    # GIVEN a module whose list is assigned, then appended to (its value not computed at facts time)
    earlier = ast.parse("LIBS = ['liba.so']\nLIBS.append('libb.so')\n").body
    test = ast.parse("LIBS[-1]", mode="eval").body
    program = setup_program(test, earlier, {}, as_bool=False)
    # THEN the program runs the append after the assignment, and computes what Python computes
    scope: dict[str, object] = {}
    exec(program, scope)
    assert scope[TEST_NAME] == "libb.so" and scope["LIBS"] == ["liba.so", "libb.so"]
