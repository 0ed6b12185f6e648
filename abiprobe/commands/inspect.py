"""`abiprobe inspect TARGET`: loader facts and GPU code of a library, wheel, directory or installed dist."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from abiprobe.analyze.torch_abi import TorchRelease, wheel_torch_range
from abiprobe.analyze.torch_build import torch_linked
from abiprobe.analyze.variants import variant_document, variant_member
from abiprobe.commands.item_specs import Accepts
from abiprobe.commands.known_wheels import CACHED, add_torch_option
from abiprobe.commands.options import add_index_options, add_target_options, is_python_version, target_of
from abiprobe.model.cuda_arch import GpuArch, arch_verdict, parse_known_arch
from abiprobe.model.facts import ElfFacts, WheelFacts
from abiprobe.report.jsondoc import json_text

if TYPE_CHECKING:
    from abiprobe.commands.items import Item, ItemSource
    from abiprobe.model.target import Target

INSPECT_SCHEMA_VERSION = 1
INSPECT_KIND = "abiprobe-inspect"
INSPECT_ITEMS = Accepts(
    "inspect takes",
    ("file", "wheel", "directory", "name", "url", "pinned"),
    words={"file": "a .so or .cubin file", "name": "an installed distribution"},
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "inspect",
        help="show the loader facts and GPU code of a library, wheel, directory or installed distribution",
        description="TARGET is a .so/.cubin file, a .whl file, a directory, an installed distribution name, "
        "a wheel URL, or PROJECT==VERSION from the configured indexes.",
    )
    p.add_argument(
        "target",
        metavar="TARGET",
        help="a .so, .cubin, .whl, directory, installed distribution, URL or PROJECT==VERSION",
    )
    add_target_options(
        p,
        python_help="interpreter whose environment holds the installed distribution, or the target Python "
        "of a PROJECT==VERSION (3.12; default: this host's)",
        arch_help="GPU architecture to judge the GPU code against (sm120, sm_90a, 12.0 ...)",
        cuda=False,
        driver=False,
    )
    p.add_argument("--json", action="store_true", help="print all facts as JSON")
    p.add_argument("--symbols", action="store_true", help="also list every import and export (human output)")
    add_index_options(p, index_help="index to look PROJECT==VERSION up in (repeatable)")
    add_torch_option(p, f"Default: {CACHED}.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from abiprobe.commands.items import ItemSource

    arch = parse_known_arch(args.arch) if args.arch else None
    wanted = lookup_target(args)
    with ItemSource.of(args, progress=not args.json) as source:
        sources, item = resolve_target(args.target, args.python, source, wanted)
        releases: tuple[TorchRelease, ...] = ()
        if any(_needs_torch(f) for _, f in sources):  # torch's facts are large: read only when used
            from abiprobe.commands.known_wheels import torch_releases

            releases = torch_releases(args.torch or [CACHED], source, wanted)  # None: this host's wheels
        variants = {0: _variant_json(item, source)} if item is not None else {}
    doc = inspect_document(args.target, sources, arch, releases, variants)
    if args.json:
        sys.stdout.write(json_text(doc))
    else:
        from abiprobe.report.inspect_text import render_inspect
        from abiprobe.ui.console import make_console

        render_inspect(doc, make_console(), show_symbols=args.symbols)
    errors = sum(len(s["errors"]) for s in doc["sources"])
    return 1 if errors else 0


def lookup_target(args: argparse.Namespace) -> Target | None:
    """The target PROJECT==VERSION is looked up for: --python (a version) and --platform over this host;
    None (this host's best wheel) when neither is given."""
    from abiprobe.model.target import Target

    version = args.python if args.python and is_python_version(args.python) else None
    if version is None and args.platform is None:
        return None
    return target_of(args, python=version or Target.from_host().python_tag, base=Target.from_host())


def resolve_target(
    target: str, python: str | None, source: ItemSource, wanted: Target | None = None
) -> tuple[list[tuple[str, WheelFacts | ElfFacts]], Item | None]:
    """TARGET as (kind, facts) pairs, and the item when it names a wheel (a wheel file, a directory, a
    URL or PROJECT==VERSION, resolved for ``wanted``, else for this host)."""
    from abiprobe.commands.item_specs import InstalledSpec, LocalFileSpec, NameSpec
    from abiprobe.commands.items import facts_of, one_wheel

    spec = INSPECT_ITEMS.spec(target)
    if isinstance(spec, LocalFileSpec):
        return [("file", facts_of(spec, source, wanted))], None
    if isinstance(spec, NameSpec):
        interpreter = None if python is not None and is_python_version(python) else python
        found = facts_of(InstalledSpec(target, spec.requirement.name, interpreter), source, wanted)
        assert found.facts is not None  # installed facts are read whole
        return [("installed", found.facts)], None
    item = facts_of(one_wheel(spec, INSPECT_ITEMS), source, wanted, tolerate_unread=False)
    assert item.facts is not None  # an unread item raised
    return [(item.kind, item.facts)], item


def object_document(obj: ElfFacts, arch: GpuArch | None) -> dict[str, Any]:
    d = asdict(obj)
    d["cuda_majors"] = list(obj.cuda_majors())
    d["gpu_summary"] = gpu_summary(obj)
    if arch is not None and obj.gpu_code:
        v = arch_verdict(obj.gpu_code, arch)
        d["arch_verdict"] = {
            "arch": str(arch),
            "status": v.status,
            "explanation": v.explanation,
            "deciding": [g.label() for g in v.deciding],
        }
    else:
        d["arch_verdict"] = None
    return d


def _variant_json(item: Item, source: ItemSource) -> bytes | None:
    """The bytes of the wheel's ``*.dist-info/variant.json`` (by range for a remote wheel), if it has one."""
    assert item.facts is not None
    member = variant_member(item.facts.files)
    return None if member is None else source.member(item, member)


def _needs_torch(facts: WheelFacts | ElfFacts) -> bool:
    """A wheel other than torch with a library that needs torch's: the only kind with a torch range."""
    if not isinstance(facts, WheelFacts) or facts.metadata.name.lower() == "torch":
        return False
    return bool(torch_linked(facts))


def _torch_range(facts: WheelFacts, releases: Sequence[TorchRelease]) -> dict[str, Any] | None:
    if facts.metadata.name.lower() == "torch":
        return None
    found = wheel_torch_range(facts, releases)
    return None if found.kind == "none" else found.to_json()


def gpu_summary(obj: ElfFacts) -> dict[str, int]:
    """Count of GPU code entries per label (sm_90, sm_120a, compute_120 ...)."""
    return dict(sorted(Counter(g.label() for g in obj.gpu_code).items()))


def inspect_document(
    subject: str,
    sources: list[tuple[str, WheelFacts | ElfFacts]],
    arch: GpuArch | None,
    releases: Sequence[TorchRelease] = (),
    variant_json: dict[int, bytes | None] | None = None,
) -> dict[str, Any]:
    """The `--json` document: a schema version and, per source, its metadata and objects, and for a wheel
    linking torch the torch range its bytes allow against ``releases``."""
    out: list[dict[str, Any]] = []
    for i, (kind, facts) in enumerate(sources):
        if isinstance(facts, ElfFacts):
            out.append(
                {
                    "kind": kind,
                    "filename": facts.path,
                    "sha256": facts.sha256,
                    "size": facts.size,
                    "metadata": None,
                    "errors": [],
                    "objects": [object_document(facts, arch)],
                    "torch_range": None,
                    "variants": None,
                }
            )
        else:
            out.append(
                {
                    "kind": kind,
                    "filename": facts.filename,
                    "sha256": facts.sha256 or None,
                    "size": facts.size,
                    "metadata": asdict(facts.metadata),
                    "errors": list(facts.errors),
                    "objects": [object_document(o, arch) for o in facts.elf],
                    "torch_range": _torch_range(facts, releases),
                    "variants": variant_document(facts, (variant_json or {}).get(i)),
                }
            )
    return {
        "kind": INSPECT_KIND,
        "schema_version": INSPECT_SCHEMA_VERSION,
        "subject": subject,
        "arch": str(arch) if arch is not None else None,
        "sources": out,
    }
