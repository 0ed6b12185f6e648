"""Items as users write them, for ``check`` and ``probe``: ``-r`` / ``-c`` files, ranges, bare names,
``pylock.toml`` files, beside wheel files, URLs and ``PROJECT==VERSION``.

Exact items (a wheel, a URL, one pinned version) are looked up as before; a range or a bare name is
resolved for the target by the closure resolver (the lock's), with the constraints, and its pick
becomes the item; a ``pylock.toml`` gives its packages' wheels for the target as they are locked.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from abiprobe.commands.items import ItemSource
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

_PYLOCK = re.compile(r"^pylock(\.[^.]+)?\.toml$")


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

    exact: tuple[str, ...] = ()
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


def is_pylock(text: str) -> bool:
    return bool(_PYLOCK.match(Path(text).name)) and Path(text).is_file()


def is_requirements_file(text: str) -> bool:
    """An item naming an existing ``.txt`` file is read as ``-r`` reads it (``check requirements.txt``,
    and the pre-commit hook, which passes the changed files as items)."""
    return text.endswith(".txt") and Path(text).is_file()


def _is_exact_text(text: str) -> bool:
    path = Path(text)
    return (
        (path.suffix == ".whl" and path.is_file())
        or path.is_dir()
        or text.startswith(("http://", "https://"))
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


def user_items(texts: Sequence[str], args: argparse.Namespace, target: Target) -> UserItems:
    """The command line's items, ``-r`` and ``-c`` files for ``target``."""
    parsed: list[RequirementsInput] = []
    read = lambda p: Path(p).read_text(encoding="utf-8")  # noqa: E731
    for f in getattr(args, "requirement", None) or []:
        parsed.append(parse_requirements_file(f, read, os.environ))
    for f in getattr(args, "constraint", None) or []:
        parsed.append(parse_requirements_file(f, read, os.environ, constraint=True))
    exact: list[str] = []
    open_reqs: list[Requirement] = []
    for text in texts:
        if is_pylock(text):
            exact += _locked_items(text, target)
        elif is_requirements_file(text):
            parsed.append(parse_requirements_file(text, read, os.environ))
        elif _is_exact_text(text):
            exact.append(text)
        else:
            try:
                req = UserRequirement(text, "the command line", Requirement(text))
            except InvalidRequirement:
                raise UsageError(
                    f"{text}: not a .whl file, a directory, a wheel URL, a pylock.toml, a requirements "
                    "file (.txt) or a requirement"
                ) from None
            parsed.append(RequirementsInput(requirements=(req,)))
    constraints: list[Requirement] = []
    for p in parsed:
        for req in for_target(p.requirements, target):
            item, wanted = _classify(req)
            if item is not None:
                exact.append(item)
            if wanted is not None:
                open_reqs.append(wanted)
        constraints += [c.requirement for c in for_target(p.constraints, target) if c.requirement is not None]
    return UserItems(
        exact=tuple(dict.fromkeys(exact)),
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
        if is_pylock(f):
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
