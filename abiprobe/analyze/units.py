"""Which shared objects a set's packages load, when, and in what order: the units the loader judges.

A unit is an extension module the package imports, or a library its Python code loads by path
(``torch.ops.load_library``, ``ctypes.CDLL`` ...), read statically from the package's source
(:mod:`abiprobe.binary.pysource`). Importing the package runs its top-level code: every import and load it
reaches, followed through the package's own modules and functions in execution order, happens *at import*;
loads and imports inside functions that import never calls happen *on first use*, and so does an extension
module nothing in the package names (the program imports it itself); a computed module name or path that
matches several files loads one of them at a time abiprobe cannot know (*unknown*). Packages whose source is
not read (facts stored before it was, or ``read_source`` off in the stack data) load every extension at
import, in path order. A library nothing loads is no unit (it never loads).

The code is followed with the values the set and the target fix (:mod:`abiprobe.analyze.runtime`): a
computed name is evaluated (a file the set lacks is an ``absent`` unit, which fails as ``CDLL`` does);
an ``if`` on those values takes only the branch the target takes (an ``if`` on anything else runs both,
and a ``raise`` in either is no claim); a ``for`` runs each item of its list, glob or directory in turn.
A load inside a ``try`` whose handler catches its failure is a candidate: the units after it carry, in
``when``, the outcomes they run after (the next candidate after it failed, the package's own ``raise``
after every one did), which the loader simulation settles as it loads them in order. A failure a handler
swallows is ``caught``: judged and labelled optional, never what importing does. A path abiprobe cannot
follow is an ``unresolved`` unit: ``unknown``, with its file, line and expression.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from packaging.utils import canonicalize_name

from abiprobe.analyze.layout import InstalledObject, Layout
from abiprobe.analyze.preloads import install_glob
from abiprobe.analyze.runtime import (
    TOKEN,
    CallRun,
    CannotEvaluate,
    PackageRaises,
    RuntimeValues,
    evaluate,
    evaluate_setup,
    run_call,
    substitute,
    with_files,
)
from abiprobe.binary.pyinterp import PackagePath, Raised, Unknown
from abiprobe.binary.pysource import ARG_PREFIX, DEFINED
from abiprobe.binary.wheel_members import in_prefix, installed_path, site_relative
from abiprobe.model.facts import PyEvent, PyFunction, PyModule, WheelFacts, all_events
from abiprobe.model.stack import PackageLoading

Timing = Literal["import", "first_use", "unknown", "optional"]
Cond = tuple[tuple[str, bool], ...]  # (unit key, whether it loaded) that must all hold for a unit to load
_MAX_PATHS = 16
_CallKey = tuple[str, str, tuple[tuple[str, str], ...], Timing, Cond, bool]
_MAX_ITEMS = 64  # items of a loop over a list the package computes
_MAX_FORKS = 3  # loads of the set inside handlers a program is run both ways around (8 runs at most)
_LOAD_WORDS = ("CDLL", "load_library", "LoadLibrary", "PyDLL")
_OS_ERROR_KINDS = frozenset({"OSError", "IOError", "EnvironmentError"})
_EXT_TAIL = re.compile(r"\.(?:cpython-[^.]+|abi3|pypy[^.]*)?\.?so$")


@dataclass(frozen=True)
class PlannedUnit:
    """One object the package loads: how (``import``: an extension module; ``path``: by path through
    ``api``; ``soname``: a bare name the system's search finds; ``absent``: a computed path the set does
    not have; ``fallback``: a computed path the package tests for, lacks and loads another instead of;
    ``unresolved``: a path abiprobe cannot follow; ``raise``: the package's own error; ``opened``: a
    library named like an extension module that no import can load, opened by code not followed), when,
    where in the package's code, and the outcomes of earlier units it runs after (``when``)."""

    path: str
    how: str
    timing: Timing
    where: str = ""
    api: str = ""
    when: Cond = ()
    caught: bool = False  # a handler of the package catches its failure (the package goes on)
    note: str = ""  # how its name was computed, or why it cannot be followed
    raises: str = ""  # raise: the line Python prints ("RuntimeError: ..."); "" re-raises the caught error
    # the other paths that reach it (``when`` of each): it is loaded when any of them is taken (the
    # package's extension imported after whichever candidate of its try-list loaded)
    also: tuple[Cond, ...] = ()

    @property
    def reached_on(self) -> tuple[Cond, ...]:
        return (self.when, *self.also)

    @property
    def by_path(self) -> bool:
        return self.how in ("path", "soname", "absent", "unresolved", "opened")

    @property
    def loads_object(self) -> bool:
        """Whether the unit is an object of the layout the loader simulation loads."""
        return self.how in ("import", "path", "opened")


def module_of_extension(path: str) -> str | None:
    """``pkg/sub/_C.cpython-312-x86_64-linux-gnu.so`` -> ``pkg.sub._C``."""
    stem = _EXT_TAIL.sub("", path.rsplit("/", 1)[-1]) if path.endswith(".so") else None
    if not stem:
        return None
    return ".".join([*posixpath.dirname(path).split("/"), stem]) if "/" in path else stem


class _Planner:
    def __init__(
        self,
        layout: Layout,
        wheels: Sequence[WheelFacts],
        rules: Sequence[PackageLoading],
        values: RuntimeValues | None = None,
        system: Callable[[str], bool] | None = None,
    ) -> None:
        self.layout = layout
        # whether a bare library name is one the target's system provides (None: not known)
        self.system = system
        self._unread = frozenset(installed_path(p) for w in layout.wheels for p in w.unread)
        self._names = frozenset(
            n for o in layout.objects.values() for n in (posixpath.basename(o.path), o.facts.soname) if n
        )
        self.rules = tuple(rules)
        # the computed paths an existence test found absent while a load's path was evaluated
        self.missing: list[str] = []
        # the set's installed paths (site-packages relative), for the package's own searches
        # (a ``.data/data`` file at its place in the prefix: facts read before that was mapped name it so)
        self.files = frozenset(installed_path(f) for w in layout.wheels for f in w.files)
        self.search_stopped = ""  # why the package's own search for the load being planned could not run
        self.values = None if values is None else with_files(values, self.files, self.missing)
        self.cond: Cond = ()
        self.opaque = 0  # depth of branches taken on a test that cannot be known
        self.tries: list[tuple[frozenset[str], list[tuple[str, Cond]]]] = []  # catches, failures
        self.note = ""
        self.modules: dict[str, PyModule] = {}
        for w in wheels:
            for m in w.python or ():
                self.modules.setdefault(m.name, m)
        self.extensions = {
            name: o for o in layout.extensions() if (name := module_of_extension(o.path)) is not None
        }
        self.units: dict[str, PlannedUnit] = {}
        self.ran: set[tuple[str, str]] = set()  # (module, function) bodies already run
        self.imported: set[str] = set()
        # per module, read once: its functions by name, and the first import naming each last part
        self._functions: dict[str, dict[str, PyFunction]] = {}
        self._aliases: dict[str, dict[str, str]] = {}
        # calls run to their end, by (module, function, arguments, timing, the path's conditions, whether
        # under an opaque test) -> how they ended (paths on, raises, the returns of None and of a value):
        # the planner's state only grows (units, imports), so running one again on the same path adds
        # nothing. On another path it does (what it loads is reached on that path too). A run that met a
        # recursive call it left out (``_cut``) is not one of them: called from elsewhere, that call may
        # run in full; nor is a run inside a ``try`` (what it adds to the handler's failures is that
        # handler's own).
        self._explored: dict[_CallKey, tuple[list[Cond], list[Cond], tuple[set[Cond], set[Cond]]]] = {}
        # (module path, line) of a call of the package's own function -> the paths (conditions) on which
        # it returned None, and those on which it returned a value
        self.returned: dict[tuple[str, int], tuple[set[Cond], set[Cond]]] = {}
        self._cut = False
        # a program run both ways around a load of the set inside a handler (:meth:`_runs`): the
        # outcomes it is being run with, and the load met that would decide its way, not yet forced
        self._forced: dict[str, bool] = {}
        self._fork = ""
        # what the branches the target does not take would load (an extension loaded only there is no
        # unit: the package's own code decided not to load it)
        self.not_taken: set[str] = set()
        # the modules whose loads were planned only in such branches (their paths)
        self.skipped_at: set[str] = set()

    def add(self, path: str, how: str, timing: Timing, where: str, api: str = "", note: str = "") -> None:
        kind = "ImportError" if how == "import" else "OSError"
        caught = self._caught(kind)
        planned = self.units.get(path)
        if planned is not None:  # reached on another path too: loaded when either is taken
            if planned.timing != timing or self.cond in planned.reached_on or len(planned.also) >= _MAX_PATHS:
                return  # (a first use of what import loads on another path is not loaded at import)
            self.units[path] = replace(planned, also=(*planned.also, self.cond))
        else:
            self.units[path] = PlannedUnit(
                path, how, timing, where, api, self.cond, caught is not None, note or self.note
            )
        if caught is not None:
            caught.append((kind, (*self.cond, (path, False))))
            self.cond = (*self.cond, (path, True))

    def _fallback(self, path: str, instead: str, timing: Timing, where: str, api: str, note: str) -> None:
        """A path computed from run-time values that the package tests for (``path.exists()``) and, as
        the set lacks it, loads ``instead`` of: a warning of its own, not a failure (nothing fails to
        load; the package goes on with what it falls back to)."""
        key = f"fallback:{path}"
        if key not in self.units and path != instead:
            because = f"{note}; " if note else ""
            self.units[key] = PlannedUnit(
                key, "fallback", timing, where, api, self.cond, False, f"{because}it loads {instead} instead"
            )

    def _unresolved(self, expr: str, timing: Timing, where: str, api: str, reason: str = "") -> None:
        """A load whose path is not followed: ``expr`` is the argument's text, then (after a newline) the
        package function's return it stopped at, else ``reason``."""
        call, _, why = expr.partition("\n")
        why = why or reason
        if self.search_stopped:
            why = f"{why}; {self.search_stopped}" if why else self.search_stopped
        note = f"{where}: {api}({call})" + (f": {why}" if why else "")
        self.add(f"unresolved:{where}", "unresolved", timing, where, api, note)

    def _caught(self, kind: str) -> list[tuple[str, Cond]] | None:
        """The failures list of the innermost ``try`` whose handlers catch ``kind``, or None."""
        for names, failures in reversed(self.tries):
            if names & _catching(kind):
                return failures
        return None

    def import_module(self, name: str, timing: Timing, where: str) -> None:
        if not _literal_head(name.split(".")[0]):
            return  # a module name computed from nothing it spells: no claim about what it imports
        if "*" in name:
            matched = sorted(n for n in self.extensions if fnmatch.fnmatchcase(n, name))
            for n in matched:
                # a computed module name: which of several it imports is not known statically
                self.add(self.extensions[n].path, "import", timing if len(matched) == 1 else "unknown", where)
            return
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            self._import_one(".".join(parts[:i]), timing, where)

    def _import_one(self, name: str, timing: Timing, where: str) -> None:
        if name in self.extensions:  # on each path that imports it (the first import is what loads it)
            self.imported.add(name)
            self.add(self.extensions[name].path, "import", timing, where)
            return
        if name in self.imported:
            return
        module = self.modules.get(name)
        if module is None:
            return
        self.imported.add(name)
        self._nested(module, module.events, timing, {})

    def _nested(
        self, module: PyModule, events: Sequence[PyEvent], timing: Timing, args: dict[str, str]
    ) -> _Exits:
        """Run a module's or a function's events; the path it ends on goes on where it was called."""
        exits = self.run(module, events, timing, args)
        ends = exits.next + exits.ret
        self.cond = ends[0] if ends else self.cond
        return exits

    def run(
        self,
        module: PyModule,
        events: Sequence[PyEvent],
        timing: Timing,
        args: dict[str, str],
        live: list[Cond] | None = None,
    ) -> _Exits:
        """The events in order on every path the code can take (``live``: the conditions of each)."""
        paths = [self.cond] if live is None else live
        exits = _Exits()
        opaque = self.opaque
        for i, e in enumerate(events):
            after: list[Cond] = []
            uncertain = False
            for cond in paths:
                self.cond = cond
                out = self.event(module, e, timing, args)
                after += out.next
                uncertain = uncertain or out.uncertain
                exits.add(out)
            if uncertain and self.opaque == opaque:  # the rest of the block: a raise there is no claim
                self.opaque += 1
            paths = list(dict.fromkeys(after))[:_MAX_PATHS]
            if not paths:  # every path returned or raised: what the rest would load is not loaded here
                self._skip(module, events[i + 1 :], timing, args)
                break
        self.opaque = opaque
        exits.next = paths
        return exits

    def event(self, module: PyModule, e: PyEvent, timing: Timing, args: dict[str, str]) -> _Exits:
        where = f"{module.path} line {e.line}"
        out = _Exits()
        if e.kind == "import":
            self.import_module(self._value(_bind(e.target, args), where)[0], timing, where)
        elif e.kind == "load":
            self.load(_bind(e.target, args), e.api, timing, where, e.expr, e.setup, module.path)
        elif e.kind == "call":
            return self.call(module, e, timing, args)
        elif e.kind == "run":  # a search of the module's top level: run as written, else its events
            if e.setup and self.values is not None:
                ran = self._interpreted(module, e, timing)
                if ran is not None:
                    return ran
            return self.run(module, e.body, timing, args)
        elif e.kind == "if":
            return self._if(module, e, timing, args, where)
        elif e.kind == "for":
            return self._for(module, e, timing, args, where)
        elif e.kind == "try":
            return self._try(module, e, timing, args)
        elif e.kind == "raise":
            if self.opaque:  # under a test abiprobe cannot know: whether it is reached is not known
                out.next.append(self.cond)
                return out
            text = self._value(_bind(e.target, args), where)[0]
            message = next((m.strip() for m in text.splitlines() if m.strip()), "")
            line = (f"{e.api}: {message}" if message else e.api) if e.api else ""
            caught = self._caught(e.api or "OSError")  # a bare raise re-raises the failure it handles
            if caught is not None:  # an enclosing handler of the package catches it: it goes on there
                caught.append((e.api or "OSError", self.cond))
                return out
            if timing != "import" and not any(not loaded for _key, loaded in self.cond):
                # a function's own error check, reached by no failed load: whether a caller's arguments
                # reach it is no loading question (numba's NotImplementedError paths, say)
                out.rais.append(self.cond)
                return out
            key = f"raise:{where}"
            n = 1
            while key in self.units and self.units[key].when != self.cond:  # reached after another failure
                n += 1  # (a helper called once per library of a list raises after each one's failure)
                key = f"raise:{where} #{n}"
            if key not in self.units:
                self.units[key] = PlannedUnit(
                    key, "raise", timing, where, when=self.cond, note=self.note, raises=line
                )
            out.rais.append(self.cond)
            return out
        elif e.kind in ("break", "continue", "return"):
            getattr(out, {"break": "brk", "continue": "cont", "return": "ret"}[e.kind]).append(self.cond)
            if e.kind == "return":
                (out.ret_none if e.target == "none" else out.ret_value).append(self.cond)
            return out
        out.next.append(self.cond)
        return out

    def _value(self, text: str, where: str) -> tuple[str, str]:
        """``text`` with its run-time values filled in, and which values; a value that cannot be
        evaluated becomes ``*`` (matched as a glob) and the reason is the unit's note."""
        if "{=" not in text:
            return text, ""
        if self.values is not None:
            try:
                return substitute(text, self.values)
            except CannotEvaluate as exc:
                return TOKEN.sub("*", text), f"{where}: {exc}"
        return TOKEN.sub("*", text), f"{where}: no run-time values given"

    def _if(self, module: PyModule, e: PyEvent, timing: Timing, args: dict[str, str], where: str) -> _Exits:
        """Only the branch the target takes runs; both, when the test cannot be known (of unknown timing
        when it reads a run-time value abiprobe cannot evaluate), and then a ``raise`` in either is no
        claim (whether it is reached is not known)."""
        later, note = timing, self.note
        if e.target.startswith("returned:"):  # ``if lib is None``: by how the call returned on this path
            _, line, which = e.target.split(":")
            none, value = self.returned.get((module.path, int(line)), (set(), set()))
            if (self.cond in none) != (self.cond in value):
                taken = (self.cond in none) == (which == "none")
                self._skip(module, e.orelse if taken else e.body, timing, args)
                return self.run(module, e.body if taken else e.orelse, timing, args, [self.cond])
        if e.setup and self.values is not None:  # computed by the module before the test
            loads = any(k in e.setup for k in _LOAD_WORDS)  # it runs the package's loading functions
            try:
                taken = bool(
                    evaluate_setup(
                        e.setup,
                        module.path,
                        self.values,
                        self.files if loads else None,
                        self._decide if loads else None,
                    )
                )
            except CannotEvaluate:
                pass
            else:
                self._skip(module, e.orelse if taken else e.body, timing, args)
                return self.run(module, e.body if taken else e.orelse, timing, args, [self.cond])
        test = TOKEN.fullmatch(_bind_arguments(e.target, args))
        if test is not None and ARG_PREFIX in test.group(1):
            test = None  # a test on a parameter no call passed: opaque
        if test is not None:
            try:
                if self.values is None:
                    raise CannotEvaluate("no run-time values given")
                taken = bool(evaluate(test.group(1), self.values))
                self._skip(module, e.orelse if taken else e.body, timing, args)
                return self.run(module, e.body if taken else e.orelse, timing, args, [self.cond])
            except CannotEvaluate as exc:
                later = "unknown" if timing == "import" else timing
                self.note = f"{where}: `if` {exc}"
        cond = self.cond
        self.opaque += 1
        first = self.run(module, e.body, later, args, [cond])
        second = self.run(module, e.orelse, later, args, [cond])
        self.opaque -= 1
        self.note = note
        left = any(x.brk or x.cont or x.ret or x.rais for x in (first, second))
        first.add(second)
        first.next = list(dict.fromkeys(first.next + second.next))
        first.uncertain = bool(left) and bool(first.next)
        return first

    def _skip(
        self, module: PyModule, events: Sequence[PyEvent], timing: Timing, args: dict[str, str]
    ) -> None:
        """Note what a branch the target does not take would load (:attr:`not_taken`), changing nothing
        else of the plan."""
        if not any(x.kind in ("load", "for", "if", "try", "call") for x in events):
            return
        saved = (dict(self.units), set(self.imported), dict(self._explored), self.cond, self.note,
                 self.opaque, list(self.tries), self._cut)  # fmt: skip
        # what the branch's loads and raises add to the enclosing handlers' failures is undone too: a raise
        # in a branch not taken must not run the handler that would catch it
        caught = [(failures, len(failures)) for _names, failures in self.tries]
        try:
            self.run(module, events, timing, args, [self.cond])
            self.not_taken |= set(self.units) - set(saved[0])
            self.skipped_at |= {
                u.where.rsplit(" line ", 1)[0] for k, u in self.units.items() if k not in saved[0]
            }
        finally:
            (self.units, self.imported, self._explored, self.cond, self.note, self.opaque, self.tries,
             self._cut) = saved  # fmt: skip
            for failures, n in caught:
                del failures[n:]

    def _for(self, module: PyModule, e: PyEvent, timing: Timing, args: dict[str, str], where: str) -> _Exits:
        """Each item in turn (a list's, a glob's matches in path order, a directory's files); a ``break``
        leaves the loop, the ``else`` runs when none did."""
        items: list[str]
        if e.api == "program":
            try:
                computed = self._program_items(e, module.path)
            except PackageRaises as exc:  # what the function runs before the loop raises, on this path
                out = _Exits()
                if not self._search_raises(exc, timing, where, "what the package computes for its loop"):
                    out.rais.append(self.cond)
                return out
            if computed is None:
                return self._opaque_loop(module, e, timing, args)
            items = computed
        elif e.api in ("glob", "listdir") and e.args:
            pattern = self._value(e.args[0], where)[0]
            if e.api == "glob":
                rx = install_glob(pattern)
                items = sorted(p for p in self.layout.objects if rx.fullmatch(p))
            else:
                items = sorted(
                    p.rsplit("/", 1)[1] for p in self.layout.objects if p.rsplit("/", 1)[0] == pattern
                )
        else:
            items = [self._value(_bind(i, args), where)[0] for i in e.args]
        out, paths = _Exits(), [self.cond]
        for item in items:
            turn = self.run(module, e.body, timing, {**args, e.target: item}, paths)
            out.ret += turn.ret
            out.ret_none += turn.ret_none
            out.ret_value += turn.ret_value
            out.rais += turn.rais
            out.next += turn.brk
            paths = list(dict.fromkeys(turn.next + turn.cont))
            if not paths:
                break
        rest = self.run(module, e.orelse, timing, args, paths) if paths else _Exits()
        out.add(rest)
        out.next = list(dict.fromkeys(out.next + rest.next))
        return out

    def _program_items(self, e: PyEvent, module_path: str) -> list[str] | None:
        """The items of a loop over a list the package's code computes (the scanner's program, run with
        the set's files and the target's values), each a path text or a string; None when the program
        cannot be run, or gives anything else."""
        if self.values is None:
            return None
        try:
            value = evaluate_setup(e.setup, module_path, self.values, self.files)
        except PackageRaises:
            # the function's own statements before the loop raise: they run whenever the loop is
            # reached (plain statements of its body), so the raise is the package's when not opaque
            if self.opaque:
                return None
            raise
        except CannotEvaluate:
            return None
        if not isinstance(value, (list, tuple)) or len(value) > _MAX_ITEMS:
            return None
        items = [v.path if isinstance(v, PackagePath) else v for v in value]
        if not all(isinstance(i, str) and "{" not in i for i in items):
            return None
        return items

    def _opaque_loop(self, module: PyModule, e: PyEvent, timing: Timing, args: dict[str, str]) -> _Exits:
        """A loop whose items are not known: its body runs on some runs, any number of times; a
        ``break`` or ``continue`` in it goes on after the loop."""
        cond = self.cond
        self.opaque += 1
        body = self.run(module, e.body, timing, args, [cond])
        ended = list(dict.fromkeys([cond, *body.next, *body.cont]))  # no break: the ``else`` runs
        rest = self.run(module, e.orelse, timing, args, ended)
        self.opaque -= 1
        out = _Exits()
        out.add(body)
        out.add(rest)
        out.brk, out.cont = [], []
        out.next = list(dict.fromkeys([*rest.next, *body.brk]))
        out.uncertain = bool(out.ret or out.rais or body.brk) and bool(out.next)
        return out

    def _try(self, module: PyModule, e: PyEvent, timing: Timing, args: dict[str, str]) -> _Exits:
        """The body; each failure a handler catches runs the first handler that catches it."""
        handlers = [(frozenset(h.target.split(",")), h) for h in e.orelse]
        names = frozenset(n for ns, _ in handlers for n in ns)
        failures: list[tuple[str, Cond]] = []
        self.tries.append((names, failures))
        body = self.run(module, e.body, timing, args, [self.cond])
        self.tries.pop()
        out = _Exits()
        out.add(body)
        out.next = list(body.next)
        for kind, cond in failures:
            handler = next((h for ns, h in handlers if ns & _catching(kind)), None)
            if handler is None:
                continue
            caught = self.run(module, handler.body, timing, args, [cond])
            out.add(caught)
            out.next += caught.next
        out.next = list(dict.fromkeys(out.next))
        return out

    def _matches(self, pattern: str) -> bool:
        return bool(pattern) and any(install_glob(pattern).fullmatch(p) for p in self.layout.objects)

    def _search_raises(self, exc: PackageRaises, timing: Timing, where: str, what: str) -> bool:
        """The package's own error, raised by its search (``what``) on this path: caught by an enclosing
        handler of the package (True: it goes on there), else a ``raise`` unit (False)."""
        line = f"{exc.name}: {exc.message}" if exc.message else exc.name
        for kind in sorted(exc.kinds):
            caught = self._caught(kind)
            if caught is not None:  # the package's handler catches its own search's failure
                caught.append((kind, self.cond))
                return True
        key = f"raise:{where}"
        if key not in self.units:
            self.units[key] = PlannedUnit(
                key, "raise", timing, where, when=self.cond, note=f"{where}: {what} raises", raises=line
            )
        return False

    def _searched(self, setup: str, module_path: str, api: str, timing: Timing, where: str) -> bool:
        """Run the package's own search for a load's path (the program the scanner kept,
        abiprobe.binary.pyslice.path_program) with the set's installed files: the file it finds is the
        unit (absent from the set: the load fails), and an exception it raises is the package's own
        failure. False when the program cannot be run with what the set and the target fix (the load
        stays not followed)."""
        if not setup or self.values is None:
            return False
        try:
            value = evaluate_setup(setup, module_path, self.values, self.files)
        except PackageRaises as exc:
            if self.opaque:  # whether the search is reached is not known: no claim
                return False
            self._search_raises(exc, timing, where, f"the package's own search for the file {api} loads")
            return True
        except CannotEvaluate as exc:
            self.search_stopped = f"the package's own search, run on the set's files, stops: {exc}"
            return False
        path = value.path if isinstance(value, PackagePath) else value
        if not isinstance(path, str) or not path:
            return False
        path = site_relative(path)
        if not in_prefix(path) or any(c in path for c in "*?[{"):
            return False  # a file outside the environment, or a name that reads as a pattern
        note = f"the file the package's own search finds ({where})"
        if "/" not in path:  # a bare name: the loader's own search
            self.load(path, api, timing, where, note=note)
            return True
        if path in self.layout.objects:
            self.add(path, "path", timing, where, api, note)
        elif path in self.files:
            return False  # a file of the set that is no shared object: not judged here
        else:
            self.add(path, "absent", timing, where, api, f"{note}: not in the set")
        return True

    def load(
        self,
        pattern: str,
        api: str,
        timing: Timing,
        where: str,
        expr: str = "",
        setup: str = "",
        module_path: str = "",
        note: str = "",
    ) -> None:
        self.search_stopped = ""
        raw = pattern
        self.missing.clear()
        pattern, computed = self._value(pattern, where)
        if "/" in pattern and "{" not in pattern and (pattern.startswith(".") or "/." in pattern):
            pattern = site_relative(pattern)  # ``./../../libtbb.so.12``: site-packages put in for a folder
            if not in_prefix(pattern):
                return  # a file outside the environment: no claim
        # a path computed from run-time values is taken as computed; the package's own search is run on
        # the set's files for a path not followed, or one whose value could not be computed
        runtime = "{=" in raw
        failed = runtime and computed.startswith(f"{where}:") and not self._matches(pattern)
        if (
            expr
            and setup
            and (not runtime or failed)
            and self._searched(setup, module_path, api, timing, where)
        ):
            return
        if computed:
            note = f"computed from {computed}" if "/" not in computed.split(":", 1)[0] else computed
        for path in dict.fromkeys(self.missing):
            self._fallback(path, pattern, timing, where, api, note)
        if expr and "{=" in raw and computed.startswith(f"{where}:") and not self._matches(pattern):
            # a path computed through code abiprobe could not follow on the branch the target takes
            self._unresolved(expr, timing, where, api, computed.split(": ", 1)[1])
            return
        if expr and self.opaque and not self._matches(pattern):
            return  # not followed, under a test abiprobe cannot know: no claim
        if not pattern and expr:
            self._unresolved(expr, timing, where, api)
            return
        if "/" not in pattern and pattern and "{" not in pattern and "*" not in pattern:
            if self._caught("OSError") is not None:  # a bare name in a try: the system's search
                self.add(f"soname:{pattern}", "soname", timing, where, api, note)
            return
        if "/" not in pattern or "{" in pattern or not _literal_head(pattern.split("/")[0]):
            return  # a bare soname (the loader's own search), a parameter no call filled, or no package
        rx = install_glob(pattern)
        matched = sorted(p for p in self.layout.objects if rx.fullmatch(p))
        how = "import" if api == "importlib.util.spec_from_file_location" else "path"
        if not matched and "*" not in pattern and (computed or self._caught("OSError") is not None):
            self.add(
                pattern, "absent", timing, where, api, f"{note}: not in the set" if note else "not in the set"
            )
            return
        if not matched and expr:
            # a path not followed, and the name it spells names no file of the set: not known
            self._unresolved(expr, timing, where, api)
            return
        if not matched:
            return  # a guess by the name it spells that names no file (an optional library): no claim
        # several matches load one of them, unknown which, unless the stack data picks by GPU among them
        picked = len(matched) == 1 or all(
            any(r.selects(p, None) is not None for r in self.rules) for p in matched
        )
        if len(matched) == 1:
            self.add(matched[0], how, timing, where, api, note)
            return
        tries, self.tries = self.tries, []  # one of several: not a candidate the package moves on from
        for path in matched:
            self.add(path, how, timing if picked else "unknown", where, api, note)
        self.tries = tries

    def call(
        self, module: PyModule, e: PyEvent, timing: Timing, caller: dict[str, str] | None = None
    ) -> _Exits:
        """Run the package's function the event calls (its arguments bound to the caller's own); its
        returns go on after the call."""
        out = _Exits()
        out.next.append(self.cond)
        self.returned.pop((module.path, e.line), None)  # known again only if the function is run below
        target = e.target if "." in e.target else f"{module.name}.{e.target}"
        owner, _, fname = target.rpartition(".")
        passed = tuple(_bind(a, caller or {}) for a in e.args)
        if owner not in self.modules and owner.rpartition(".")[0] in self.modules:  # Class.method
            owner, fname = owner.rpartition(".")[0], f"{owner.rpartition('.')[2]}.{fname}"
        callee_module = self.modules.get(owner)
        if (
            callee_module is not None
            and self._function(callee_module, fname) is None
            and self._function(callee_module, f"{fname}.__init__") is not None
        ):  # Class(...): its __init__
            fname, passed = f"{fname}.__init__", ("", *passed)
        function = None
        for _ in range(4):  # follow re-exports: ``from .utils import _load_lib`` in the package
            if callee_module is None:
                return out
            function = self._function(callee_module, fname)
            if function is not None:
                break
            alias = self._alias(callee_module, fname)
            if alias is None:
                return out
            owner = alias.rpartition(".")[0]
            callee_module = self.modules.get(owner)
        if function is None or callee_module is None:
            return out
        if (owner, fname) in self.ran:  # a recursive call: what it loads is being found already
            self._cut = True
            return out
        if e.setup and self.values is not None:
            ran = self._interpreted(module, e, timing)
            if ran is not None:
                return ran
        bound = {p: a for p, a in zip(function.params, passed, strict=False) if a and "{" not in _strip(a)}
        key = (owner, fname, tuple(sorted(bound.items())), timing, self.cond, self.opaque > 0)
        done = self._explored.get(key)
        if done is not None:  # run with these arguments on this path before: running it again adds nothing
            self.returned[(module.path, e.line)] = done[2]
            return _Exits(next=list(done[0]), rais=list(done[1]))
        self.ran.add((owner, fname))
        cut_above, self._cut = self._cut, False
        if owner not in self.imported:
            self._import_one(owner, timing, f"{module.path} line {e.line}")
        exits = self.run(callee_module, function.events, timing, bound)
        out = _Exits(next=list(dict.fromkeys(exits.next + exits.ret)) or [], rais=exits.rais)
        # how it returned on each path: None (a return of None, or its end), or a value; a path on which
        # both happen (a return inside a loop or a branch abiprobe cannot know, then ``return None``) is
        # known neither way, so a test of what it returned stays opaque there
        none = set(exits.next) | set(exits.ret_none)
        value = set(exits.ret_value)
        self.returned[(module.path, e.line)] = (none, value)
        self.ran.discard((owner, fname))  # another call may pass other arguments
        if not self._cut and not self.tries:  # run to its end: no recursive call inside it was left out
            self._explored[key] = (out.next, out.rais, (none, value))
        self._cut = self._cut or cut_above
        return out

    def _interpreted(self, module: PyModule, e: PyEvent, timing: Timing) -> _Exits | None:
        """Run the call with the package's own code (the program the scanner kept,
        abiprobe.binary.pyslice.call_program; for a search of the module's top level, its statements) on
        the set's files: what it loads and imports, in order, are the units, and what it raises is the
        package's failure; None when it cannot be run with what the set and the target fix (its events
        are followed instead). Where a library of the set loads inside a handler that would go on
        without it, both ways are run (:meth:`_runs`): what follows it when it loads, and what follows
        when it fails (or, where that cannot be run, ``unknown`` on that path)."""
        runs = self._runs(e.setup, module.path)
        if all(ran is None for _, ran, _ in runs):
            return None
        call_at = f"{module.path} line {e.line}"
        start = self.cond
        out = _Exits()
        returned: tuple[set[Cond], set[Cond]] = (set(), set())
        for forced, ran, why in runs:
            self.cond = start
            if ran is None:  # this way (a library of the set failing, or loading) is not followed
                self.cond = (*start, *forced)
                ways = ", ".join(
                    f"{k.split(':', 1)[-1]} {'loads' if v else 'fails to load'}" for k, v in forced
                )
                key = f"unresolved:{call_at} when {ways}"
                note = f"{call_at}: what the package does next when {ways} is not followed: {why}"
                if key not in self.units:
                    self.units[key] = PlannedUnit(
                        key, "unresolved", timing, call_at, "", self.cond, False, note
                    )
                out.next.append(self.cond)
                continue
            ended = self._traced(module, ran, timing, call_at, dict(forced))
            if ran.raised is None or self.opaque:  # (under a test abiprobe cannot know, a raise is no claim)
                self.cond = ended if ran.raised is None else start
                out.next.append(self.cond)
                if ran.raised is None:
                    returned[0 if ran.returned_none else 1].add(self.cond)
                continue
            if self._raises(module, ran, timing, call_at):
                out.rais.append(self.cond)
        if any(returned):
            self.returned[(module.path, e.line)] = returned
        out.next = list(dict.fromkeys(out.next))
        if out.next:
            self.cond = out.next[0]
        return out

    def _runs(self, program: str, module_path: str) -> list[tuple[Cond, CallRun | None, str]]:
        """Each way a program runs: the outcomes of the loads it was run with (a library of the set
        inside a handler, loading or failing: ``(unit key, loads)`` in the order met), what it did (None:
        it could not be run that way) and why not. One way when no such load decides anything."""
        out: list[tuple[Cond, CallRun | None, str]] = []
        todo: list[Cond] = [()]
        assert self.values is not None
        try:
            while todo:
                forced = todo.pop(0)
                self._forced, self._fork = dict(forced), ""
                try:
                    out.append(
                        (forced, run_call(program, module_path, self.values, self.files, self._decide), "")
                    )
                except CannotEvaluate as exc:
                    fork = self._fork
                    if fork and len(forced) < _MAX_FORKS and fork not in self._forced:
                        todo[:0] = [(*forced, (fork, True)), (*forced, (fork, False))]
                    else:
                        out.append((forced, None, str(exc)))
        finally:
            self._forced, self._fork = {}, ""
        return out

    def _traced(
        self, module: PyModule, ran: CallRun, timing: Timing, call_at: str, forced: dict[str, bool]
    ) -> Cond:
        """The units of one way a program ran, in order, from the planner's path; the path it ends on."""
        note = f"loaded by the package's own search, run on the set's files (called at {call_at})"
        # the candidates that failed are this call's own: its raise comes after them; once it returns, what
        # failed is no condition of what follows (nothing provides those libraries on any path)
        start, failed = self.cond, set()
        for kind, name, api, line, path_of in ran.trace:
            where = f"{path_of if path_of.endswith('.py') else module.path} line {line}" if line else call_at
            if kind == "import":
                self.import_module(name, timing, where)
                continue
            path = site_relative(name) if "/" in name else name
            key = f"soname:{path}" if "/" not in path else path
            if key in forced:  # a library of the set whose failure the package catches: either way
                self._caught_unit(key, "soname" if "/" not in path else "path", timing, where, api, note)
                self.cond = (*self.cond, (key, forced[key]))
            elif kind == "failed":  # a candidate that fails (nothing provides it): the package went on
                self._caught_unit(key, "soname" if "/" not in path else "absent", timing, where, api, note)
                self.cond = (*self.cond, (key, False))
                failed.add((key, False))
            elif "/" not in path or path in self.layout.objects:
                self.add(key, "soname" if "/" not in path else "path", timing, where, api, note)
        return (*start, *(c for c in self.cond[len(start) :] if c not in failed))

    def _caught_unit(self, key: str, how: str, timing: Timing, where: str, api: str, note: str) -> None:
        """A load whose failure the package's handler catches, reached on the planner's path."""
        planned = self.units.get(key)
        if planned is None:
            self.units[key] = PlannedUnit(key, how, timing, where, api, self.cond, True, note)
        elif self.cond not in planned.reached_on and len(planned.also) < _MAX_PATHS:
            self.units[key] = replace(planned, also=(*planned.also, self.cond))

    def _raises(self, module: PyModule, ran: CallRun, timing: Timing, call_at: str) -> bool:
        """The package's own exception a run ended in, on the planner's path: a handler of the package
        around the call catches it (False: it goes on there), or it is the import's failure (a unit)."""
        assert ran.raised is not None
        raised_in = ran.raised_path if ran.raised_path.endswith(".py") else module.path
        where = f"{raised_in} line {ran.raised_line}" if ran.raised_line else call_at
        exc = ran.raised
        for kind in sorted(exc.kinds):
            caught = self._caught(kind)
            if caught is not None:
                caught.append((kind, self.cond))
                return False
        key, n = f"raise:{where}", 1
        while key in self.units and self.units[key].when != self.cond:  # reached after other failures
            n += 1
            key = f"raise:{where} #{n}"
        if key not in self.units:
            text = f"{exc.name}: {exc.message}" if exc.message else exc.name
            self.units[key] = PlannedUnit(
                key, "raise", timing, where, when=self.cond, note=f"{where}: the call at {call_at} raises",
                raises=text,
            )  # fmt: skip
        return True

    def _decide(self, target: str, api: str, caught: bool) -> bool:
        """Whether a library the package's own code loads, run by the interpreter, loads: a file of the
        set does (whether it then fails is the loader simulation's answer: inside a handler that would go
        on without it, the run is made both ways, :meth:`_runs`); a name or path nothing provides raises
        the OSError ``dlopen`` gives."""
        key = f"soname:{target}" if "/" not in target else site_relative(target)
        if key in self._forced:  # this way of running the program: it loads, or it fails
            if self._forced[key]:
                return True
            raise Raised("OSError", f"{target}: the loader fails to load it", _OS_ERROR_KINDS)
        if "/" not in target:
            if target in self._names:  # found only if something loaded it already
                if caught:
                    self._fork = key
                    raise Unknown(f"whether {target} is loaded already decides what the package does next")
                return True
            if self.system is None:
                raise Unknown(f"whether the target's system provides {target}")
            if self.system(target):
                return True
        else:
            path = key
            if not in_prefix(path):
                raise Unknown(f"whether {target}, outside the environment, loads")
            if path in self.layout.objects:
                if caught:
                    self._fork = key
                    raise Unknown(f"whether {path} loads decides what the package does next")
                return True
            if path in self._unread:  # a library of a runtime wheel the loader's closure did not need read
                if caught:
                    raise Unknown(f"whether {path}, not read, loads decides what the package does next")
                return True
            if path in self.files:
                raise Unknown(f"{path} is no shared object abiprobe read")
        message = f"{target}: cannot open shared object file: No such file or directory"
        raise Raised("OSError", message, _OS_ERROR_KINDS)

    def _function(self, module: PyModule, name: str) -> PyFunction | None:
        """The module's first function called ``name`` that the target defines (a ``def`` under run-time
        tests the target does not take is passed over: ``if sys.platform == 'win32': def find(): ...``)."""
        table = self._functions.get(module.name)
        if table is None:
            table = self._functions[module.name] = {}
            for f in module.functions:
                if f.name not in table or self._undefined(table[f.name]):
                    table[f.name] = f
        return table.get(name)

    def _undefined(self, f: PyFunction) -> bool:
        """Whether the target certainly skips the run-time tests around ``f``'s ``def``."""
        if len(f.events) != 1 or f.events[0].kind != "if" or f.events[0].api != DEFINED:
            return False
        test = TOKEN.fullmatch(f.events[0].target)
        if test is None or self.values is None:
            return False
        try:
            return not evaluate(test.group(1), self.values)
        except CannotEvaluate:
            return False

    def _alias(self, module: PyModule, name: str) -> str | None:
        """The target of the module's first import that ends in ``.name`` (a re-export of it)."""
        table = self._aliases.get(module.name)
        if table is None:
            table = self._aliases[module.name] = {}
            for i in all_events(module.events):
                if i.kind == "import" and "." in i.target:
                    table.setdefault(i.target.rpartition(".")[2], i.target)
        return table.get(name)

    def deferred(self, module: PyModule) -> None:
        """What the module's functions (and, when nothing imports it, its top level) load when called."""
        self.cond = ()
        if module.name not in self.imported:
            self.imported.add(module.name)
            self.run(module, module.events, "first_use", {})
        for f in module.functions:
            self.cond = ()
            self.run(module, f.events, "first_use", {})


@dataclass
class _Exits:
    """The paths (their conditions) leaving a block: on to the next statement, by ``break``,
    ``continue``, ``return``, or by a ``raise``."""

    next: list[Cond] = field(default_factory=list)
    brk: list[Cond] = field(default_factory=list)
    cont: list[Cond] = field(default_factory=list)
    ret: list[Cond] = field(default_factory=list)
    ret_none: list[Cond] = field(default_factory=list)  # of ``ret``: the returns of None
    ret_value: list[Cond] = field(default_factory=list)  # of ``ret``: the returns of a value
    rais: list[Cond] = field(default_factory=list)
    # a test abiprobe cannot know decided whether the block goes on (one branch left it): what follows
    # in the block is reached on some runs only
    uncertain: bool = False

    def add(self, other: _Exits) -> None:
        """Take ``other``'s non-local exits (not its ``next``)."""
        self.brk += other.brk
        self.cont += other.cont
        self.ret += other.ret
        self.ret_none += other.ret_none
        self.ret_value += other.ret_value
        self.rais += other.rais


_CATCHING = {
    "OSError": frozenset({"OSError", "EnvironmentError", "IOError", "Exception", "BaseException"}),
    "ImportError": frozenset({"ImportError", "Exception", "BaseException"}),
}


def _catching(kind: str) -> frozenset[str]:
    """The handler names that catch an exception of class ``kind`` (one of the package's own: itself,
    ``Exception`` or ``BaseException``)."""
    return _CATCHING.get(kind, frozenset({kind, "Exception", "BaseException"}))


def _literal_head(part: str) -> bool:
    return bool(part) and "*" not in part and "{" not in part


def _strip(text: str) -> str:
    """``text`` without its ``{=expr=}`` parts (a parameter no call filled is what is left in braces)."""
    return TOKEN.sub("", text)


def _bind_arguments(text: str, args: dict[str, str]) -> str:
    """A kept test with the parameters a call passed put in (``__abiprobe_arg_no_throw`` -> ``False``)."""
    if ARG_PREFIX not in text:
        return text

    def one(m: re.Match[str]) -> str:
        value = args.get(m.group(1))
        if value is None:
            return m.group(0)
        token = TOKEN.fullmatch(value)
        if token is not None:
            return f"({token.group(1)})"
        return repr(value) if "{" not in value else m.group(0)

    return re.sub(rf"{ARG_PREFIX}(\w+)", one, text)


def _bind(text: str, args: dict[str, str]) -> str:
    for name, value in args.items():
        text = text.replace(f"{{{name}}}", value)
    return text


def plan_units(
    layout: Layout,
    wheels: Sequence[WheelFacts],
    rules: Sequence[PackageLoading] = (),
    values: RuntimeValues | None = None,
    not_taken: set[str] | None = None,
    system: Callable[[str], bool] | None = None,
    followed: set[str] | None = None,
) -> list[PlannedUnit]:
    """The units of ``wheels`` (part of ``layout``) in the order importing their packages loads them,
    their code evaluated with ``values`` (those the set and the target fix; None: none known).
    ``not_taken`` gets the objects their code loads only in branches these values do not take;
    ``system``: whether the target's system provides a library by that name (None: not known);
    ``followed`` gets the file names of the wheels whose code loads a library only in such branches."""
    by_package = {r.package: r for r in rules}
    planner = _Planner(layout, wheels, rules, values, system)
    tops: list[str] = []
    for w in sorted(wheels, key=lambda w: _rank(w, rules)):
        tops += [t for t in _imported_tops(w, by_package) if t not in tops]
    sourced = {t for w in wheels if w.python is not None for t in _tops(w)}
    for top in tops:
        rule = by_package.get(top)
        if top not in sourced or (rule is not None and not rule.read_source):
            for o in sorted(layout.extensions(), key=lambda o: o.path):
                if o.path.split("/", 1)[0] == top and o.wheel in wheels:
                    planner.add(o.path, "import", "import", "")
            continue
        planner.cond = ()
        planner.import_module(top, "import", "")
    for module in sorted(planner.modules.values(), key=lambda m: m.path):
        if module.path.split("/", 1)[0] in sourced and not _test_code(module.path):
            planner.deferred(module)
    for o in sorted(layout.extensions(), key=lambda o: o.path):
        # nothing in the package imports it: the program's own import loads it (unless the package's own
        # code loads it only in a branch this set and target do not take)
        if o.wheel in wheels and o.path not in planner.not_taken:
            if (init := module_init(o)) is None:
                planner.add(o.path, "import", "first_use", "")
            else:  # no import can load it: something opens it by path, when and whether is not known
                why = f"it exports no {init}, so no import loads it; the code that opens it is not followed"
                planner.add(o.path, "opened", "first_use", "", note=why)
    if not_taken is not None:
        not_taken |= {p for p in planner.not_taken if p in layout.objects and p not in planner.units}
    if followed is not None:
        followed |= {w.filename for w in wheels if any(m.path in planner.skipped_at for m in w.python or ())}
    return list(planner.units.values())


def module_init(obj: InstalledObject) -> str | None:
    """``PyInit_<name>`` when ``obj``, named like an extension module, exports no function CPython can
    initialise it by (``PyInit_``, ``PyInitU_``, ``PyModExport_``: importing it would fail), else None."""
    stem = obj.filename.split(".", 1)[0]
    names = {f"PyInit_{stem}", f"PyModExport_{stem}"}
    if any(e.name in names or e.name.startswith("PyInitU_") for e in obj.facts.exports):
        return None
    return f"PyInit_{stem}"


def _test_code(path: str) -> bool:
    """A module of the package's own test suite (``numpy/tests/test_public_api.py``): what its functions
    load is no feature of the package (a test runner calls them, not the program)."""
    *folders, name = path.split("/")
    return any(f in ("tests", "test") for f in folders) or name.startswith("test_") or name == "conftest.py"


def _imported_tops(wheel: WheelFacts, rules: dict[str, PackageLoading]) -> list[str]:
    """The packages of a wheel a program imports when it uses the distribution: those the stack data
    names, else the one named like the distribution, else all of them (the others load when imported)."""
    tops = _tops(wheel)
    named = [t for t in tops if t in rules]
    if named:
        return named
    same = [t for t in tops if canonicalize_name(t) == canonicalize_name(wheel.metadata.name)]
    return same or tops


def _rank(wheel: WheelFacts, rules: Sequence[PackageLoading]) -> int:
    tops = _tops(wheel)
    return next((i for i, r in enumerate(rules) if r.package in tops), len(rules))


def _tops(wheel: WheelFacts) -> list[str]:
    tops = [t for t in wheel.metadata.top_level if t and not t.endswith((".dist-info", ".data"))]
    if not tops:
        tops = sorted(
            {f.split("/", 1)[0] for f in wheel.files if "/" in f and ".dist-info/" not in f} - {".."}
        )
    return tops or [str(canonicalize_name(wheel.metadata.name)).replace("-", "_")]


__all__ = ["PlannedUnit", "Timing", "module_of_extension", "plan_units"]
