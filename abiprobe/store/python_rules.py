"""Stored facts whose Python was read under older rules (:data:`abiprobe.binary.pysource.READ_RULES`):
their ``.py`` members are read again, and the facts stored again, where the wheel can be read (a range read
of those members alone, or the local file); where it cannot (offline, the host unreachable, the served
file changed), they are used as they are, and one log line says so."""

from __future__ import annotations

import contextlib
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from abiprobe import log
from abiprobe.binary.pysource import READ_RULES
from abiprobe.binary.wheel import MAX_SOURCE_BYTES, python_members, with_python
from abiprobe.errors import AbiprobeError
from abiprobe.model.candidate import IndexFile
from abiprobe.model.facts import WheelFacts
from abiprobe.net.http import Http
from abiprobe.net.remote_wheel import RemoteZip
from abiprobe.store.cache import Cache


def stale(facts: WheelFacts) -> bool:
    """Whether ``facts`` hold Python read under older rules than today's."""
    return facts.python is not None and facts.python_rules < READ_RULES


def _as_stored(facts: WheelFacts, why: str) -> WheelFacts:
    log.warn(
        f"{facts.filename}: its Python was read under older rules (v{facts.python_rules}, now "
        f"v{READ_RULES}) and {why}: its loads are judged as stored"
    )
    return facts


def _keep(facts: WheelFacts, cache: Cache | None, rules: str) -> WheelFacts:
    if cache is not None and not cache.readonly and facts.sha256:
        try:
            cache.replace_facts(facts, rules=rules)
        except (OSError, AbiprobeError) as exc:
            log.warn(f"{facts.filename}: its Python, read again, could not be stored: {exc}")
    return facts


def remote_current(
    facts: WheelFacts,
    file: IndexFile,
    http: Http,
    cache: Cache | None,
    *,
    offline: bool,
    unread_sources: frozenset[str],
    rules: str,
) -> WheelFacts:
    """``facts`` of a listed wheel with their Python read again when it was read under older rules."""
    if not stale(facts):
        return facts
    if offline:
        return _as_stored(facts, "--offline forbids reading it again")
    try:
        with RemoteZip(http, file.url, file.sha256, file.size, cache) as remote:
            names = remote.names()
            served = remote.directory_sha256
            if facts.directory_sha256 is not None and served not in (None, facts.directory_sha256):
                return _as_stored(facts, "the server now serves another file under its name")
            wanted = python_members(names, unread_sources)
            fetched = remote.read_members(wanted) if wanted else {}
            members = {n: fh.read() for n, fh in fetched.items()}

            @contextlib.contextmanager
            def open_member(name: str) -> Iterator[BinaryIO]:  # a small data file the code reads
                if name in members:
                    yield io.BytesIO(members[name])
                else:
                    yield remote.read_members([name])[name]  # type: ignore[misc]

            again = with_python(facts, members, names, open_member)
    except (OSError, AbiprobeError) as exc:
        return _as_stored(facts, f"cannot be read again ({exc})")
    return _keep(again, cache, rules)


def local_current(
    facts: WheelFacts, path: Path, cache: Cache | None, *, unread_sources: frozenset[str], rules: str
) -> WheelFacts:
    """``facts`` of a local wheel with their Python read again when it was read under older rules."""
    if not stale(facts):
        return facts
    try:
        with zipfile.ZipFile(path) as zf:
            every = zf.namelist()
            wanted = python_members(every, unread_sources)
            names = [n for n in wanted if zf.getinfo(n).file_size <= MAX_SOURCE_BYTES]
            members = {n: zf.read(n) for n in names}

            @contextlib.contextmanager
            def open_member(name: str) -> Iterator[BinaryIO]:  # a small data file the code reads
                with zf.open(name) as fh:
                    yield fh  # type: ignore[misc]

            again = with_python(facts, members, every, open_member)
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        return _as_stored(facts, f"cannot be read again ({exc})")
    return _keep(again, cache, rules)


__all__ = ["local_current", "remote_current", "stale"]
