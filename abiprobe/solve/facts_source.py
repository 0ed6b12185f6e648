"""Facts for a listed wheel: the cache by sha256, else a range read of its members over HTTP, then stored.

A solve asks for :func:`wheel_info_for`: the wheel's small summary, with the full facts (symbol tables,
GPU code) loaded only if an analysis that is not stored yet needs them.
"""

from __future__ import annotations

from collections.abc import Callable

from abiprobe.analyze.loader import PRELOADED
from abiprobe.binary.wheel_members import dist_info_dir
from abiprobe.errors import NotCachedError
from abiprobe.facts import WheelFacts, WheelInfo, WheelSummary
from abiprobe.model.candidate import IndexFile
from abiprobe.net.http import Http
from abiprobe.net.remote_wheel import RemoteZip, remote_wheel_facts, trusted
from abiprobe.store.cache import Cache


def wheel_facts_for(file: IndexFile, http: Http, cache: Cache | None, *, offline: bool = False) -> WheelFacts:
    """Cached facts by sha256; otherwise (unless offline) read the wheel remotely and store them."""
    return remote_wheel_facts(http, file, cache, offline=offline)


def _facts_like(cache: Cache, sha: str, summary: WheelSummary) -> WheelFacts | None:
    """The full facts a trusted summary was made from (read through the same directory), else None."""
    facts = cache.load_facts(sha, allow_partial=summary.partial, allow_unverified=True)
    same = facts is not None and facts.directory_sha256 == summary.directory_sha256
    return facts if same and facts is not None and facts.verified == summary.verified else None


def wheel_info_for(file: IndexFile, http: Http, cache: Cache | None, *, offline: bool = False) -> WheelInfo:
    """The cached summary when there is one (full facts deferred); else the full facts, summarised."""
    sha = file.sha256
    if cache is not None and sha:
        summary = cache.load_summary(sha, allow_unverified=True)
        if summary is not None and trusted(summary, http, file, cache, offline=offline):
            return WheelInfo(summary, load=lambda: _facts_like(cache, sha, summary))
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
        summary = cache.load_summary(sha, allow_partial=True, allow_unverified=True)
        if (
            summary is not None
            and not any(read(p) for p in summary.unread)
            and trusted(summary, http, file, cache, offline=offline)
        ):
            return WheelInfo(summary, load=lambda: _facts_like(cache, sha, summary))
        known = cache.load_facts(sha, allow_partial=True, allow_unverified=True)
        if known is not None and not trusted(known, http, file, cache, offline=offline):
            known = None
        if known is not None and not any(read(p) for p in known.unread):
            cache.store_summary(known.summary())
            return WheelInfo.of(known)
    if offline:
        raise NotCachedError(f"{file.filename}: facts not in the cache (offline)")
    wanted = set(known.unread) if known is not None else None

    def more(path: str) -> bool:
        return read(path) and (wanted is None or path in wanted)

    with RemoteZip(http, file.url, sha, file.size, cache) as remote:
        if file.duplicate:
            remote.open_full()
        facts = remote.facts(file.filename, sha, more, tables_only=no_gpu_verdict)
    # what was known is kept unless the server changed the file between the two reads
    if known is not None and known.directory_sha256 in (None, facts.directory_sha256):
        facts = known.merged(facts)
    if cache is not None and facts.sha256:
        cache.store_facts(facts)
    return WheelInfo.of(facts)


def no_gpu_verdict(path: str) -> bool:
    """Whether no GPU-code verdict looks at the runtime library installed at ``path``: only the units
    (libraries torch preloads) are judged for their GPU code, what they need by DT_NEEDED is not."""
    return not PRELOADED.match(path)


def wheel_metadata_for(file: IndexFile, http: Http, cache: Cache | None, *, offline: bool = False) -> bytes:
    """A wheel's METADATA when its index offers no PEP 658 file: the cache, else one member read from the
    wheel (a few kB of a possibly huge file), stored under the wheel's sha256 or URL. A member range-read
    from a wheel that was not hashed whole is kept with its central directory's sha256, and reused only
    while the server serves that directory."""
    key = file.sha256 or file.url
    entry = cache.load_metadata_entry(key) if cache is not None else None
    if entry is not None and (entry[1] is None or offline):
        return entry[0]
    if offline:
        raise NotCachedError(f"{file.filename}: metadata not in the cache (offline)")
    with RemoteZip(http, file.url, file.sha256, file.size, cache) as remote:
        member = f"{dist_info_dir(remote.names())}/METADATA"
        if entry is not None and entry[1] == remote.directory_sha256:
            return entry[0]
        verify = file.sha256 is not None and remote.should_verify([member])
        data = remote.read_members([member], verify=verify)[member].read()
        directory = None if remote.sha256 is not None and file.sha256 else remote.directory_sha256
    if cache is not None:
        cache.store_metadata(key, data, directory_sha256=directory)
    return data
