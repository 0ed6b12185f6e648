"""``probe --installed REQ...``: import the environment as the installer's dry run would leave it.

The plan's wheels (abiprobe.commands.installed_plan) are fetched hash-checked and unpacked into an
overlay placed first on ``sys.path``; what is imported is the installed stack, the plan's own packages,
then every installed distribution that requires one the plan changes (the ones the change may break).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from abiprobe.commands.installed_plan import PlannedEnvironment, planned_environment
from abiprobe.errors import UsageError
from abiprobe.model.candidate import IndexFile
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.target import Target

if TYPE_CHECKING:
    from abiprobe.net.http import Http


def _order(
    env: PlannedEnvironment, stack: tuple[str, ...], wheels: list[Path], target: Target
) -> tuple[str, ...]:
    from abiprobe.probe.parallel import wheel_tops

    order = list(stack)
    order += [top for w in wheels for top in wheel_tops(w)]
    changed = env.changed
    for facts in env.after:
        reqs = applicable_requirements(facts.metadata.requires_dist, target)
        if canonicalize_name(facts.metadata.name) not in changed and any(
            canonicalize_name(r.name) in changed for r in reqs
        ):
            order += sorted(facts.metadata.top_level)
    return tuple(dict.fromkeys(t for t in order if t.isidentifier()))


Fetch = Callable[[Path | None, IndexFile, str | None, Path, "Http | None"], Path]


def planned_overlay(
    args: argparse.Namespace, fetch: Fetch
) -> tuple[PlannedEnvironment, list[Path], tuple[str, ...]]:
    """The installer's plan for ``args.items``, its wheels as local files (``fetch``: probe's
    hash-checked fetch), and what to import."""
    from abiprobe.commands.items import ItemSource
    from abiprobe.commands.options import interpreter_version, target_of
    from abiprobe.probe.environment import installed_stack_order

    python = args.python or sys.executable
    target = target_of(args, python=interpreter_version(python))
    into = args.wheels_dir or Path(tempfile.gettempdir()) / "abiprobe-job-wheels"
    prefer = None if args.installer == "auto" else args.installer
    with ItemSource.of(args, progress=not args.json) as source:
        env = planned_environment(args, python, target, source, prefer)
        if env.unread:
            label, reason = env.unread[0]
            raise UsageError(f"{label}: cannot be installed, its wheel could not be read ({reason})")
        http = None if args.no_download else source.http
        wheels = [fetch(i.local, i.file, i.info.sha256 if i.info else None, into, http) for i in env.items]
    from abiprobe.model.stack import default_stack

    stack_order = installed_stack_order(python, default_stack())  # probe imports the built-in stack
    return env, wheels, _order(env, stack_order, wheels, target)
