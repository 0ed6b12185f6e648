"""The on-disk layout of ``wheel_index_cache/`` and the encoding of each kind of entry.

Every entry proves its own integrity: small JSON entries carry a ``digest`` of their canonical form,
framed entries (facts, metadata) a header line with the payload's sha256 and size, page bodies are
named by their sha256. Decoders raise ``CorruptEntryError`` or ``ForeignSchemaError``, nothing else.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from abiprobe.errors import CacheError
from abiprobe.model.facts import FACTS_SCHEMA_VERSION, SUMMARY_VERSION, WheelFacts, WheelSummary
from abiprobe.model.hosts import concrete, concrete_bytes, neutral, neutral_bytes
from abiprobe.store.primitives import (
    canonical_json,
    gzip_bytes,
    is_sha256_hex,
    plain,
    pretty_json,
    sha256_hex,
)

CACHE_SCHEMA_VERSION = 1

PAGES_DIR = "pages"
FACTS_DIR = "facts"
METADATA_DIR = "metadata"
HOSTS_FILE = "hosts.json"
LOCK_FILE = ".lock"
GITIGNORE_FILE = ".gitignore"
GITIGNORE_TEXT = b"# abiprobe cache: commit all but the lock and unfinished writes\n.lock\n.tmp-*.part\n"

PAGE_SUFFIX = ".json"
BODY_SUFFIX = ".body.gz"
FACTS_SUFFIX = ".facts.gz"
SUMMARY_SUFFIX = ".summary.gz"
ANALYSES_DIR = "analyses"
ANALYSIS_SUFFIX = ".analysis.gz"
METADATA_SUFFIX = ".metadata"

KINDS = ("pages", "bodies", "facts", "summaries", "analyses", "metadata", "hosts")
FACTS_HEADER_LIMIT = 4096


class CorruptEntryError(CacheError):
    """An entry's bytes do not prove themselves: drop it and treat it as a miss."""


class ForeignSchemaError(CacheError):
    """An entry written by another cache schema version: a miss, but not damage."""


@dataclass(frozen=True)
class PageRecord:
    """A page entry's metadata; the body lives in ``bodies/`` under ``body_sha256``."""

    url: str
    content_type: str
    etag: str | None
    last_modified: str | None
    fetched_at: float
    body_sha256: str
    body_size: int
    problems: bool = False  # the body parsed with problems: never reused without asking the index
    missing: bool = False  # the index answered 404/410: it does not list the project (empty body)


def _fanout(root: Path, kind: str, name: str, suffix: str) -> Path:
    return root / kind / name[:2] / f"{name}{suffix}"


def url_hash(url: str) -> str:
    return sha256_hex(url.encode("utf-8"))


def page_path(root: Path, url: str) -> Path:
    return _fanout(root, PAGES_DIR, url_hash(url), PAGE_SUFFIX)


def body_path(root: Path, url: str, body_sha256: str) -> Path:
    """Bodies sit beside their page, named by URL and content, so replacing one never touches another's."""
    return _fanout(root, PAGES_DIR, f"{url_hash(url)}.{body_sha256}", BODY_SUFFIX)


def facts_path(root: Path, sha256: str, rules: str = "") -> Path:
    """A wheel's facts, named by its sha256 and, for facts read under other rules than the built-in
    stack's, the key of those rules (``abiprobe.store.reads.read_rules_key``): ``<sha256>.<rules>``."""
    return _fanout(root, FACTS_DIR, facts_name(sha256, rules), FACTS_SUFFIX)


def summary_path(root: Path, sha256: str, rules: str = "") -> Path:
    """A wheel's summary sits beside its facts (named as they are): small enough to read on every solve."""
    return _fanout(root, FACTS_DIR, facts_name(sha256, rules), SUMMARY_SUFFIX)


def facts_name(sha256: str, rules: str) -> str:
    return f"{sha256}.{rules}" if rules else sha256


def split_facts_name(name: str) -> tuple[str, str]:
    """(sha256, rules) of a facts or summary entry's name (rules empty: the built-in stack's)."""
    sha, _, rules = name.partition(".")
    return sha, rules


def analysis_path(root: Path, key: str) -> Path:
    return _fanout(root, ANALYSES_DIR, key, ANALYSIS_SUFFIX)


def encode_analysis(key: str, verdicts: list[dict[str, Any]]) -> bytes:
    return gzip_bytes(_frame("analysis", key, canonical_json(verdicts)))


def decode_analysis(data: bytes, expected_key: str) -> list[dict[str, Any]]:
    header, payload = _unframe(_gunzip(data, "analysis"), "analysis")
    if header.get("key") != expected_key:
        raise CorruptEntryError("analysis entry is filed under another key")
    try:
        verdicts = json.loads(payload)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CorruptEntryError("analysis payload is not JSON") from exc
    if not isinstance(verdicts, list) or not all(isinstance(v, dict) for v in verdicts):
        raise CorruptEntryError("analysis payload is not a list of verdicts")
    return verdicts


def metadata_name(key: str) -> str:
    """A wheel sha256 names its metadata file directly; any other key (a URL) by its own sha256."""
    return key if is_sha256_hex(key) else sha256_hex(key.encode("utf-8"))


def metadata_path(root: Path, key: str) -> Path:
    return _fanout(root, METADATA_DIR, metadata_name(key), METADATA_SUFFIX)


def entry_name(path: Path, suffix: str) -> str:
    return path.name[: -len(suffix)] if path.name.endswith(suffix) else path.name


def _check_schema(header: dict[str, Any], kind: str) -> None:
    if header.get("kind") != kind:
        raise CorruptEntryError(f"expected a {kind} entry, found {header.get('kind')!r}")
    if header.get("schema") != CACHE_SCHEMA_VERSION:
        raise ForeignSchemaError(f"{kind} entry has cache schema {header.get('schema')!r}")


def _json_object(data: bytes, what: str) -> dict[str, Any]:
    """``data`` decoded as one JSON object; anything else is a corrupt entry, said as ``what`` is not."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CorruptEntryError(f"{what} is not JSON") from exc
    if not isinstance(value, dict):
        raise CorruptEntryError(f"{what} is not a JSON object")
    return value


def _seal(kind: str, body: dict[str, Any]) -> bytes:
    record = {"schema": CACHE_SCHEMA_VERSION, "kind": kind, **body}
    record["digest"] = sha256_hex(canonical_json(record))
    return pretty_json(record)


def _unseal(data: bytes, kind: str) -> dict[str, Any]:
    record = _json_object(data, f"{kind} entry")
    digest = record.pop("digest", None)
    if digest != sha256_hex(canonical_json(record)):
        raise CorruptEntryError(f"{kind} entry fails its digest")
    _check_schema(record, kind)
    return record


def _frame(kind: str, key: str, payload: bytes, **extra: Any) -> bytes:
    header = {
        **extra,
        "schema": CACHE_SCHEMA_VERSION,
        "kind": kind,
        "key": key,
        "sha256": sha256_hex(payload),
        "size": len(payload),
    }
    return canonical_json(header) + b"\n" + payload


def _unframe(data: bytes, kind: str) -> tuple[dict[str, Any], bytes]:
    line, newline, payload = data.partition(b"\n")
    if not newline:
        raise CorruptEntryError(f"{kind} entry has no header line")
    header = _json_object(line, f"{kind} entry header")
    _check_schema(header, kind)
    if header.get("size") != len(payload) or header.get("sha256") != sha256_hex(payload):
        raise CorruptEntryError(f"{kind} entry payload fails its checksum")
    return header, payload


def _gunzip(data: bytes, kind: str) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise CorruptEntryError(f"{kind} entry is not intact gzip data") from exc


def encode_page(record: PageRecord) -> bytes:
    return _seal("page", plain(replace(record, url=neutral(record.url))))


def decode_page(data: bytes, expected_url_hash: str) -> PageRecord:
    record = _unseal(data, "page")
    try:
        page = PageRecord(
            url=concrete(_typed(record["url"], str)),
            content_type=_typed(record["content_type"], str),
            etag=_optional_str(record["etag"]),
            last_modified=_optional_str(record["last_modified"]),
            fetched_at=float(_typed(record["fetched_at"], (int, float))),
            body_sha256=_typed(record["body_sha256"], str),
            body_size=_typed(record["body_size"], int),
            problems=record.get("problems") is True,
            missing=record.get("missing") is True,
        )
    except KeyError as exc:
        raise CorruptEntryError(f"page entry lacks {exc.args[0]!r}") from exc
    if url_hash(page.url) != expected_url_hash:
        raise CorruptEntryError("page entry is filed under another URL's name")
    if not is_sha256_hex(page.body_sha256):
        raise CorruptEntryError("page entry names no valid body")
    return page


def encode_body(body: bytes) -> bytes:
    return gzip_bytes(body)


def decode_body(data: bytes, expected_sha256: str) -> bytes:
    body = _gunzip(data, "body")
    if sha256_hex(body) != expected_sha256:
        raise CorruptEntryError("page body does not match its sha256")
    return body


def encode_facts(facts: WheelFacts, *, published: bool = False) -> bytes:
    """A facts entry; ``published``: marked as written by ``abiprobe cache publish`` (its header says the
    publisher, not this machine, checked the wheel's sha256)."""
    payload = canonical_json(plain(facts))
    extra: dict[str, Any] = {"partial": True} if facts.partial else {}
    if facts.verified:
        extra["verified"] = True
    if published:
        extra["published"] = True
    return gzip_bytes(_frame("facts", facts.sha256, payload, facts_schema=facts.schema_version, **extra))


def facts_header(path: Path, sha256: str) -> dict[str, Any] | None:
    """The header of a current-schema facts entry for ``sha256`` at ``path`` (its first line alone is
    inflated), or None: missing, damaged, foreign."""
    try:
        with gzip.open(path, "rb") as handle:
            line = handle.readline(FACTS_HEADER_LIMIT)
        header = json.loads(line.decode("utf-8"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError):
        return None
    if (
        isinstance(header, dict)
        and header.get("kind") == "facts"
        and header.get("schema") == CACHE_SCHEMA_VERSION
        and header.get("key") == sha256
        and header.get("facts_schema") == FACTS_SCHEMA_VERSION
    ):
        return header
    return None


def facts_entry_is_current(path: Path, sha256: str) -> bool:
    """Whether ``path`` already holds a current-schema entry for ``sha256`` with complete, verified facts,
    from its header alone (partial facts are replaced by whatever is stored next: a superset or complete
    facts; facts never checked against the wheel's sha256 by whatever was read since)."""
    header = facts_header(path, sha256)
    return header is not None and not header.get("partial") and header.get("verified") is True


def _framed_wheel_json(data: bytes, kind: str, expected_sha256: str) -> dict[str, Any]:
    """The JSON object of a facts or summary entry, its frame and schema checked."""
    header, payload = _unframe(_gunzip(data, kind), kind)
    if header.get("key") != expected_sha256:
        raise CorruptEntryError(f"{kind} entry is filed under another wheel's sha256")
    if header.get("facts_schema") != FACTS_SCHEMA_VERSION:
        raise ForeignSchemaError(f"{kind} entry has facts schema {header.get('facts_schema')!r}")
    raw = _json_object(payload, f"{kind} payload")
    if raw.get("schema_version") != FACTS_SCHEMA_VERSION:
        raise ForeignSchemaError(f"{kind} have schema_version {raw.get('schema_version')!r}")
    if raw.get("sha256") != expected_sha256:
        raise CorruptEntryError(f"{kind} describe another wheel")
    return raw


def decode_facts(data: bytes, expected_sha256: str) -> WheelFacts:
    raw = _framed_wheel_json(data, "facts", expected_sha256)
    try:
        return WheelFacts.from_json(raw)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise CorruptEntryError(f"facts payload does not fit WheelFacts: {exc}") from exc


def encode_summary(summary: WheelSummary) -> bytes:
    payload = canonical_json(plain(summary))
    return gzip_bytes(_frame("summary", summary.sha256, payload, facts_schema=summary.schema_version))


def decode_summary(data: bytes, expected_sha256: str) -> WheelSummary:
    raw = _framed_wheel_json(data, "summary", expected_sha256)
    if raw.get("summary_version") != SUMMARY_VERSION:
        raise ForeignSchemaError(f"summary has summary_version {raw.get('summary_version')!r}")
    try:
        return WheelSummary.from_json(raw)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise CorruptEntryError(f"summary payload does not fit WheelSummary: {exc}") from exc


def metadata_headers(data: bytes) -> bytes:
    """A METADATA file without its description (the body after the first blank line, and a
    ``Description:`` header with its continuation lines): nothing abiprobe reads, and third-party prose
    that would otherwise be committed with wheel_index_cache/."""
    head = data.replace(b"\r\n", b"\n").split(b"\n\n", 1)[0].rstrip(b"\n")
    kept: list[bytes] = []
    skipping = False
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t"):
            if not skipping:
                kept.append(line)
            continue
        skipping = line.lower().startswith(b"description:")
        if not skipping:
            kept.append(line)
    return b"\n".join(kept) + b"\n"


@dataclass(frozen=True)
class MetadataEntry:
    """A stored METADATA: ``directory_sha256`` the central directory it was range-read through (None: the
    wheel was hashed whole against its sha256); ``wheel_sha256``, in an entry kept by URL (a wheel listed
    without a sha256), the sha256 that URL's bytes had when they were hashed whole for their facts."""

    key: str
    data: bytes
    directory_sha256: str | None = None
    wheel_sha256: str | None = None


def encode_metadata(
    key: str, data: bytes, directory_sha256: str | None = None, wheel_sha256: str | None = None
) -> bytes:
    """METADATA headers (:func:`metadata_headers`), the default registry's hosts in project URLs stored as
    tokens, as pages are (``directory_sha256``, ``wheel_sha256``: see :class:`MetadataEntry`)."""
    extra = {"directory_sha256": directory_sha256} if directory_sha256 is not None else {}
    if wheel_sha256 is not None:
        extra["wheel_sha256"] = wheel_sha256
    return _frame("metadata", neutral(key), neutral_bytes(metadata_headers(data)), **extra)


def decode_metadata(data: bytes, expected_name: str) -> MetadataEntry:
    header, payload = _unframe(data, "metadata")
    key = header.get("key")
    key = concrete(key) if isinstance(key, str) else key
    if not isinstance(key, str) or metadata_name(key) != expected_name:
        raise CorruptEntryError("metadata entry is filed under another key's name")
    wheel = _optional_str(header.get("wheel_sha256"))
    if wheel is not None and not is_sha256_hex(wheel):
        raise CorruptEntryError("metadata entry names a wheel sha256 that is not one")
    return MetadataEntry(key, concrete_bytes(payload), _optional_str(header.get("directory_sha256")), wheel)


def encode_hosts(notes: dict[str, dict[str, Any]]) -> bytes:
    return _seal("hosts", {"hosts": notes})


def decode_hosts(data: bytes) -> dict[str, dict[str, Any]]:
    hosts = _unseal(data, "hosts").get("hosts")
    if not isinstance(hosts, dict) or not all(isinstance(v, dict) for v in hosts.values()):
        raise CorruptEntryError("hosts entry is not a mapping of host to notes")
    return hosts


def _typed(value: Any, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CorruptEntryError(f"unexpected value {value!r} in entry")
    return value


def _optional_str(value: Any) -> str | None:
    return None if value is None else _typed(value, str)
