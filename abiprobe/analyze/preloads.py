"""Where a path glob of the package's code or of the stack data falls in the install layout, and what a
set's packages preload globally (the stack data's ``preload`` and ``preload_closure``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from abiprobe.analyze.layout import InstalledObject, Layout
from abiprobe.solve.stack import PackageLoading, default_stack

_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*\}")


def preload_pattern(rules: Sequence[PackageLoading]) -> re.Pattern[str]:
    """Installed paths any rule may preload (its ``preload`` globs and its ``closure_dir``)."""
    parts = [install_glob(g).pattern for r in rules for g in r.preload]
    parts += [re.escape(r.closure_dir.rstrip("/") + "/") + "[^/]+" for r in rules if r.closure_dir]
    return re.compile("|".join(f"(?:{p})" for p in parts) or "(?!)")


def install_glob(pattern: str) -> re.Pattern[str]:
    """An installed-path glob: ``**/`` any directories, ``*`` within one name, ``{param}`` any name."""
    text = _PLACEHOLDER.sub("*", pattern)
    out = ""
    i = 0
    while i < len(text):
        if text.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif text[i] == "*":
            out, i = out + "[^/]*", i + 1
        else:
            out, i = out + re.escape(text[i]), i + 1
    return re.compile(out)


def preload_order(layout: Layout, rules: Sequence[PackageLoading]) -> list[InstalledObject]:
    """What importing the set's packages loads globally before anything else, from the stack data: each
    rule's ``preload`` globs in order, then its ``preload_closure`` (their DT_NEEDED closure in
    ``closure_dir``), for the packages the set has."""
    objs: list[InstalledObject] = []
    for rule in rules:
        if not any(f.startswith(f"{rule.package}/") for w in layout.wheels for f in w.files):
            continue
        for pattern in rule.preload:
            rx = install_glob(pattern)
            objs += [o for p, o in sorted(layout.objects.items()) if rx.fullmatch(p) and o not in objs]
        if rule.closure_dir:
            objs += [o for o in _closure(layout, rule) if o not in objs]
    return objs


def _closure(layout: Layout, rule: PackageLoading) -> list[InstalledObject]:
    """The libraries of ``closure_dir`` that the roots reach by DT_NEEDED (a library nothing needs, such
    as torch 2.15's libgfortran.so.5, stays on disk); the whole directory when no root is there."""
    prefix = rule.closure_dir.rstrip("/") + "/"
    in_dir = {p: o for p, o in layout.objects.items() if p.startswith(prefix)}
    rxs = [install_glob(r) for r in rule.preload_closure]
    roots = [o for p, o in sorted(layout.objects.items()) if any(rx.fullmatch(p) for rx in rxs)]
    if not any(not o.path.startswith(prefix) for o in roots):
        return [o for _, o in sorted(in_dir.items())]
    by_name: dict[str, InstalledObject] = {}
    for o in in_dir.values():
        by_name.setdefault(o.filename, o)
        if o.facts.soname:
            by_name.setdefault(o.facts.soname, o)
    reached = {o.path for o in roots if o.path in in_dir}
    todo = list(roots)
    while todo:
        obj = todo.pop()
        for name in obj.facts.needed:
            dep = by_name.get(name)
            if dep is not None and dep.path not in reached:
                reached.add(dep.path)
                todo.append(dep)
    return [o for p, o in sorted(in_dir.items()) if p in reached]


__all__ = ["install_glob", "preload_order", "preload_pattern"]


# installed paths of the libraries the stack's packages preload (torch/lib, the nvidia libraries it names);
# here rather than in the loader, so that what asks only this (which libraries to read) loads no loader
PRELOADED = preload_pattern(default_stack().loading())
