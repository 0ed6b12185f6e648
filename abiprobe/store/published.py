"""Published facts: a static tree of wheel facts whose sha256 was checked, that a new machine fetches
instead of reading every wheel cold (``abiprobe cache publish DIR`` writes it; solve, check and inspect
read it when a location is configured).

The tree holds ``manifest.json`` and, content-addressed as in the cache, ``facts/ab/<sha>.facts.gz``,
``metadata/ab/<sha>.metadata`` and stored verdicts ``analyses/ab/<key>.analysis.gz`` (keyed, as in the
cache, by a digest of the code, the wheels' sha256s and the target: another abiprobe never asks for
them). The manifest names each with the sha256 and size of its file. A fact file is used only for a
sha256 the user's own index lists, only when its bytes match the manifest and it describes that very
sha256; anything else is one warning line and the wheel is read as without published facts. Facts read
by range (never checked against the wheel's sha256) are not published, nor any verdict beside them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abiprobe import __version__
from abiprobe.errors import CacheError, UsageError
from abiprobe.installers.toml import project_settings
from abiprobe.model.facts import FACTS_SCHEMA_VERSION
from abiprobe.store import entries
from abiprobe.store.primitives import atomic_write, is_sha256_hex, is_temp_name, pretty_json, sha256_hex

PUBLISHED_ENV = "ABIPROBE_PUBLISHED_FACTS"
SETTING_KEY = "published-facts"
OFF_VALUES = frozenset({"off", "none", "no", "false", "0"})
NO_LOCATION = (
    f"no location configured, and abiprobe has no default: the project publishes its facts at no fixed "
    f"address yet; set {PUBLISHED_ENV} or published-facts in abiprobe.toml"
)
MANIFEST_NAME = "manifest.json"
MANIFEST_KIND = "abiprobe-published-facts"
MANIFEST_FORMAT = 1
MANIFEST_LIMIT = 64 << 20
KINDS = ("facts", "summaries", "metadata", "analyses")
_SUFFIXES = {
    "facts": entries.FACTS_SUFFIX,
    "summaries": entries.SUMMARY_SUFFIX,
    "metadata": entries.METADATA_SUFFIX,
    "analyses": entries.ANALYSIS_SUFFIX,
}


class ManifestError(Exception):
    """A manifest that cannot be used: its one line says why."""


@dataclass(frozen=True)
class PublishedSetting:
    """Where published facts are read from (None: nowhere) and which setting said so."""

    location: str | None
    origin: str

    def to_json(self) -> dict[str, str | None]:
        return {"value": self.location, "origin": self.origin}


def _as_location(value: str) -> str:
    """A URL as given; a path (no scheme) as its file:// URL; always ending in ``/``."""
    url = value if "://" in value else Path(value).expanduser().absolute().as_uri()
    return url if url.endswith("/") else url + "/"


def published_setting(
    *, disabled: bool = False, environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> PublishedSetting:
    """``--no-published-facts``, else $ABIPROBE_PUBLISHED_FACTS (a URL, a path or ``off``), else
    ``published-facts`` of abiprobe.toml / [tool.abiprobe]; there is no default location."""
    if disabled:
        return PublishedSetting(None, "--no-published-facts")
    env = os.environ if environ is None else environ
    raw: object = env.get(PUBLISHED_ENV)
    origin = PUBLISHED_ENV
    if raw is None or raw == "":
        settings, where = project_settings(cwd or Path.cwd())
        raw, origin = settings.get(SETTING_KEY), f"{where} {SETTING_KEY}"
        if raw is None:
            return PublishedSetting(None, NO_LOCATION)
        if not isinstance(raw, str):
            raise UsageError(f"{origin} must be a URL, a path or 'off'")
    text = str(raw).strip()
    if text.lower() in OFF_VALUES:
        return PublishedSetting(None, f"{origin} says off")
    return PublishedSetting(_as_location(text), origin)


# the tree


def _relative(kind: str, key: str) -> str:
    """Where a file of ``kind`` sits in the tree: derived from its key, never read from the manifest."""
    return f"{kind}/{key[:2]}/{key}{_SUFFIXES[kind]}"


@dataclass(frozen=True)
class PublishedFile:
    """One file of the tree as the manifest names it: the digest and size of its bytes."""

    sha256: str
    size: int
    partial: bool = False


@dataclass(frozen=True)
class Manifest:
    """The files a published tree holds, per wheel sha256 (per analysis key for stored verdicts, keyed
    by the code that made them, the wheels' sha256s and the target), and what made them."""

    facts: Mapping[str, PublishedFile]
    summaries: Mapping[str, PublishedFile]
    metadata: Mapping[str, PublishedFile]
    analyses: Mapping[str, PublishedFile]
    made_by: str = ""

    def of(self, kind: str) -> Mapping[str, PublishedFile]:
        found = {"facts": self.facts, "summaries": self.summaries, "metadata": self.metadata}
        return found.get(kind, self.analyses)

    def to_json(self) -> dict[str, Any]:
        def files(found: Mapping[str, PublishedFile]) -> dict[str, Any]:
            return {
                sha: {"sha256": f.sha256, "size": f.size, **({"partial": True} if f.partial else {})}
                for sha, f in sorted(found.items())
            }

        return {
            "kind": MANIFEST_KIND,
            "format": MANIFEST_FORMAT,
            "cache_schema": entries.CACHE_SCHEMA_VERSION,
            "facts_schema": FACTS_SCHEMA_VERSION,
            "made_by": self.made_by,
            **{kind: files(self.of(kind)) for kind in KINDS},
        }


def parse_manifest(data: bytes) -> Manifest:
    """A manifest's bytes as a ``Manifest``; ``ManifestError`` when they are not one this abiprobe reads."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ManifestError("the manifest is not JSON") from None
    if not isinstance(doc, dict) or doc.get("kind") != MANIFEST_KIND:
        raise ManifestError("the manifest is not an abiprobe published-facts manifest")
    made = (doc.get("format"), doc.get("cache_schema"), doc.get("facts_schema"))
    if made != (MANIFEST_FORMAT, entries.CACHE_SCHEMA_VERSION, FACTS_SCHEMA_VERSION):
        raise ManifestError(
            f"the manifest is of format {made[0]!r} with cache schema {made[1]!r} and facts schema "
            f"{made[2]!r}; this abiprobe reads {MANIFEST_FORMAT}, {entries.CACHE_SCHEMA_VERSION} and "
            f"{FACTS_SCHEMA_VERSION}"
        )
    found = {kind: _files(doc.get(kind, {}), kind) for kind in KINDS}
    made_by = str(doc.get("made_by", ""))
    return Manifest(found["facts"], found["summaries"], found["metadata"], found["analyses"], made_by)


def _files(value: object, kind: str) -> dict[str, PublishedFile]:
    if not isinstance(value, dict):
        raise ManifestError(f"the manifest's {kind} is not a mapping of sha256 to file")
    out = {}
    for sha, spec in value.items():
        ok = isinstance(spec, dict) and is_sha256_hex(str(sha)) and is_sha256_hex(str(spec.get("sha256")))
        size = spec.get("size") if isinstance(spec, dict) else None
        if not ok or not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ManifestError(f"the manifest's {kind} entry {str(sha)[:16]!r} is malformed")
        out[sha] = PublishedFile(spec["sha256"], size, spec.get("partial") is True)
    return out


# publishing


@dataclass(frozen=True)
class PublishReport:
    """What ``publish`` wrote: counts per kind, and the facts left out because they were range-read."""

    out: str
    facts: int
    metadata: int
    analyses: int
    unverified: int
    unusable: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "facts": self.facts,
            "metadata": self.metadata,
            "analyses": self.analyses,
            "unverified_left_out": self.unverified,
            "unusable_left_out": self.unusable,
            "bytes": self.bytes,
        }


def _published_facts(
    cache_root: Path,
) -> tuple[dict[str, bytes], dict[str, bytes], dict[str, bool], int, int]:
    """The facts entries to publish (re-encoded, marked published) and their summaries' entries, which
    are partial, and how many entries were left out as unverified and as damaged or of another schema."""
    out: dict[str, bytes] = {}
    summaries: dict[str, bytes] = {}
    partial: dict[str, bool] = {}
    unverified = unusable = 0
    for path in sorted((cache_root / entries.FACTS_DIR).glob(f"*/*{entries.FACTS_SUFFIX}")):
        sha, rules = entries.split_facts_name(entries.entry_name(path, entries.FACTS_SUFFIX))
        if rules:  # read under a stack file's rules: what is published is read under the built-in ones
            continue
        try:
            facts = entries.decode_facts(path.read_bytes(), sha) if is_sha256_hex(sha) else None
        except (OSError, CacheError):
            facts = None
        if facts is None:
            unusable += 1
        elif not facts.verified:
            unverified += 1
        else:
            out[sha] = entries.encode_facts(facts, published=True)
            summaries[sha] = entries.encode_summary(facts.summary())
            partial[sha] = facts.partial
    return out, summaries, partial, unverified, unusable


def _published_metadata(cache_root: Path) -> dict[str, bytes]:
    """METADATA entries kept under a wheel sha256 and read from the wheel hashed whole."""
    out: dict[str, bytes] = {}
    for path in sorted((cache_root / entries.METADATA_DIR).glob(f"*/*{entries.METADATA_SUFFIX}")):
        sha = entries.entry_name(path, entries.METADATA_SUFFIX)
        if not is_sha256_hex(sha):
            continue
        try:
            data = path.read_bytes()
            entry = entries.decode_metadata(data, sha)
        except (OSError, CacheError):
            continue
        if entry.key == sha and entry.directory_sha256 is None:
            out[sha] = data
    return out


def _published_analyses(cache_root: Path) -> dict[str, bytes]:
    """Stored verdicts, each keyed by a digest of the code, wheels and target it was made for."""
    out: dict[str, bytes] = {}
    for path in sorted((cache_root / entries.ANALYSES_DIR).glob(f"*/*{entries.ANALYSIS_SUFFIX}")):
        key = entries.entry_name(path, entries.ANALYSIS_SUFFIX)
        try:
            data = path.read_bytes()
            if is_sha256_hex(key):
                entries.decode_analysis(data, key)
                out[key] = data
        except (OSError, CacheError):
            continue
    return out


def publish(cache_root: Path, out: Path) -> PublishReport:
    """Write the published tree of ``cache_root``'s checked facts into ``out``: each file atomically, the
    manifest last (a reader sees the old tree or the new one), then files no longer listed removed."""
    facts, summaries, partial, unverified, unusable = _published_facts(cache_root)
    metadata = _published_metadata(cache_root)
    # a verdict's key does not say which wheels it judged: verdicts are published only from a cache
    # whose every facts entry was checked against its wheel's sha256
    analyses = _published_analyses(cache_root) if unverified == 0 else {}
    listed: dict[str, dict[str, PublishedFile]] = {kind: {} for kind in KINDS}
    for kind, found in (
        ("facts", facts),
        ("summaries", summaries),
        ("metadata", metadata),
        ("analyses", analyses),
    ):
        for sha, data in found.items():
            target = out / _relative(kind, sha)
            with contextlib.suppress(OSError):
                if target.read_bytes() == data:
                    listed[kind][sha] = PublishedFile(sha256_hex(data), len(data), partial.get(sha, False))
                    continue
            atomic_write(target, data)
            listed[kind][sha] = PublishedFile(sha256_hex(data), len(data), partial.get(sha, False))
    manifest = Manifest(
        listed["facts"],
        listed["summaries"],
        listed["metadata"],
        listed["analyses"],
        f"abiprobe {__version__}",
    )
    atomic_write(out / MANIFEST_NAME, pretty_json(manifest.to_json()))
    keep = {out / _relative(kind, sha) for kind in KINDS for sha in listed[kind]}
    for kind in KINDS:
        for path in (out / kind).glob("*/*"):
            if path not in keep and (path.name.endswith(_SUFFIXES[kind]) or is_temp_name(path.name)):
                path.unlink(missing_ok=True)
    size = sum(f.size for kind in KINDS for f in listed[kind].values())
    return PublishReport(str(out), len(facts), len(metadata), len(analyses), unverified, unusable, size)
