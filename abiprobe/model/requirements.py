"""Requires-Dist evaluated for a *target*, not this host: PEP 508 marker values and the entries that apply."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from email.parser import BytesParser

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement

from abiprobe.model.target import Target


def requires_dist_of(metadata: bytes) -> tuple[str, ...]:
    """The Requires-Dist entries of a METADATA file (its headers alone are read)."""
    return tuple(BytesParser().parsebytes(metadata, headersonly=True).get_all("Requires-Dist") or ())


def marker_environment(target: Target) -> dict[str, str]:
    """PEP 508 marker values of the *target* (not this host), for evaluating Requires-Dist."""
    full = f"{target.python[0]}.{target.python[1]}"
    impl = "cpython" if target.implementation == "cp" else "pypy"
    return {
        "python_version": full,
        "python_full_version": f"{full}.0",
        "implementation_name": impl,
        "platform_python_implementation": "CPython" if impl == "cpython" else "PyPy",
        "implementation_version": f"{full}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": target.machine,
        "platform_release": "",
        "platform_version": "",
        "extra": "",
    }


@functools.lru_cache(maxsize=16384)
def parse_requirement(text: str) -> Requirement | None:
    """One Requires-Dist entry parsed once per run (a solve meets the same few thousand many times)."""
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def applicable_requirements(
    requires_dist: Iterable[str], target: Target, extras: frozenset[str] = frozenset()
) -> tuple[Requirement, ...]:
    """Requires-Dist entries that apply on the target; unparsable ones are skipped. Without ``extras``
    those whose marker holds; with them only what those extras add (``extra == ...`` markers)."""
    env = marker_environment(target)
    return _applicable(tuple(requires_dist), extras, tuple(sorted(env.items())))


@functools.lru_cache(maxsize=4096)
def _applicable(
    texts: tuple[str, ...], extras: frozenset[str], env_items: tuple[tuple[str, str], ...]
) -> tuple[Requirement, ...]:
    env = dict(env_items)
    out: list[Requirement] = []
    for text in texts:
        req = parse_requirement(text)
        if req is not None and _applies(req, extras, env):
            out.append(req)
    return tuple(out)


def _applies(req: Requirement, extras: frozenset[str], env: dict[str, str]) -> bool:
    try:
        if not extras:
            return req.marker is None or req.marker.evaluate(env)
        return (
            req.marker is not None
            and "extra" in str(req.marker)
            and any(req.marker.evaluate({**env, "extra": e}) for e in sorted(extras))
        )
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False
