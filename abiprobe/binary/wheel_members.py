"""Where a wheel's members sit: its ``.dist-info`` directory, and where each member lands when installed."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from abiprobe.errors import WheelFormatError


def dist_info_dir(names: Iterable[str]) -> str:
    """The single top-level ``*.dist-info`` directory of a wheel's member list."""
    dirs = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info") and "/" in n}
    if len(dirs) != 1:
        found = ", ".join(sorted(dirs)) or "none"
        raise WheelFormatError(f"expected exactly one .dist-info directory, found {found}")
    return dirs.pop()


# site-packages of a POSIX environment, under the prefix its installer lays the other schemes out in
# (``<prefix>/lib/pythonX.Y/site-packages``; the name of the version folder never matters below)
_SITE = "/prefix/lib/python/site-packages"
# the prefix's folders each scheme of a wheel's ``.data`` directory installs into, as pip and uv do
_SCHEMES = {"data": "", "scripts": "bin"}
# a path relative to site-packages that leaves the prefix (four folders up, or more)
OUTSIDE_PREFIX = "../../../../"


def site_relative(path: str) -> str:
    """A path relative to site-packages, in one spelling per file: ``../..`` is ``<prefix>/lib``, so
    ``../../../lib/libtbb.so.12`` (up to the prefix, then down) is ``../../libtbb.so.12``, as RECORD
    writes it. Inside site-packages the path is only normalised."""
    norm = posixpath.normpath(path) if path else "."
    if not norm.startswith(".."):
        return norm
    return posixpath.relpath(posixpath.normpath(posixpath.join(_SITE, norm)), _SITE)


def in_prefix(path: str) -> bool:
    """Whether a site-relative path (:func:`site_relative`) is inside the environment's prefix."""
    return not path.startswith("/") and path != OUTSIDE_PREFIX[:-1] and not path.startswith(OUTSIDE_PREFIX)


def installed_path(member: str) -> str:
    """Where a wheel member lands relative to site-packages: ``*.data/purelib|platlib/`` unwrapped,
    ``*.data/data/lib/x`` at ``<prefix>/lib/x`` (``../../x``), ``*.data/scripts/x`` in ``<prefix>/bin``.
    A path that is installed already comes back as it is."""
    head, _, rest = member.partition("/")
    if head.endswith(".data") and rest:
        scheme, _, inner = rest.partition("/")
        if scheme in ("purelib", "platlib"):
            return inner
        if scheme in _SCHEMES and inner and ".." not in inner.split("/"):
            return site_relative(posixpath.join("../../..", _SCHEMES[scheme], inner))
    return member
