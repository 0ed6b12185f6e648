"""A remote wheel named by URL or ``PROJECT==VERSION``: which index file it is for a target, its facts
(cache first) and its members by range. :mod:`abiprobe.commands.items` turns every item argument into one."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name

from abiprobe.errors import FetchError, UsageError
from abiprobe.index.multi import IndexOutcome
from abiprobe.model.candidate import Candidate, IndexFile
from abiprobe.model.target import Target
from abiprobe.net.http import Http
from abiprobe.store.cache import Cache


def index_file_from_url(url: str) -> IndexFile:
    """An IndexFile for a bare wheel URL; a ``#sha256=`` fragment becomes its hash."""
    parts = urlsplit(url)
    filename = unquote(posixpath.basename(parts.path))
    if not filename.endswith(".whl"):
        raise UsageError(f"{url}: not a wheel URL (expected a path ending in .whl)")
    hashes: dict[str, str] = {}
    if parts.fragment:
        algo, _, value = parts.fragment.partition("=")
        if value:
            hashes[algo] = value
    return IndexFile(filename=filename, url=url.split("#", 1)[0], hashes=hashes)


def pick_candidate(
    candidates: tuple[Candidate, ...],
    spec: str,
    prefer: Callable[[Candidate], bool] | None = None,
    *,
    target: Target | None = None,
    unread: Sequence[IndexOutcome] = (),
) -> Candidate:
    """The candidate an installer on ``target`` would take for ``name==version`` (none that installs
    there is a usage error); without a target, this host's best, else the first listed. With ``prefer``,
    a matching candidate it accepts (one whose facts are cached) comes first.

    ``unread``: the indexes that could not be read; with no match, the version may be on one of them, so
    that is an index error (exit 3), not a missing version (usage, exit 2)."""
    try:
        req = Requirement(spec)
    except InvalidRequirement as exc:
        raise UsageError(f"{spec}: not a requirement ({exc})") from None
    matching = [c for c in candidates if c.name == canonicalize_name(req.name) and c.version in req.specifier]
    if not matching and unread:
        why = "; ".join(f"{o.index}: {o.error}" for o in unread)
        raise FetchError(f"{spec}: not found, and {len(unread)} index(es) could not be read ({why})")
    if not matching:
        raise UsageError(f"{spec}: no wheel of that version on the configured indexes")
    if target is not None:
        fits = [c for c in matching if any(t in target.supported_tags() for t in c.tags)]
        if not fits:
            found = ", ".join(sorted({c.file.filename for c in matching})[:4])
            where = f"{target.python_tag} {target.platform}"
            raise UsageError(f"{spec}: no wheel of that version installs on {where} (found {found})")
        matching = fits
    if prefer is not None:
        matching = [c for c in matching if prefer(c)] or matching
    rank = {t: i for i, t in enumerate(target.supported_tags() if target is not None else sys_tags())}
    best = min(matching, key=lambda c: min((rank.get(t, len(rank)) for t in c.tags), default=len(rank)))
    return best


def remote_member(file: IndexFile, http: Http, cache: Cache, member: str) -> bytes:
    """One member of a remote wheel, read by range."""
    from abiprobe.net.remote_wheel import RemoteZip

    with RemoteZip(http, file.url, file.sha256, file.size, cache) as remote:
        return remote.read_members([member])[member].read()
