"""`abiprobe check`: will this set of wheels (or an installed environment) load on the target?

Items are judged as pip would install them on the target: each PROJECT==VERSION looked up with the
target's tags, and the whole install closure (Requires-Dist with the target's markers, extras, the
runtime wheels torch pins) added and judged with them: every added wheel's metadata and file list, and
those of its libraries the loader reaches (torch's preloads, whatever a read object needs), not its own
extension modules; --no-deps judges the named items alone. With
--installed only the stack (torch, sgl-kernel, flashinfer and the distributions they require) is
judged; --all judges every extension, --package NAME chooses. With --installed REQ... the installer's
own dry run says what installing them there would change; the environment it leaves is judged and the
installed distributions it breaks are named (commands/check_plan). Items may also be ranges, bare names,
pylock.toml files and -r / -c files (commands/user_items).

The headline and the exit status follow what importing the packages does: the set's checks and the
units loaded at import. A unit loaded on first use that will not load (cupy's cuTENSOR module without
libcutensor) is listed under its own heading, "features that will not load", and sets bit 128 alone.

Exit status: 0 when importing passes every check (warnings allowed); 1 for an error, 2 for a usage error,
3 when an index could not be read or a wheel's bytes were not read (status unknown) and nothing failed;
otherwise the OR of these bits, one per failing check family:
4 a needed library (soname) is missing, 8 an undefined symbol, 16 a symbol version or driver API too new
for the target, 32 no GPU code for the target architecture, 64 metadata / tags / Requires-Dist / files
(a set a declared requirement blocks sets 64 alone; a set that loads where the target's system has a
library its profile lacks, status ``system``, sets 4 alone); and 128 when a feature loaded on first use
will not load (importing works). ``--json`` carries the set's overall ``status`` (every unit), its
``import_status`` (what the headline says) and ``features``: ok, warn, blocked, system, unknown or fail.
With --installed and neither --profile nor --platform the system is this host, as its loader finds
libraries (LD_LIBRARY_PATH, /etc/ld.so.cache, its system search path); a profile stands in for another.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName, canonicalize_name

from abiprobe.analyze.analysis import SetAnalysis, UnitAnalysis, analyze_set
from abiprobe.analyze.profiles import BUILTIN_PROFILES, Profile, builtin_profile, load_profile, profile_for
from abiprobe.analyze.torch_abi import TorchRelease
from abiprobe.commands.item_specs import Accepts
from abiprobe.commands.known_wheels import add_torch_option
from abiprobe.commands.options import add_index_options, add_target_options, interpreter_version, target_of
from abiprobe.errors import UsageError
from abiprobe.model.facts import WheelFacts
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import STATUS_ORDER
from abiprobe.report.check_text import render_check
from abiprobe.report.jsondoc import envelope, json_text
from abiprobe.ui.console import print_all

if TYPE_CHECKING:
    from abiprobe.commands.itemset import ItemSet
    from abiprobe.model.verdict import Verdict

EXIT_BITS: dict[str, int] = {
    "sonames": 4,
    "symbols": 8,
    "symbol_versions": 16,
    "driver": 16,
    "gpu_arch": 32,
    "metadata": 64,
    "tags": 64,
    "requires": 64,
    "files": 64,
}
EXIT_UNKNOWN = 3
CHECK_ITEMS = Accepts(
    "check takes",
    ("wheel", "directory", "url", "pinned", "name", "requirement", "requirements", "pylock"),
)
CHECK_KIND = "abiprobe-check"
EXIT_FEATURES = 128
_EPILOG = (
    "exit status (of importing the packages): 0 all checks pass (warnings allowed); 1 error; 2 usage; "
    "3 index unreachable or a wheel not read (status unknown); otherwise "
    "the OR of 4 missing soname, 8 undefined symbol, 16 symbol version or driver API too new, "
    "32 no GPU code for the arch, 64 metadata/tags/Requires-Dist/files (status system, loads where the "
    "target's system has a library its profile lacks: 4 alone); "
    "128 a feature loaded on first use will not load (importing works)."
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check",
        help="statically check that a set of wheels (or an installed environment) loads on a target",
        description="Simulate the dynamic loader over WHEEL_OR_REQ... and what pip would install beside them "
        "for the target, laid out as one site-packages, and explain every failure. Each item is a local "
        ".whl, a directory, a wheel URL or PROJECT==VERSION (looked up with the target's tags).",
        epilog=_EPILOG,
    )
    p.add_argument(
        "items",
        nargs="*",
        metavar="WHEEL_OR_REQ",
        help="wheel files, URLs, pylock.toml files or requirements (PROJECT==VERSION, ranges, bare names)",
    )
    p.add_argument(
        "--installed",
        action="store_true",
        help="check the environment of --python instead; with REQ...: as the installer's dry run of "
        "installing them there would leave it",
    )
    add_target_options(
        p,
        python_help="target Python (cp312, 3.12); with --installed: the interpreter PATH",
        arch_help="target GPU architecture (sm120, sm_90a, 12.0); default: none known",
    )
    p.add_argument(
        "--profile", help=f"system-library profile: a JSON file or one of {', '.join(BUILTIN_PROFILES)}"
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="with --installed: judge every extension of every distribution, not only the stack "
        "(torch, sgl-kernel, flashinfer and what they require)",
    )
    p.add_argument(
        "--package",
        action="append",
        default=None,
        metavar="NAME",
        help="judge only distribution NAME and what it requires (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    add_index_options(p, index_help="index to look PROJECT==VERSION up in (repeatable)")
    p.add_argument(
        "--no-deps",
        action="store_true",
        help="judge the named items alone, not what pip would install beside them for the target",
    )
    add_torch_option(p, "Default: the set's own torch.")
    from abiprobe.commands.installed_plan import add_plan_options
    from abiprobe.commands.user_items import add_requirement_options

    add_requirement_options(p)
    p.add_argument(
        "--installer",
        choices=("auto", "pip", "uv"),
        default="auto",
        help="with --installed REQ: whose dry run says what changes (auto: the user's installer)",
    )
    add_plan_options(p)
    p.set_defaults(func=run)


def exit_code(analysis: SetAnalysis) -> int:
    """The documented exit status: OR of the bits of every check that fails (or blocks) importing, 3
    when none does and importing is unknown, plus 128 when a feature loaded on first use fails."""
    code = 0
    for v in analysis.import_verdicts:
        if v.status in ("fail", "blocked"):
            code |= EXIT_BITS.get(v.check, 64)
        elif v.status == "system":
            code |= EXIT_BITS["sonames"]
    if code == 0 and analysis.import_status == "unknown":
        code = EXIT_UNKNOWN
    return code | (EXIT_FEATURES if analysis.features else 0)


def needs_torch(wheels: Sequence[WheelFacts]) -> bool:
    """Whether a wheel other than torch has a library that needs torch's: only then are the torch
    releases of ``--torch`` (large facts) read."""
    from abiprobe.analyze.torch_build import torch_linked

    return any(w.metadata.name.lower() != "torch" and torch_linked(w) for w in wheels)


def target_from_args(args: argparse.Namespace) -> Target:
    python = args.python
    if args.installed:
        python = interpreter_version(args.python or sys.executable)
    return target_of(args, python=python)


def profile_from_args(args: argparse.Namespace, target: Target) -> Profile:
    if args.profile:
        if args.profile in BUILTIN_PROFILES:
            return builtin_profile(args.profile)
        return load_profile(Path(args.profile))
    return profile_for(target.machine, target.glibc)


def on_this_host(args: argparse.Namespace) -> bool:
    """An installed environment judged for this machine: no --profile or --platform names another."""
    return bool(args.installed) and not args.profile and not args.platform


def targets_this_host(args: argparse.Namespace) -> bool:
    """A check of wheels or requirements naming neither ``--platform`` nor ``--profile``: its target is
    this machine, whose platform tag picked the wheels, so its own loader is the system they load on."""
    return not args.installed and not args.profile and not args.platform


def host_target_profile(wheels: Sequence[WheelFacts], target: Target, stand_in: Profile) -> Profile:
    """This host's loader as the system of a set checked for it: the libraries it really has, read as
    ld.so finds them (a library the platform tag does not promise, found here, is a warning, not a
    failure), the Python of the target's version that would run the set, and the CUDA driver the target
    names as the built-in profile of that platform assumes it."""
    from abiprobe.host.ldconfig import profile_from_host

    return profile_from_host(
        _needed(wheels), driver=stand_in.driver, interpreter=target_interpreter(target), stand_in=stand_in
    )


def _needed(wheels: Sequence[WheelFacts]) -> dict[str, None]:
    """Every soname the set's objects name in DT_NEEDED, in order, once."""
    return dict.fromkeys(n for w in wheels for e in w.elf for n in e.needed)


def target_interpreter(target: Target) -> str | None:
    """This host's CPython of the target's version: the one running abiprobe when it is that version,
    else ``pythonX.Y`` on PATH; None when there is none (whether it is a shared build is then not known)."""
    import shutil
    import subprocess

    if target.implementation != "cp":
        return None
    if sys.implementation.name == "cpython" and sys.version_info[:2] == target.python:
        return sys.executable
    found = shutil.which(f"python{target.python[0]}.{target.python[1]}")
    if found is None:
        return None
    try:  # the interpreter itself, not a launcher script in front of it (pyenv's shims)
        out = subprocess.run(
            [found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    real = out.stdout.strip()
    return real if out.returncode == 0 and real else None


def host_profile(wheels: Sequence[WheelFacts], python: str | None = None) -> Profile:
    """This host's loader as the system: every soname the environment's objects need, looked up as ld.so
    would (LD_LIBRARY_PATH, cache, system search path); one the environment also ships is still looked up,
    since its copy may be out of the needing object's search paths (a CUDA library of the host's toolkit)."""
    from abiprobe.host.ldconfig import profile_from_host

    return profile_from_host(_needed(wheels), interpreter=python or sys.executable)


def installed_wheels(args: argparse.Namespace) -> list[WheelFacts]:
    """Facts of every distribution installed for ``--python`` (``--installed``)."""
    from abiprobe.host.installed import installed_distributions

    unread = default_stack().unread_sources()  # check judges the built-in stack
    return [d.facts for d in installed_distributions(args.python, unread_sources=unread)]


def scoped(analysis: SetAnalysis, wheels: Sequence[WheelFacts], args: argparse.Namespace) -> SetAnalysis:
    """--package NAME: those distributions and their requirements; --installed alone: the default stack;
    --all (or wheel items): everything, failures outside the stack marked optional with --installed."""
    from packaging.utils import canonicalize_name

    from abiprobe.analyze.scope import mark_optional, requirement_closure, restrict, stack_roots

    present = {canonicalize_name(w.metadata.name) for w in wheels}
    if args.package:
        if args.all:
            raise UsageError("give either --all or --package, not both")
        absent = sorted(n for n in args.package if canonicalize_name(n) not in present)
        if absent:
            raise UsageError(f"--package {absent[0]}: not in the checked set")
        return restrict(analysis, wheels, requirement_closure(wheels, args.package, analysis.target))
    if not args.installed:
        return analysis
    stack = requirement_closure(wheels, stack_roots(wheels, default_stack()), analysis.target)
    if args.all:
        return mark_optional(analysis, wheels, stack)
    if not stack:
        raise UsageError(
            f"none of {', '.join(n for m in default_stack().members for n in m.names)} is installed: "
            "pass --all or --package NAME to choose what "
            "to check"
        )
    return restrict(analysis, wheels, stack)


def run(args: argparse.Namespace) -> int:
    target = target_from_args(args)
    profile = profile_from_args(args, target)
    from abiprobe.commands.user_items import user_items

    asked = bool(args.items or args.requirement or args.constraint)
    if args.installed and asked:
        return _run_planned(args, target, profile)
    if not args.installed and not (args.items or args.requirement):
        raise UsageError("nothing to check: give wheel files, URLs, requirements, -r FILE or --installed")
    releases: tuple[TorchRelease, ...] = ()
    items = None
    wants = user_items([CHECK_ITEMS.spec(t) for t in args.items], args, target, CHECK_ITEMS)
    with wants.source(args, progress=not args.json) as source:
        if not args.installed:
            from abiprobe.commands.itemset import gather

            items = gather(
                wants.exact,
                target,
                source,
                no_deps=args.no_deps,
                wanted=wants.wants(),
                options=wants.options(),
            )
        wheels = installed_wheels(args) if items is None else items.facts
        if args.torch and needs_torch(wheels):
            from abiprobe.commands.known_wheels import torch_releases

            releases = torch_releases(args.torch, source, target)  # the torch wheels the target would get
    if items is None:
        if on_this_host(args):
            profile = host_profile(wheels, args.python)
        analysis = scoped(analyze_set(wheels, target, profile, releases, stack=default_stack()), wheels, args)
    else:
        from abiprobe.analyze.analysis import with_unread

        if targets_this_host(args):
            profile = host_target_profile(wheels, target, profile)
        analysis = analyze_set(wheels, target, profile, releases, stack=default_stack())
        analysis = scoped(with_unread(analysis, items.unread), wheels, args)
        if items.closure_error is not None and items.closure_impossible:
            analysis = with_closure_error(analysis, items.closure_error, bool(items.index_trouble))
        if items.from_source:
            analysis = with_source_builds(analysis, items.from_source)
        if items.from_source_names:
            analysis = built_unsettled(analysis, items.from_source_names, wheels, target)
    if args.json:
        doc = analysis.to_json()
        doc["features"] = [feature_json(u) for u in analysis.features]
        # what was installed to judge (None: an existing environment was read)
        doc["install"] = {**items.to_json(), "closure": not args.no_deps} if items is not None else None
        sys.stdout.write(json_text(envelope(CHECK_KIND, doc)))
    else:
        print_all(render_check(analysis, items.added if items is not None else ()))
    code = exit_code(analysis)
    if code == EXIT_UNKNOWN:
        say_incomplete(analysis, items, args.json)
    return code


def feature_json(unit: UnitAnalysis) -> dict[str, object]:
    """A feature that will not load, as ``--json`` lists it: the unit, who loads it, the first reason."""
    worst_first = sorted(unit.verdicts, key=lambda v: -STATUS_ORDER[v.status])
    return {
        "path": unit.path,
        "dist": unit.dist,
        "status": unit.status,
        "where": unit.where,
        "explanation": worst_first[0].text if worst_first else "",
    }


def _run_planned(args: argparse.Namespace, target: Target, profile: Profile) -> int:
    """``--installed REQ...``: the environment the installer's dry run leaves (commands/check_plan)."""
    from abiprobe.commands.check_plan import dump, run_planned

    releases: tuple[TorchRelease, ...] = ()
    if args.torch:
        from abiprobe.commands.items import ItemSource
        from abiprobe.commands.known_wheels import torch_releases

        with ItemSource.of(args, progress=not args.json) as source:
            releases = torch_releases(args.torch, source, target)
    host = on_this_host(args)

    def profile_of(wheels: Sequence[WheelFacts]) -> Profile:
        return host_profile(wheels, python) if host else profile

    python = args.python or sys.executable
    analysis, plan = run_planned(args, python, target, profile_of, releases, scoped)
    if plan is not None:
        dump({**analysis.to_json(), "features": [feature_json(u) for u in analysis.features], "install": None,
              "plan": plan})  # fmt: skip
    return exit_code(analysis)


def say_incomplete(analysis: SetAnalysis, items: ItemSet | None, json_output: bool) -> None:
    """The one error line of an unknown answer, at every verbosity: the wheels not read, by host, the
    indexes that did not answer, else how many checks are unknown."""
    from abiprobe import log
    from abiprobe.report.incomplete import incomplete_line

    unread = items.unread_wheels() if items is not None else []
    indexes = list(items.index_trouble) if items is not None else []
    others = 1 if items is not None and items.closure_error and not items.closure_impossible else 0
    unknown = 0 if unread or indexes or others else sum(v.status == "unknown" for v in analysis.verdicts)
    where = "the --json output" if json_output else "the verdicts above"
    log.error(incomplete_line(unread, indexes, others, where, unknown=unknown))


def with_source_builds(analysis: SetAnalysis, lines: Sequence[str]) -> SetAnalysis:
    """Requirements no wheel for the target meets (sdist-only releases): pip builds them from source, the
    rest of the install is resolved without them, and nothing of what they build is judged (``warn``)."""
    from abiprobe.model.verdict import Verdict

    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    text = (
        f"{lines[0]}: no wheel for the target meets it, so pip builds it from its source distribution "
        f"where the index has one; what it builds is not judged{more}"
    )
    return _with_set_verdict(analysis, Verdict("requires", "warn", text, "set", {"from_source": list(lines)}))


def built_unsettled(
    analysis: SetAnalysis, built: Sequence[str], wheels: Sequence[WheelFacts], target: Target
) -> SetAnalysis:
    """A unit whose distribution requires a project pip builds from source (directly or through the
    set's others: torch-tensorrt's ``tensorrt``, whose build fetches the TensorRT libraries; a project
    whose every wheel is pure Python is not counted), or imports a module no wheel has: a library
    the loader does not find may be one that build installs, so a missing library, and the symbols it
    would have given, is not known (``unknown``, naming the build). A symbol missing from a load scope
    the set completes stays a failure (nothing built later joins that scope), and so does one a library
    of the scope exports under another signature (torch's, for an extension built against another
    torch): whatever the build installs, that import fails."""
    from dataclasses import replace

    from abiprobe.model.verdict import PROVIDED_CHECKS, unsettled_by

    needs = _requiring(wheels, {canonicalize_name(b) for b in built}, target)
    for name in _importing_absent(wheels):  # ``try: import tensorrt_libs`` where no wheel has it
        needs.setdefault(name, set()).update(built)
    units = []
    for u in analysis.units:
        owner = canonicalize_name(u.dist.split(" ")[0]) if u.dist else None
        missing = any(v.check == "sonames" and v.status in ("fail", "system") for v in u.verdicts)
        if owner not in needs or not missing:
            units.append(u)
            continue
        names = ", ".join(sorted(needs[owner]))
        verdicts = []
        for v in u.verdicts:
            if v.check == "symbols" and any(m.get("exported_by") for m in v.evidence.get("missing", ())):
                pass  # a library of the scope exports it under another signature: no build changes that
            elif v.status in ("fail", "system") and v.check in PROVIDED_CHECKS:
                v = unsettled_by(v, f"{names}, built from source, not judged", {"from_source": names})
            verdicts.append(v)
        units.append(replace(u, verdicts=tuple(verdicts)))
    return replace(analysis, units=tuple(units))


def _requiring(
    wheels: Sequence[WheelFacts], built: set[NormalizedName], target: Target
) -> dict[NormalizedName, set[str]]:
    """Each distribution of the set that requires a project of ``built``, directly or through the set's
    other distributions, with the projects it reaches."""
    from abiprobe.model.requirements import applicable_requirements

    requires = {
        canonicalize_name(w.metadata.name): {
            canonicalize_name(r.name) for r in applicable_requirements(w.metadata.requires_dist, target)
        }
        for w in wheels
    }
    reach: dict[NormalizedName, set[str]] = {}
    for name in requires:
        seen, todo, found = {name}, [name], set()
        while todo:
            for dep in requires.get(todo.pop(), ()):
                if dep in built:
                    found.add(str(dep))
                elif dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        if found:
            reach[name] = found
    return reach


def _importing_absent(wheels: Sequence[WheelFacts]) -> list[NormalizedName]:
    """The distributions whose Python imports a top-level module no wheel of the set installs and
    Python does not have: one a build from source may install."""
    from abiprobe.model.facts import all_events

    have = {f.split("/")[0].split(".")[0] for w in wheels for f in w.files}
    out = []
    for w in wheels:
        names = {
            e.target.split(".")[0]
            for m in w.python or ()
            for e in all_events((*m.events, *(x for f in m.functions for x in f.events)))
            if e.kind == "import" and not e.target.startswith(".")
        }
        if any(n and n != "*" and n not in have and n not in sys.stdlib_module_names for n in names):
            out.append(canonicalize_name(w.metadata.name))
    return out


def with_closure_error(analysis: SetAnalysis, error: str, index_trouble: bool) -> SetAnalysis:
    """A set whose install closure cannot be resolved: pip refuses it (``fail``); when an index did not
    answer, that is not known (``unknown``)."""
    from abiprobe.model.verdict import Verdict

    status = "unknown" if index_trouble else "fail"
    text = f"what pip would install beside the items cannot be resolved: {error}"
    return _with_set_verdict(analysis, Verdict("requires", status, text, "set"))  # type: ignore[arg-type]


def _with_set_verdict(analysis: SetAnalysis, verdict: Verdict) -> SetAnalysis:
    """``analysis`` with one more verdict about the set as a whole."""
    from dataclasses import replace

    return replace(analysis, set_verdicts=(*analysis.set_verdicts, verdict))
