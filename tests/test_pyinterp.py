"""The bounded interpreter of a package's plain Python (abiprobe.binary.pyinterp): what it computes, and
that anything past what it follows is Unknown, never a guess, a hang or a read outside the wheel."""

from __future__ import annotations

import ast
import types

import pytest

from abiprobe.binary.pyinterp import Interpreter, Opaque, Unknown, bound_names, changed_names


def _run(source: str, **kw: object) -> dict[str, object]:
    interp = Interpreter("pkg/__init__.py", **kw)  # type: ignore[arg-type]
    for stmt in ast.parse(source).body:
        interp.step(stmt)
    return interp.env


def test_a_version_guard_is_computed_with_the_values_given() -> None:
    # GIVEN torchao-like code: its own parser, a list of pairs, a loop with break
    source = """
import re
import torch
def parse(v):
    m = re.match(r"(\\d+)\\.(\\d+)\\.(\\d+)", v)
    if m:
        return [int(x) for x in m.groups()]
    raise ValueError(v)
skip = True
for mine, theirs in [(parse("1.0.0"), parse("2.9.0"))]:
    if parse(torch.__version__) == theirs:
        skip = False
        break
"""
    values = {"torch.__version__": "2.9.0+cu130"}
    # THEN skip is what the code computes for the torch given, and unknown with none given
    assert _run(source, lookup=values.__getitem__)["skip"] is False
    assert _run(source, lookup={"torch.__version__": "2.8.0"}.__getitem__)["skip"] is True
    assert isinstance(_run(source)["skip"], Opaque)


def test_a_data_file_of_the_wheel_is_read_and_one_it_lacks_raises_as_python_would() -> None:
    source = """
import json, os
def info(t):
    try:
        with open(os.path.join(os.path.dirname(__file__), f"{t}.json")) as f:
            return json.load(f)
    except Exception:
        return {}
got = {t: info(t) for t in ["a", "b"]}
"""
    files = {"pkg/a.json": b'{"libs": ["x", "y"]}'}
    env = _run(source, read=files.get, files=["pkg/__init__.py", *files])
    assert env["got"] == {"a": {"libs": ["x", "y"]}, "b": {}}


@pytest.mark.parametrize(
    "source",
    [
        "x = 'a' * 100000000",  # a repetition past the bound
        "x = 2\nfor _ in range(4000):\n    x = x * x",  # a number past the bound
        "import re\nx = re.match(r'(a+)+b', 'a' * 40)",  # a pattern that backtracks exponentially
        "x = 0\nwhile True:\n    x = x + 1",  # a loop with no end
        "x = open('/etc/passwd').read()",  # a file outside the wheel
        "x = ''.__class__",  # an attribute of the interpreter's own objects
        "x = '{0.__class__}'.format(1)",
    ],
)
def test_what_it_does_not_follow_is_unknown(source: str) -> None:
    value = _run(source, read={}.get, files=["pkg/__init__.py"])["x"]
    assert isinstance(value, Opaque)
    with pytest.raises(Unknown):
        Interpreter("pkg/__init__.py").plain(value)


@pytest.mark.parametrize(
    ("statement", "changed"),
    [
        ("paths += [p]", {"paths"}),
        ("paths.append(p)", {"paths"}),
        ("libs[name] = p", {"libs"}),
        ("del libs[name]", {"libs"}),
        ("found = sorted(paths)", set()),
        ("major, minor = map(int, v.split('.'))", set()),
        ("a, b.c = 1, 2", {"b"}),
    ],
)
def test_a_name_changed_in_place_is_told_apart_from_one_assigned(statement: str, changed: set[str]) -> None:
    # GIVEN one statement THEN the names it changes other than by assigning them are those, and a real
    # run agrees: the value the name was first given is no longer what it holds
    assert changed_names(ast.parse(statement).body[0]) == changed
    env: dict[str, object] = {"p": "x", "paths": [], "libs": {"name": 1}, "name": "name", "v": "1.2"}
    env["b"] = types.SimpleNamespace()
    before = {k: repr(v) for k, v in env.items()}
    exec(statement, {}, env)
    assert {k for k in changed if repr(env[k]) != before[k]} == changed


def test_a_comprehension_s_own_variable_is_not_bound_outside_it() -> None:
    (stmt,) = ast.parse("found = [p for p in paths if (n := len(p))]").body
    assert bound_names(stmt) == {"found", "n"}


def test_a_path_of_several_parts_is_what_pathlib_makes_of_them() -> None:
    import pathlib

    # GIVEN Path(...) of several parts, one of them a path already
    source = "from pathlib import Path\nbase = Path('pkg')\np = str(Path(base, 'lib', 'libx.so'))\n"
    # THEN the interpreter joins them as pathlib does
    assert _run(source)["p"] == str(pathlib.Path(pathlib.Path("pkg"), "lib", "libx.so")) == "pkg/lib/libx.so"


def test_a_packages_own_exception_class_is_raised_by_its_name_and_caught_by_its_bases() -> None:
    import pytest as _pytest

    from abiprobe.binary.pyinterp import Raised

    # GIVEN a module's own exception class deriving from OSError
    source = """
class NotFound(OSError):
    '''no library'''
def find():
    raise NotFound("none here")
try:
    find()
    caught = False
except OSError:
    caught = True
"""
    # THEN a handler of its base catches it
    assert _run(source)["caught"] is True
    # AND uncaught, it is raised under the name Python prints: the module's, then the class's
    interp = Interpreter("pkg/sub.py")
    with _pytest.raises(Raised) as raised:
        interp.run(ast.parse(source.split("try:")[0] + "find()\n").body)
    assert (raised.value.name, raised.value.message) == ("pkg.sub.NotFound", "none here")
    # AND a class with a body of its own is not evaluated
    assert isinstance(_run("class Loader(Exception):\n    def f(self): pass\n")["Loader"], Opaque)
