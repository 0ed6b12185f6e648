"""Probe an existing environment (``probe --installed``): import its stack in a clean subprocess.

Nothing is installed: the interpreter's own site-packages is imported from, optionally with extra
wheels unpacked into an overlay directory placed first on ``sys.path`` (a candidate tried on top of a
working stack). The driver stub is used only where the host has no driver and the stack needs one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import canonicalize_name

from abiprobe.binary.wheel import importable
from abiprobe.errors import UsageError
from abiprobe.host.installed import InstalledDist, installed_distributions
from abiprobe.model.stack import Stack
from abiprobe.probe.execute import PreparedSet, RunContext, run_fresh
from abiprobe.probe.model import ProbeOptions, ProbeResult, ProbeSet
from abiprobe.probe.parallel import dist_name, refuse_bomb
from abiprobe.probe.procs import ProcessRegistry
from abiprobe.probe.stub import build_stub, driver_symbols, host_has_driver, needs_driver
from abiprobe.probe.venv import unpack_wheel
from abiprobe.store.reads import cached_wheel_facts
from abiprobe.ui import interrupt

_RUNNER = Path(__file__).with_name("runner.py")
_PATHS = (
    "import json, sys, sysconfig; "
    "print(json.dumps([sysconfig.get_paths()['purelib'], sys.version.split()[0]]))"
)


def _site_of(python: str) -> tuple[Path, str]:
    try:
        out = subprocess.run(
            [python, "-I", "-c", _PATHS], capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"cannot run the interpreter {python}: {exc}") from None
    site, version = json.loads(out.stdout)
    return Path(site), str(version)


def installed_stack_order(python: str, stack: Stack) -> tuple[str, ...]:
    """What importing ``stack`` means in an environment: the top-level packages of its installed stack
    distributions, in stack member order (torch first), as probe jobs import a solved set."""
    installed = installed_distributions(python, unread_sources=None)
    members = [d.facts.metadata for d in installed if stack.role_of(d.facts.metadata.name) is not None]
    rank = {name: i for i, name in enumerate(stack.project_names())}
    members.sort(key=lambda m: rank.get(canonicalize_name(m.name), len(rank)))
    return tuple(dict.fromkeys(top for m in members for top in sorted(importable(m.top_level))))


def probe_environment(
    python: str,
    import_order: Sequence[str],
    options: ProbeOptions,
    overlay: Sequence[Path] = (),
    replacing: frozenset[str] | None = None,
    *,
    stack: Stack,
) -> ProbeResult:
    """Import ``import_order`` with ``python`` as installed (plus ``overlay`` wheels on top); with
    ``replacing`` (normalized names), as an install of the wheels would leave site-packages: those
    distributions' files gone, every other entry seen through the overlay (probe.overlay). What a read of
    the binaries (for a driver stub) leaves out follows ``stack``'s data."""
    for w in overlay:
        refuse_bomb(w)
    site, version = _site_of(python)
    installed = installed_distributions(python, unread_sources=None)
    unread = stack.unread_sources()
    wanted = set(import_order)
    may_stub = options.stub_driver == "always" or (options.stub_driver == "auto" and not host_has_driver())
    # the stub needs the driver symbols the stack's binaries import: only then are they read
    present = [
        d.with_binaries(unread) if may_stub else d.facts
        for d in installed
        if wanted & set(d.facts.metadata.top_level)
    ]
    extra = [cached_wheel_facts(w, unread_sources=unread) for w in overlay] if may_stub else []
    root = interrupt.temp_dir(options.temp_dir or Path(tempfile.gettempdir()), "abiprobe-env-")
    try:
        overlay_dir = root / "overlay" if overlay or replacing is not None else None
        if replacing is not None:
            assert overlay_dir is not None
            _installed_overlay(site, installed, replacing, overlay, root / "staged", overlay_dir)
        for w in overlay if replacing is None else ():
            assert overlay_dir is not None
            unpack_wheel(w, overlay_dir)
        stub = None
        facts = present + extra
        wants_stub = options.stub_driver == "always" or (may_stub and needs_driver(facts))
        if wants_stub:
            stub = build_stub(root / "stub", driver_symbols(facts), options.driver_version)
        label = f"installed ({python})" + (" + " + ", ".join(w.name for w in overlay) if overlay else "")
        probe = ProbeSet(tuple(overlay), tuple(import_order), label)
        names = {canonicalize_name(f.metadata.name) for f in present}
        names |= {canonicalize_name(dist_name(w)) for w in overlay}
        prepared = PreparedSet(
            0, probe, Path(python), site, overlay_dir, root / "set", tuple(sorted(names)), stub
        )
        ctx = RunContext(
            procs=ProcessRegistry(),
            runner=_RUNNER,
            options=options,
            interpreter=Path(python),
            python_label=version,
            installer="none (installed environment)",
            temp_root=root,
        )
        return run_fresh(ctx, prepared)
    finally:
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)
        interrupt.release(root)


def _installed_overlay(
    site: Path,
    installed: Sequence[InstalledDist],
    replacing: frozenset[str],
    wheels: Sequence[Path],
    staged: Path,
    dest: Path,
) -> None:
    from abiprobe.probe.overlay import link_site, move_into, relative_files

    written = [rel for w in wheels for rel in unpack_wheel(w, staged)]
    gone = [
        os.path.relpath(d.location / f, site)
        for d in installed
        if canonicalize_name(d.facts.metadata.name) in replacing
        for f in d.facts.files
    ]
    link_site(site, dest, relative_files([*gone, *written]))
    move_into(staged, dest, dict.fromkeys(written))
