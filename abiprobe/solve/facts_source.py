"""Facts for a listed wheel: the cache by sha256, else a range read of its members over HTTP, then stored.

Delegates to ``abiprobe.remote_inspect.wheel_facts_for`` when that module is present.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from abiprobe.cache import Cache
from abiprobe.errors import IndexError_
from abiprobe.facts import WheelFacts
from abiprobe.http import Http
from abiprobe.index.models import IndexFile
from abiprobe.remote import RemoteZip


def _remote_inspect() -> Callable[[IndexFile, Http, Cache | None], WheelFacts] | None:
    try:
        module = importlib.import_module("abiprobe.remote_inspect")
    except ModuleNotFoundError:
        return None
    fn = getattr(module, "wheel_facts_for", None)
    return fn if callable(fn) else None


def wheel_facts_for(file: IndexFile, http: Http, cache: Cache | None, *, offline: bool = False) -> WheelFacts:
    """Cached facts by sha256; otherwise (unless offline) read the wheel remotely and store them."""
    sha = file.sha256
    if cache is not None and sha:
        hit = cache.load_facts(sha)
        if hit is not None:
            return hit
    if offline:
        raise IndexError_(f"{file.filename}: facts not in the cache (offline)")
    delegate = _remote_inspect()
    if delegate is not None:
        return delegate(file, http, cache)
    with RemoteZip(http, file.url, sha, file.size, cache) as remote:
        facts = remote.facts(file.filename, sha)
    if cache is not None and facts.sha256:
        cache.store_facts(facts)
    return facts
