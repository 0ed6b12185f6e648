"""``check --installed REQ...``: "if I install this here, what changes, and does it still load?"

The installer's own dry run gives the change; the environment after it is judged as ``--installed``
judges one (the stack, what changed and what requires it; ``--all`` / ``--package`` as usual), and
the distributions it leaves in place but breaks are named, with the plan printed beside the verdict.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from abiprobe.analyze.analysis import SetAnalysis, analyze_set, with_unread
from abiprobe.analyze.change import BrokenDistribution, broken_by_change
from abiprobe.analyze.profiles import Profile
from abiprobe.analyze.torch_abi import TorchRelease
from abiprobe.commands.installed_plan import PlannedEnvironment, judged_names, planned_environment
from abiprobe.model.facts import WheelFacts
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

Scoper = Callable[[SetAnalysis, Sequence[WheelFacts], argparse.Namespace], SetAnalysis]


def _scope(
    scoped: Scoper,
    analysis: SetAnalysis,
    wheels: Sequence[WheelFacts],
    args: argparse.Namespace,
    names: Sequence[str],
) -> SetAnalysis:
    from packaging.utils import canonicalize_name

    if args.all or args.package:
        return scoped(analysis, wheels, args)
    present = {canonicalize_name(w.metadata.name) for w in wheels}
    chosen = [n for n in names if canonicalize_name(n) in present]
    if not chosen:
        return analysis
    return scoped(analysis, wheels, argparse.Namespace(**{**vars(args), "package": chosen}))


def plan_lines(env: PlannedEnvironment, broken: Sequence[BrokenDistribution]) -> list[str]:
    """The plan as text: what goes, what comes, what it breaks."""
    plan = env.plan
    lines = [
        f"{plan.installer} would change this environment ({len(plan.removes)} removed, "
        f"{len(plan.adds)} installed):"
    ]
    lines += [f"  - {n} {v}" for n, v in plan.removes]
    for item, wheel in zip(env.items, plan.adds, strict=True):
        state = f" (not read: {item.unread})" if item.unread else ""
        lines.append(f"  + {wheel.label}{state}")
    if not plan.adds:
        lines.append("  (nothing: the requirements are satisfied as installed)")
    if broken:
        lines.append(f"installed distributions the change breaks ({len(broken)}):")
        lines += [f"  ! {b.label}: {b.before} -> {b.after}: {b.why}" for b in broken]
    return lines


def run_planned(
    args: argparse.Namespace,
    python: str,
    target: Target,
    profile_of: Callable[[Sequence[WheelFacts]], Profile],
    releases: tuple[TorchRelease, ...],
    scoped: Scoper,
) -> tuple[SetAnalysis, dict[str, object] | None]:
    """Judge the environment the installer's plan leaves, cut to what it concerns as ``scoped`` (check's
    own) cuts an installed environment; print it (text) or return its JSON part."""
    from abiprobe.analyze.scope import stack_roots
    from abiprobe.commands.items import ItemSource
    from abiprobe.report.check_text import render_check
    from abiprobe.ui.console import print_all

    prefer = getattr(args, "installer", None)
    with ItemSource.of(args, progress=not args.json) as source:
        env = planned_environment(args, python, target, source, prefer)
    stack = default_stack()  # check judges the built-in stack
    names = judged_names(env, target, stack_roots(list(env.after), stack))
    profile = profile_of([*env.before, *env.after])  # one system for both sides of the change
    judged = with_unread(analyze_set(env.after, target, profile, releases, stack=stack), env.unread)
    after = _scope(scoped, judged, env.after, args, names)
    before = _scope(
        scoped, analyze_set(env.before, target, profile, releases, stack=stack), env.before, args, names
    )
    changed = {f"{w.name} {w.version}" for w in env.plan.adds}
    broken = broken_by_change(before, after, changed)
    if args.json:
        return after, {**env.to_json(), "broken": [b.to_json() for b in broken]}
    for line in plan_lines(env, broken):
        sys.stdout.write(line + "\n")
    print_all(render_check(after))
    return after, None


def dump(doc: dict[str, object]) -> None:
    """The check document in the one --json envelope every command writes."""
    from abiprobe.report.jsondoc import envelope, json_text

    sys.stdout.write(json_text(envelope("abiprobe-check", doc)))
