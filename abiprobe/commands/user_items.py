"""Items as users write them, for ``check`` and ``probe``: ``-r`` / ``-c`` files, ranges, bare names,
``pylock.toml`` files, beside wheel files, URLs and ``PROJECT==VERSION``.

What each item is comes from ``abiprobe.commands.item_specs.parse_item``, as for every command. Exact
items (a wheel, a URL, one pinned version) are looked up as before; a range or a bare name is
resolved for the target by the closure resolver (the lock's), with the constraints, and its pick
becomes the item; a ``pylock.toml`` gives its packages' wheels for the target as they are locked.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement

from abiprobe.commands.item_specs import (
    Accepts,
    ItemSpec,
    LockFileSpec,
    NameSpec,
    PinnedSpec,
    RequirementsFileSpec,
    RequirementSpec,
    is_pylock,
)
from abiprobe.commands.items import ItemSource, OneWheel, one_wheel, wheel_spec
from abiprobe.errors import UsageError
from abiprobe.model.target import Target
from abiprobe.model.user_requirements import (
    RequirementsInput,
    UserRequirement,
    for_target,
    parse_pylock,
    parse_requirements_file,
)
from abiprobe.solve.candidates import FilterOptions
from abiprobe.solve.closure import UserWants


def add_requirement_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-r",
        "--requirement",
        action="append",
        default=None,
        metavar="FILE",
        help="requirements file (pip's format: -r/-c includes, index options, markers for the target)",
    )
    p.add_argument(
        "-c",
        "--constraint",
        action="append",
        default=None,
        metavar="FILE",
        help="constraints file: narrows versions without asking for a package",
    )


@dataclass(frozen=True)
class UserItems:
    """What the command line asks for: exact item texts, requirements to resolve, constraints, and the
    index options requirements files set."""

    exact: tuple[OneWheel, ...] = ()
    open: tuple[Requirement, ...] = ()
    constraints: tuple[Requirement, ...] = ()
    index_urls: tuple[str, ...] = ()
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    pre: bool = False
    notes: tuple[str, ...] = field(default=())

    def wants(self) -> UserWants | None:
        """The requirements and constraints the closure resolver takes (None: neither)."""
        if not self.open and not self.constraints:
            return None
        return UserWants(self.open, self.constraints)

    def options(self) -> FilterOptions:
        return FilterOptions(pre=self.pre)

    def source(self, args: argparse.Namespace, progress: bool) -> ItemSource:
        """The item source over ``--index-url`` (else the files' index options, else the installer's)."""
        from abiprobe.installers.pip import pip_location

        urls = list(args.index or []) or list(self.index_urls)
        extras = list(args.extra_index or []) or ([] if args.index else list(self.extra_index_urls))
        links = [pip_location(u) for u in self.find_links]
        return ItemSource(
            args.cache_dir,
            urls,
            args.offline,
            progress,
            extra_indexes=extras,
            strategy=args.index_strategy,
            find_links=links,
        )


def _classify(req: UserRequirement) -> tuple[str | None, Requirement | None]:
    """(exact item text, None) or (None, requirement to resolve)."""
    r = req.requirement
    if r is None:
        return req.text, None
    if req.pinned and not r.extras and r.url is None:
        return f"{r.name}{r.specifier}", None
    if r.url is not None:
        return r.url, None
    return None, Requirement(
        f"{r.name}{'[' + ','.join(sorted(r.extras)) + ']' if r.extras else ''}{r.specifier}"
    )


def _file_url(location: str, base: Path) -> str:
    return location if "://" in location else (base / location).absolute().as_uri()


def _locked_items(path: str, target: Target) -> list[str]:
    """A pylock.toml's wheels for the target: one URL or path per package."""
    from abiprobe.index.remote_items import pick_candidate
    from abiprobe.installers.toml import read_toml
    from abiprobe.model.candidate import IndexFile, candidates_from_files

    data = read_toml(Path(path))
    if data is None:
        raise UsageError(f"{path}: not a TOML file")
    base = Path(path).parent
    out = []
    for wheels in parse_pylock(data, path, target):
        files = [IndexFile(w.filename, _file_url(w.location, base), {"sha256": w.sha256} if w.sha256 else {})
                 for w in wheels]  # fmt: skip
        listed, _ = candidates_from_files(files, wheels[0].name)
        picked = pick_candidate(listed, f"{wheels[0].name}=={wheels[0].version}", None, target=target)
        url = picked.file.url
        out.append(url[len("file://") :] if url.startswith("file://") else url)
    return out


def user_items(
    specs: Sequence[ItemSpec], args: argparse.Namespace, target: Target, accepts: Accepts
) -> UserItems:
    """The command line's items (parsed by ``accepts``, which also judges what files and locks name),
    ``-r`` and ``-c`` files for ``target``."""
    parsed: list[RequirementsInput] = []
    read = lambda p: Path(p).read_text(encoding="utf-8")  # noqa: E731
    for f in getattr(args, "requirement", None) or []:
        parsed.append(parse_requirements_file(f, read, os.environ))
    for f in getattr(args, "constraint", None) or []:
        parsed.append(parse_requirements_file(f, read, os.environ, constraint=True))
    exact: list[OneWheel] = []
    for spec in specs:
        if isinstance(spec, LockFileSpec):
            exact += [wheel_spec(t, accepts) for t in _locked_items(spec.text, target)]
        elif isinstance(spec, RequirementsFileSpec):
            parsed.append(parse_requirements_file(spec.text, read, os.environ))
        elif isinstance(spec, (PinnedSpec, NameSpec, RequirementSpec)):
            req = UserRequirement(spec.text, "the command line", spec.requirement)
            parsed.append(RequirementsInput(requirements=(req,)))
        else:
            exact.append(one_wheel(spec, accepts))
    open_reqs: list[Requirement] = []
    constraints: list[Requirement] = []
    for p in parsed:
        for req in for_target(p.requirements, target):
            item, wanted = _classify(req)
            if item is not None:
                exact.append(wheel_spec(item, accepts))
            if wanted is not None:
                open_reqs.append(wanted)
        constraints += [c.requirement for c in for_target(p.constraints, target) if c.requirement is not None]
    return UserItems(
        exact=tuple({s.text: s for s in exact}.values()),
        open=tuple(open_reqs),
        constraints=tuple(constraints),
        index_urls=tuple(u for p in parsed for u in p.index_urls),
        extra_index_urls=tuple(u for p in parsed for u in p.extra_index_urls),
        find_links=tuple(u for p in parsed for u in p.find_links),
        pre=any(p.pre for p in parsed),
        notes=tuple(n for p in parsed for n in p.notes),
    )


def stack_constraints(files: Sequence[str], target: Target) -> list[str]:
    """``solve -r FILE``: every requirement and constraint of requirements files (markers for the
    target), and every package of a pylock.toml as ``NAME==VERSION``, as constraint texts."""
    read = lambda p: Path(p).read_text(encoding="utf-8")  # noqa: E731
    out: list[str] = []
    for f in files:
        if is_pylock(Path(f)):
            from abiprobe.installers.toml import read_toml

            data = read_toml(Path(f)) or {}
            out += [f"{w[0].name}=={w[0].version}" for w in parse_pylock(data, f, target)]
            continue
        parsed = parse_requirements_file(f, read, os.environ)
        for r in for_target([*parsed.requirements, *parsed.constraints], target):
            if r.requirement is None:
                raise UsageError(f"{r.origin}: a wheel or URL cannot narrow a stack; give NAME and bounds")
            out.append(f"{r.requirement.name}{r.requirement.specifier}")
    return out
