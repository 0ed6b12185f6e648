"""Reading what a package's Python code loads, statically (abiprobe.binary.pysource), over real source."""

from __future__ import annotations

import pytest

from abiprobe.binary.pysource import scan_imports, scan_module, scan_sources
from abiprobe.model.facts import PyEvent, all_events

EXTENSION = b"""
import os
from pathlib import Path
import ctypes
import torch

_LIB_DIR = Path(__file__).parent / "lib"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_lib(lib):
    path = _LIB_DIR / f"{lib}.so"
    torch.ops.load_library(str(path))


def _probe(dirs):
    for candidate in dirs:
        ctypes.CDLL(candidate)


def helper(name):
    return torch.ops.load_library(_get_extension_path(name))


_load_lib("libtorchaudio")
ctypes.cdll.LoadLibrary(os.path.join(_HERE, "kernels", "libk.so"))
if False:
    import lazy_never
"""


def _loads(events: tuple[PyEvent, ...]) -> list[tuple[str, str]]:
    return [(e.target, e.api) for e in all_events(events) if e.kind == "load"]


def test_module_level_and_function_loads_with_their_path_expressions() -> None:
    m = scan_module("audiox/_extension/__init__.py", EXTENSION)
    assert m is not None
    # THEN the top level loads libk.so by path and calls _load_lib with a constant
    assert _loads(m.events) == [("audiox/_extension/kernels/libk.so", "ctypes.cdll.LoadLibrary")]
    (call,) = [e for e in m.events if e.kind == "call"]
    assert (call.target, call.args, call.line) == ("audiox._extension._load_lib", ("libtorchaudio",), 25)
    # AND the call keeps the program that runs it with the function it calls, lines marked, for the planner
    assert call.setup.endswith("__abiprobe_test__ = _load_lib('libtorchaudio')")
    assert "def _load_lib(lib):\n    __abiprobe_line__(12)\n    path = " in call.setup
    functions = {f.name: f for f in m.functions}
    # AND the function's path keeps its parameter, filled in at the call site by the planner
    assert _loads(functions["_load_lib"].events) == [
        ("audiox/_extension/lib/{lib}.so", "torch.ops.load_library")
    ]
    # AND a path that cannot be evaluated is matched by the name it spells; one that spells none keeps its
    # expression (the planner's unknown unit)
    assert _loads(functions["helper"].events) == [("audiox/**/{name}.*so*", "torch.ops.load_library")]
    (probe,) = [e for e in all_events(functions["_probe"].events) if e.kind == "load"]
    assert (probe.target, probe.api, probe.expr) == ("", "ctypes.CDLL", "candidate")


def test_line_reader_keeps_top_level_imports_and_leaves_out_those_in_functions() -> None:
    source = b'''"""Docs.

import not_code
"""
import os
from . import (
    _C,  # the extension
    ops,
)
try:
    from .version import __version__
except ImportError:
    pass


def later():
    if True:
        import lazy_module


class K:
    import in_class_body
'''
    m = scan_imports("visionx/__init__.py", source)
    assert m is not None
    assert [e.target for e in all_events(m.events) if e.kind == "import"] == [
        "os", "visionx._C", "visionx.ops", "visionx.version.__version__", "in_class_body",
    ]  # fmt: skip
    # the import inside ``try`` is kept inside a try event with the names its handler catches
    tried = next(e for e in m.events if e.kind == "try")
    assert [e.target for e in tried.body] == ["visionx.version.__version__"]
    assert [(h.kind, h.target) for h in tried.orelse] == [("except", "ImportError")]


def test_only_modules_that_may_load_are_parsed() -> None:
    sources = {
        "pkg/__init__.py": b"from .ext import setup\nsetup()\n",
        "pkg/ext.py": b"import ctypes\ndef setup():\n    ctypes.CDLL(__file__ + '.so')\n",
        "pkg/plain.py": b"import json\n",
    }
    scanned = {m.path: m.scanned for m in scan_sources(sources)}
    # ext.py names a load call; __init__.py calls a function found to load; plain.py is read by lines
    assert scanned == {"pkg/__init__.py": True, "pkg/ext.py": True, "pkg/plain.py": False}


def test_a_function_without_parameters_keeps_its_own_assignments() -> None:
    # GIVEN xformers' way: a spec found by FileFinder in a function that takes no arguments
    source = b"""
import importlib.machinery, os, torch


def _register_extensions():
    lib_dir = os.path.dirname(__file__)
    finder = importlib.machinery.FileFinder(lib_dir)
    if torch.version.hip:
        ext_specs = finder.find_spec("_C_hip")
    else:
        ext_specs = finder.find_spec("_C")
    torch.ops.load_library(ext_specs.origin)


_register_extensions()
"""
    m = scan_module("xformers/_cpp_lib.py", source)
    assert m is not None
    (f,) = m.functions
    # THEN the load is matched by the name its spec spells on the branch the planner takes (the test reads
    # torch.version.hip), and the module-level call is recorded
    pattern = "{=('xformers/**/_C_hip.*so*' if torch.version.hip else 'xformers/**/_C.*so*')=}"
    assert _loads(f.events) == [(pattern, "torch.ops.load_library")]
    assert any(e.kind == "call" and e.target == "xformers._cpp_lib._register_extensions" for e in m.events)


def test_an_extension_imported_from_a_path_is_a_load_named_by_its_module() -> None:
    # GIVEN sgl_kernel's way: glob a per-architecture directory, import the match by its file location
    source = b"""
import glob, importlib.util
from pathlib import Path


def _load_architecture_specific_ops():
    for ops_path in glob.glob(str(Path(__file__).parent / "sm90" / "common_ops.*")):
        spec = importlib.util.spec_from_file_location("common_ops", str(ops_path))
"""
    m = scan_module("sgl_kernel/load_utils.py", source)
    assert m is not None
    # THEN the loop is kept over the glob's matches, and the load is of each match in turn
    (loop,) = [e for e in m.functions[0].events if e.kind == "for"]
    assert (loop.target, loop.api, loop.args) == ("ops_path", "glob", ("sgl_kernel/sm90/common_ops.*",))
    assert _loads(loop.body) == [("{ops_path}", "importlib.util.spec_from_file_location")]


def test_a_loop_over_a_name_reassigned_from_itself_is_read_without_recursing() -> None:
    # GIVEN code seen in a real installed package: a list re-bound to a sorted copy of itself, then loaded
    src = b"""
import ctypes, glob, os
libs = glob.glob(os.path.join(os.path.dirname(__file__), "*.so"))
libs = sorted(libs)
libs = list(libs)
for lib in libs:
    ctypes.CDLL(lib)
"""
    # WHEN it is scanned THEN it is read (no RecursionError), the loop a load over the glob
    module = scan_module("pkg/__init__.py", src)
    assert module is not None and module.scanned
    assert [e.kind for e in all_events(module.events) if e.kind == "load"] == ["load"]


@pytest.mark.parametrize("terms", [2000, 5000])  # past the scanner's recursion; past the parser's
def test_code_nested_deeper_than_the_scanner_follows_is_read_for_its_imports(terms: int) -> None:
    # GIVEN a load whose path is a sum of thousands of strings (a deep tree: hostile or generated code)
    src = ("import os\nimport ctypes\nctypes.CDLL(" + "+".join(['"a"'] * terms) + ")\n").encode()
    # WHEN it is scanned THEN the answer is its imports, read line by line, not a crash
    module = scan_module("pkg/deep.py", src)
    assert module is not None and not module.scanned
    assert {e.target for e in module.events if e.kind == "import"} >= {"os", "ctypes"}


def test_a_condition_over_assignments_made_from_each_other_many_times_is_given_up() -> None:
    import ast

    from abiprobe.binary.pyflow import runtime_text

    # GIVEN assignments each made three times over from the next (3,280 substitutions down to torch's)
    def expr(text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body

    values = {f"v{i}": expr(f"v{i + 1} or v{i + 1} or v{i + 1}") for i in range(7)}
    values["v7"] = expr("torch.version.cuda")
    flat = {"w0": expr("w1 or w1"), "w1": expr("torch.version.cuda")}
    everything = {**values, **flat}

    def dotted(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    # WHEN their conditions are rewritten into run-time text
    deep = runtime_text(expr("v0 == '12.8'"), dotted, everything.get)
    shallow = runtime_text(expr("w0 == '12.8'"), dotted, everything.get)
    # THEN the few substitutions give the text, and the exponential one is given up (no run-time value)
    assert shallow == "(torch.version.cuda or torch.version.cuda) == '12.8'"
    assert deep is None


def test_a_package_call_in_a_test_it_can_evaluate_still_runs() -> None:
    # GIVEN torchvision's shape: `if _load_library("_C"):` where the helper loads and returns True, and
    # the scan can follow what it returns
    src = b"""
import os
import torch

def _load_library(lib_name):
    try:
        torch.ops.load_library(os.path.join(os.path.dirname(__file__), lib_name + ".so"))
        return True
    except OSError:
        return False

if _load_library("_C"):
    HAS_OPS = True
"""
    # WHEN the wheel's Python is scanned
    (module,) = scan_sources({"pkg/__init__.py": src})
    # THEN the call is an event before the `if`: importing the package runs the load
    kinds = [(e.kind, e.target) for e in module.events]
    call = ("call", "pkg._load_library")
    assert call in kinds
    assert kinds.index(call) < [k for k, _ in kinds].index("if")


def test_an_index_into_a_run_time_value_is_kept_in_the_file_name() -> None:
    # GIVEN flashinfer's shape: the CUDA major, split out of torch's version, names the runtime to open
    src = b"""
import ctypes, os, torch
def _clear():
    major = (torch.version.cuda or "").split(".")[0]
    try:
        ctypes.CDLL(f"libcudart.so.{major}", mode=os.RTLD_NOLOAD)
    except OSError:
        return
"""
    (module,) = scan_sources({"pkg/x.py": src})
    (load,) = [e for f in module.functions for e in all_events(f.events) if e.kind == "load"]
    # THEN the index stays part of the run-time value (not dropped as "one of a glob's matches")
    assert load.target == "libcudart.so.{=(torch.version.cuda or '').split('.')[0]=}"


def test_a_path_from_an_arguments_attribute_is_not_matched_by_the_arguments_name() -> None:
    # GIVEN a command-line tool of a package that executes the user's file (triton's tools/compile.py)
    source = b"""
import importlib.util
from pathlib import Path


def compile_kernel(args):
    arg_path = Path(args.path)
    spec = importlib.util.spec_from_file_location(arg_path.stem, arg_path)
    return spec
"""
    m = scan_module("triton/tools/compile.py", source)
    assert m is not None
    (f,) = m.functions
    # THEN the file is the user's: no load is matched by the argument's name (`triton/**/{args}.*so*` would
    # match every library of the package)
    assert [target for target, _api in _loads(f.events) if "{args}" in target or "**" in target] == []


def test_a_path_built_from_several_parts_joins_them_all() -> None:
    # GIVEN ``Path(folder, "lib", name)``: pathlib joins every part, as ``Path(folder) / "lib" / name``
    source = b"""import ctypes
import os
from pathlib import Path

ctypes.CDLL(str(Path(os.path.dirname(__file__), "lib", "libpart.so")))
"""
    m = scan_module("partpkg/__init__.py", source)
    assert m is not None
    # THEN the load's path is the whole joined path, not its first part
    assert _loads(m.events) == [("partpkg/lib/libpart.so", "ctypes.CDLL")]
