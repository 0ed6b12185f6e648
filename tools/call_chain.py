"""How the solve's call flow moves between abiprobe modules, measured on a real fixture solve.

Builds the fixture stack of ``tests/support/solve_stacks.py`` (real ELF objects packed into real
wheels), serves it from the local index server on 127.0.0.1 and runs ``abiprobe solve`` on it, cold
(an empty cache) and then warm (the same cache again), under ``sys.setprofile`` from
``abiprobe.commands.solve.run`` on. The main thread is traced (concurrent fact reads in worker threads
are not). Printed for each run:

- ``modules``: the distinct abiprobe modules whose functions ran inside ``run``;
- ``argument flow``: the calls that received one of ``run``'s values as an argument (``self``
  included): ``args`` and each of its field values, and each value ``run`` itself holds in a local
  (``target``, ``stack``, ``options``, the client ...). Their distinct modules, and per module how often
  the flow came back to it after having left it: walking those calls in time order, one call per
  distinct (calling line, called function) so that a loop counts once, each call whose module is not the
  previous call's module but was seen before is one return;
- ``longest chain``: the most nested frames one object of ``run``'s passes through as an argument,
  unbroken from ``run`` (each abiprobe frame's nearest abiprobe caller had it as an argument too), for
  ``args`` and its fields alone and for every value of ``run``'s, with the frames;
- ``after solve() returned``: the calls into the reading side (the solve's collector and closure, the
  index client, HTTP, the store's reads) once ``solve()`` has returned, by function: the lock, the
  matrix files and the probe jobs should be made from its value alone.

Usage: ``python tools/call_chain.py [--keep DIR] [--flow]`` (needs ``cc``, as the tests do); ``--flow``
also prints each call of the argument flow in time order, the returns marked.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
PACKAGE = str(ROOT / "abiprobe")

# modules that read (the solve's collector and closure, the index client, HTTP, the store's reads)
_READING = (
    "solve/pipeline.py",
    "solve/collect.py",
    "solve/runtime_wheels.py",
    "solve/closure.py",
    "solve/reach.py",
    "index/",
    "net/",
    "store/reads.py",
)
# values whose identity says nothing about where they came from
_ATOMS = (bool, int, float, type(None))


def _module(frame: FrameType) -> str | None:
    """``solve/pipeline.py`` for a frame running abiprobe code, else None."""
    path = frame.f_code.co_filename
    if not path.startswith(PACKAGE + "/"):
        return None
    return path[len(PACKAGE) + 1 :]


def _arguments(frame: FrameType) -> list[Any]:
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    names = code.co_varnames[:n]
    local = frame.f_locals
    out = []
    for name in names:
        value = local.get(name)
        if isinstance(value, tuple) and name in code.co_varnames[n - 2 : n]:
            out += list(value)
        elif isinstance(value, dict) and code.co_flags & 0x08 and name == names[-1]:
            out += list(value.values())
        else:
            out.append(value)
    return out


@dataclass
class Node:
    """One abiprobe frame inside ``run``: its nearest abiprobe caller's node and the chains it carries."""

    parent: Node | None
    where: str
    strict: dict[int, tuple[str, ...]] = field(default_factory=dict)  # id -> frames so far
    broad: dict[int, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class Trace:
    modules: set[str] = field(default_factory=set)
    flow: list[str] = field(default_factory=list)  # module of each first (line, function) argument call
    flow_calls: list[str] = field(default_factory=list)  # the same calls as module:function
    flow_modules: set[str] = field(default_factory=set)
    seen_edges: set[tuple[str, int, str]] = field(default_factory=set)
    longest_strict: tuple[str, ...] = ()
    longest_broad: tuple[str, ...] = ()
    names: dict[int, str] = field(default_factory=dict)  # tracked id -> what it is
    strict_name: str = ""
    broad_name: str = ""
    after_solve: Counter[str] = field(default_factory=Counter)  # reading-side calls after solve() returned

    def returns(self) -> Counter[str]:
        out: Counter[str] = Counter()
        seen: set[str] = set()
        previous = None
        for m in self.flow:
            if m != previous and m in seen:
                out[m] += 1
            seen.add(m)
            previous = m
        return out


class Tracer:
    """A profile function that follows ``run``'s values down the abiprobe frames of the main thread."""

    def __init__(self, entry: Callable[..., Any], solve: Callable[..., Any]) -> None:
        self.entry = entry.__code__
        self.solve = solve.__code__
        self.solved = False
        self.trace = Trace()
        self.nodes: dict[int, Node] = {}  # id(frame) -> node, for live frames
        self.run_frame: FrameType | None = None
        self.keep: list[Any] = []  # tracked values stay alive, so their ids stay theirs
        self.strict_ids: set[int] = set()
        self.broad_ids: set[int] = set()

    def _track(self, value: Any, name: str, strict: bool) -> None:
        if isinstance(value, _ATOMS) or id(value) in self.broad_ids:
            return
        self.keep.append(value)
        self.broad_ids.add(id(value))
        self.trace.names[id(value)] = name
        if strict:
            self.strict_ids.add(id(value))

    def _refresh_run_locals(self) -> None:
        assert self.run_frame is not None
        for name, value in self.run_frame.f_locals.items():
            self._track(value, name, strict=False)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self._call(frame)
        elif event == "return":
            if frame is self.run_frame:
                self.run_frame = None
            elif frame.f_code is self.solve:
                self.solved = True
            self.nodes.pop(id(frame), None)

    def _caller_node(self, frame: FrameType) -> Node | None:
        f = frame.f_back
        while f is not None:
            node = self.nodes.get(id(f))
            if node is not None:
                return node
            if _module(f) is not None:
                return None  # an abiprobe frame outside run's flow
            f = f.f_back
        return None

    def _call(self, frame: FrameType) -> None:
        if self.run_frame is None:
            if frame.f_code is not self.entry:
                return
            self.run_frame = frame
            args = frame.f_locals["args"]
            self._track(args, "args", strict=True)
            for name, value in vars(args).items():
                self._track(value, f"args.{name}", strict=True)
            where = f"commands/solve.py:{frame.f_code.co_name}"
            root = Node(None, where)
            root.strict = {i: (where,) for i in self.strict_ids}
            self.nodes[id(frame)] = root
            self.trace.modules.add("commands/solve.py")
            return
        module = _module(frame)
        if module is None:
            return
        if self.solved and module.startswith(_READING):
            self.trace.after_solve[f"{module}:{frame.f_code.co_name}"] += 1
        parent = self._caller_node(frame)
        if parent is None:
            return
        self.trace.modules.add(module)
        if parent.parent is None:  # called from run: what run holds now is tracked
            self._refresh_run_locals()
            parent.broad = {i: (parent.where,) for i in self.broad_ids}
        where = f"{module}:{frame.f_code.co_name}"
        node = Node(parent, where)
        ids = {id(v) for v in _arguments(frame)}
        for i in ids & self.strict_ids:
            if i in parent.strict:
                node.strict[i] = (*parent.strict[i], where)
        for i in ids & self.broad_ids:
            if i in parent.broad:
                node.broad[i] = (*parent.broad[i], where)
        self.nodes[id(frame)] = node
        if node.broad:
            caller = frame.f_back
            edge = (caller.f_code.co_filename if caller else "", caller.f_lineno if caller else 0, where)
            if edge not in self.trace.seen_edges:
                self.trace.seen_edges.add(edge)
                self.trace.flow.append(module)
                self.trace.flow_calls.append(where)
                self.trace.flow_modules.add(module)
        for chains, attr in ((node.strict, "strict"), (node.broad, "broad")):
            for i, chain in chains.items():
                if len(chain) > len(getattr(self.trace, f"longest_{attr}")):
                    setattr(self.trace, f"longest_{attr}", chain)
                    setattr(self.trace, f"{attr}_name", self.trace.names[i])


def traced_solve(argv: list[str]) -> tuple[int, Trace]:
    from abiprobe.cli import main
    from abiprobe.commands import solve
    from abiprobe.solve import pipeline

    tracer = Tracer(solve.run, pipeline.solve)
    threading.setprofile(None)
    sys.setprofile(tracer)
    try:
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            rc = main(argv)
    finally:
        sys.setprofile(None)
    return rc, tracer.trace


def report(label: str, rc: int, trace: Trace, flow: bool = False) -> None:
    print(f"== {label} solve (exit {rc})")
    print(f"modules visited inside run: {len(trace.modules)}")
    print(f"argument flow: {len(trace.flow_modules)} modules, {len(trace.flow)} distinct calls")
    returns = trace.returns()
    print(f"returns to a module already left: {sum(returns.values())}")
    for module, n in returns.most_common():
        print(f"  {n:3d}  {module}")
    for what, chain, name in (
        ("args and its fields", trace.longest_strict, trace.strict_name),
        ("any value of run's", trace.longest_broad, trace.broad_name),
    ):
        print(f"longest chain ({what}): {len(chain)} frames, carrying {name}")
        for step in chain:
            print(f"    {step}")
    if flow:
        print("argument flow, in time order (* a return to a module already left):")
        seen: set[str] = set()
        previous = None
        for m, where in zip(trace.flow, trace.flow_calls, strict=True):
            mark = "*" if m != previous and m in seen else " "
            print(f"  {mark} {where}")
            seen.add(m)
            previous = m
    after = trace.after_solve
    print(f"after solve() returned: {sum(after.values())} reading-side calls, {len(after)} functions")
    for where, n in after.most_common():
        print(f"  {n:5d}  {where}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the fixtures and the cache here (else a temp dir)")
    parser.add_argument("--flow", action="store_true", help="also print the argument flow call by call")
    opts = parser.parse_args()
    from support.indexserver import IndexServer
    from support.solve_stacks import serve, solve_argv, solve_stack

    for name in list(os.environ):
        if name.startswith(("PIP_", "UV_")):
            del os.environ[name]
    os.environ["PIP_CONFIG_FILE"] = os.devnull
    os.environ["UV_NO_CONFIG"] = "1"
    with tempfile.TemporaryDirectory(prefix="call-chain-") as tmp:
        work = opts.keep or Path(tmp)
        os.environ["ABIPROBE_LOCAL_DIR"] = str(work / "local")
        stack = solve_stack(work / "stack")
        with IndexServer() as server:
            serve(server, stack)
            argv = solve_argv(server.index_url, work / "cache", work / "matrices", "--json")
            for label in ("cold", "warm"):
                rc, trace = traced_solve(argv)
                report(label, rc, trace, flow=opts.flow)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
