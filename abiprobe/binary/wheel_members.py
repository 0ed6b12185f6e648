"""Where a wheel's members sit: its ``.dist-info`` directory, and where each member lands when installed."""

from __future__ import annotations

from collections.abc import Iterable

from abiprobe.errors import WheelFormatError


def dist_info_dir(names: Iterable[str]) -> str:
    """The single top-level ``*.dist-info`` directory of a wheel's member list."""
    dirs = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info") and "/" in n}
    if len(dirs) != 1:
        found = ", ".join(sorted(dirs)) or "none"
        raise WheelFormatError(f"expected exactly one .dist-info directory, found {found}")
    return dirs.pop()


def installed_path(member: str) -> str:
    """Where a wheel member lands relative to site-packages (``*.data/purelib|platlib/`` unwrapped)."""
    head, _, rest = member.partition("/")
    if head.endswith(".data") and rest:
        scheme, _, inner = rest.partition("/")
        if scheme in ("purelib", "platlib"):
            return inner
    return member
