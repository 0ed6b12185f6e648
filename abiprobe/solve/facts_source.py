"""Facts for a listed wheel: the cache by sha256, else a range read of its members over HTTP, then stored.

A solve asks for :func:`wheel_info_for`: the wheel's small summary, with the full facts (symbol tables,
GPU code) loaded only if an analysis that is not stored yet needs them.
"""

from __future__ import annotations

from collections.abc import Callable

from abiprobe.cache import Cache
from abiprobe.errors import IndexError_
from abiprobe.facts import WheelFacts, WheelInfo
from abiprobe.http import Http
from abiprobe.index.models import IndexFile
from abiprobe.remote import RemoteZip
from abiprobe.wheel import dist_info_dir


def wheel_facts_for(file: IndexFile, http: Http, cache: Cache | None, *, offline: bool = False) -> WheelFacts:
    """Cached facts by sha256; otherwise (unless offline) read the wheel remotely and store them."""
    sha = file.sha256
    if cache is not None and sha:
        hit = cache.load_facts(sha)
        if hit is not None:
            return hit
    if offline:
        raise IndexError_(f"{file.filename}: facts not in the cache (offline)")
    with RemoteZip(http, file.url, sha, file.size, cache) as remote:
        facts = remote.facts(file.filename, sha)
    if cache is not None and facts.sha256:
        cache.store_facts(facts)
    return facts


def wheel_info_for(file: IndexFile, http: Http, cache: Cache | None, *, offline: bool = False) -> WheelInfo:
    """The cached summary when there is one (full facts deferred); else the full facts, summarised."""
    sha = file.sha256
    if cache is not None and sha:
        summary = cache.load_summary(sha)
        if summary is not None:
            return WheelInfo(summary, load=lambda: cache.load_facts(sha))
    facts = wheel_facts_for(file, http, cache, offline=offline)
    if cache is not None and facts.sha256:
        cache.store_summary(facts.summary())
    return WheelInfo.of(facts)


def runtime_info_for(
    file: IndexFile, http: Http, cache: Cache | None, read: Callable[[str], bool], *, offline: bool = False
) -> WheelInfo:
    """A runtime wheel's facts with at least the binaries ``read`` accepts (installed paths) read.

    The loader reaches a few libraries of a runtime wheel (cuDNN's loader, not its dlopen'd engines), so a
    cold solve fetches only those members; what is known already is reused, and what is learned is merged
    into the stored (partial) facts. Complete facts, when stored, serve every ``read``."""
    sha = file.sha256
    known = None
    if cache is not None and sha:
        summary = cache.load_summary(sha, allow_partial=True)
        if summary is not None and not any(read(p) for p in summary.unread):
            return WheelInfo(summary, load=lambda: cache.load_facts(sha, allow_partial=True))
        known = cache.load_facts(sha, allow_partial=True)
        if known is not None and not any(read(p) for p in known.unread):
            cache.store_summary(known.summary())
            return WheelInfo.of(known)
    if offline:
        raise IndexError_(f"{file.filename}: facts not in the cache (offline)")
    wanted = set(known.unread) if known is not None else None

    def more(path: str) -> bool:
        return read(path) and (wanted is None or path in wanted)

    with RemoteZip(http, file.url, sha, file.size, cache) as remote:
        facts = remote.facts(file.filename, sha, more)
    if known is not None:
        facts = known.merged(facts)
    if cache is not None and facts.sha256:
        cache.store_facts(facts)
    return WheelInfo.of(facts)


def wheel_metadata_for(file: IndexFile, http: Http, cache: Cache | None, *, offline: bool = False) -> bytes:
    """A wheel's METADATA when its index offers no PEP 658 file: the cache, else one member range-read
    from the wheel (a few kB of a possibly huge file), stored under the wheel's sha256 or URL."""
    key = file.sha256 or file.url
    if cache is not None:
        hit = cache.load_metadata(key)
        if hit is not None:
            return hit
    if offline:
        raise IndexError_(f"{file.filename}: metadata not in the cache (offline)")
    with RemoteZip(http, file.url, file.sha256, file.size, cache) as remote:
        member = f"{dist_info_dir(remote.names())}/METADATA"
        data = remote.read_members([member])[member].read()
    if cache is not None:
        cache.store_metadata(key, data)
    return data
