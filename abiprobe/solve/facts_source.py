"""Facts for a listed wheel: the cache by sha256, else a range read of its members over HTTP, then stored.

A solve asks for :func:`wheel_info_for`: the wheel's small summary, with the full facts (symbol tables,
GPU code) loaded only if an analysis that is not stored yet needs them.
"""

from __future__ import annotations

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
