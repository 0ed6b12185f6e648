"""``check --installed REQ...`` / ``probe --installed REQ...``: the environment the installer's plan leaves.

The installer's dry run (abiprobe.installers.plan) says what it would add and replace; the environment
after is the installed distributions minus the replaced ones plus the added wheels, each read as any
remote item is (by range, cache first; a local find-links file as a local wheel). uv names no files:
its wheels are looked up as ``NAME==VERSION`` for the target, in ``--find-links`` folders first.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.utils import canonicalize_name

from abiprobe.commands.items import Item, ItemSource, resolve_item
from abiprobe.errors import UsageError
from abiprobe.host.installed import InstalledDist, installed_distributions
from abiprobe.installers.plan import InstallPlan, PlannedWheel, ask_installer
from abiprobe.model.candidate import IndexFile
from abiprobe.model.facts import WheelFacts, WheelInfo
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.target import Target


def add_plan_options(p: argparse.ArgumentParser) -> None:
    """The options handed to the installer's dry run (``--index-url`` is too, when given)."""
    p.add_argument(
        "--find-links",
        action="append",
        default=None,
        metavar="DIR_OR_URL",
        help="with --installed REQ: a wheel folder or page the installer may take wheels from",
    )
    p.add_argument(
        "--no-index", action="store_true", help="with --installed REQ: the installer reads no index"
    )


def installer_options(args: argparse.Namespace) -> list[str]:
    """The installer flags the command line asks for (pip and uv spell them the same): indexes,
    ``-r`` / ``-c`` files, find-links, ``--no-index``, ``--no-deps``."""
    out: list[str] = []
    for i, url in enumerate(args.index or []):
        out += ["--index-url" if i == 0 else "--extra-index-url", url]
    for url in args.extra_index or []:
        out += ["--extra-index-url", url]
    for flag, files in (
        ("-r", getattr(args, "requirement", None)),
        ("-c", getattr(args, "constraint", None)),
    ):
        for f in files or []:
            out += [flag, str(Path(f).absolute())]
    for link in getattr(args, "find_links", None) or []:
        out += ["--find-links", str(Path(link).absolute()) if "://" not in link else link]
    if getattr(args, "no_index", False):
        out.append("--no-index")
    if getattr(args, "no_deps", False):
        out.append("--no-deps")  # the plan of an install of the named items alone
    return out


@dataclass(frozen=True)
class PlannedEnvironment:
    """The environment before and after the installer's plan, and the plan's wheels as items."""

    plan: InstallPlan
    before: tuple[WheelFacts, ...]
    after: tuple[WheelFacts, ...]
    items: tuple[Item, ...]

    @property
    def changed(self) -> frozenset[str]:
        """Normalized names of every distribution the plan adds or replaces."""
        return self.plan.removed_names | {canonicalize_name(w.name) for w in self.plan.adds}

    @property
    def unread(self) -> list[tuple[str, str]]:
        return [(i.label, i.unread) for i in self.items if i.unread is not None]

    def to_json(self) -> dict[str, object]:
        return {
            **self.plan.to_json(),
            "read": [{"item": i.label, "filename": i.file.filename, "unread": i.unread} for i in self.items],
        }


def _local_path(url: str) -> Path | None:
    parts = urlsplit(url)
    return Path(unquote(parts.path)) if parts.scheme == "file" else None


def _from_find_links(wheel: PlannedWheel, links: Sequence[str], target: Target) -> Path | None:
    """The wheel of a find-links folder that an installer on ``target`` would take for ``wheel``."""
    from abiprobe.index.remote_items import pick_candidate
    from abiprobe.model.candidate import candidates_from_files

    files = [
        IndexFile(p.name, p.absolute().as_uri())
        for d in links
        if Path(d).is_dir()
        for p in sorted(Path(d).glob("*.whl"))
    ]
    listed, _ = candidates_from_files(files, wheel.name)
    if not listed:
        return None
    try:
        picked = pick_candidate(listed, f"{wheel.name}=={wheel.version}", None, target=target)
    except UsageError:
        return None
    return _local_path(picked.file.url)


def read_planned(wheel: PlannedWheel, source: ItemSource, target: Target, links: Sequence[str]) -> Item:
    """One wheel of the plan as an item: a local file as it is, a URL read by range, a bare
    name and version (uv) from the find-links folders, else looked up for the target."""
    local = _local_path(wheel.url) if wheel.url else None
    if local is None and wheel.url is None:
        local = _from_find_links(wheel, links, target)
    if local is not None:
        return resolve_item(str(local), source, target)
    if wheel.url is None:
        return resolve_item(f"{wheel.name}=={wheel.version}", source, target)
    name = wheel.filename or f"{wheel.name}-{wheel.version}.whl"
    file = IndexFile(name, wheel.url, {"sha256": wheel.sha256} if wheel.sha256 else {})
    try:
        return Item(wheel.label, "remote", file, WheelInfo.of(source.remote_facts(file)), loads=source)
    except UsageError:
        raise
    except Exception as exc:
        return Item(wheel.label, "remote", file, None, unread=str(exc), loads=source)


def planned_environment(
    args: argparse.Namespace, python: str, target: Target, source: ItemSource, prefer: str | None
) -> PlannedEnvironment:
    """Ask the installer about ``args.items`` for ``python`` and lay out the environment it leaves."""
    from abiprobe.model.stack import default_stack

    unread = default_stack().unread_sources()  # the plan is judged with the built-in stack
    installed: list[InstalledDist] = installed_distributions(python, unread_sources=unread)
    versions = {str(canonicalize_name(d.facts.metadata.name)): d.facts.metadata.version for d in installed}
    plan = ask_installer(python, args.items, versions, installer_options(args), prefer)
    links = [link for link in getattr(args, "find_links", None) or [] if "://" not in link]
    items = tuple(read_planned(w, source, target, links) for w in plan.adds)
    before = tuple(d.facts for d in installed)
    gone = plan.removed_names | {canonicalize_name(w.name) for w in plan.adds}
    kept = [f for f in before if canonicalize_name(f.metadata.name) not in gone]
    after = (*kept, *(i.facts for i in items if i.facts is not None))
    return PlannedEnvironment(plan, before, after, items)


def judged_names(env: PlannedEnvironment, target: Target, stack: Sequence[str]) -> list[str]:
    """What a plan's check judges: the stack, what the plan changes, and every distribution that
    requires a changed one (an upgraded torch concerns torchvision)."""
    changed = env.changed
    present: dict[str, str] = {canonicalize_name(f.metadata.name): f.metadata.name for f in env.after}
    names: set[str] = {canonicalize_name(n) for n in stack} | (changed & set(present))
    for f in env.after:
        reqs = applicable_requirements(f.metadata.requires_dist, target)
        if any(canonicalize_name(r.name) in changed for r in reqs):
            names.add(canonicalize_name(f.metadata.name))
    return sorted(present[n] for n in names if n in present)
