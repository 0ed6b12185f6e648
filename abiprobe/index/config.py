"""Which indexes to read: CLI, then environment, then abiprobe.toml / [tool.abiprobe], then the installer's.

Without an index of abiprobe's own (``--index``, ``ABIPROBE_INDEX_URL``, ``index-url``), the indexes and
find-links are the user's installer's (abiprobe.installers.indexes: pip's whole configuration, else uv's),
else pip's own built-in default read at run time; no index host is written here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal, cast
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name

from abiprobe.errors import UsageError
from abiprobe.installers.indexes import INSTALLERS, InstallerIndexes, installer_indexes
from abiprobe.installers.install_settings import PIP_KEYS, InstallSettings, install_settings
from abiprobe.installers.pip import pip_settings
from abiprobe.installers.toml import project_settings
from abiprobe.model.target import Target
from abiprobe.net.http import display_url
from abiprobe.solve.candidates import FilterOptions
from abiprobe.solve.install_rules import install_rules

Strategy = Literal["first-index", "best-match"]
STRATEGIES: tuple[Strategy, ...] = ("first-index", "best-match")
SourceKind = Literal["simple", "find-links"]


@dataclass(frozen=True)
class IndexSource:
    """One place to look: a simple-API root or a flat find-links page."""

    url: str
    name: str = ""
    kind: SourceKind = "simple"
    origin: str = field(default="", compare=False)  # where the setting that names it came from
    # sources of one pool are merged even under first-index: pip treats its index-url, extra-index-urls
    # and find-links as one set of places and takes the best candidate among all of them
    pool: str = field(default="", compare=False)

    @property
    def label(self) -> str:
        return self.name or display_url(self.url)

    def matches(self, ref: str) -> bool:
        """Whether a pin's value (an index name or URL) designates this source."""
        return ref == self.name or display_url(ref).rstrip("/") == display_url(self.url).rstrip("/")


@dataclass(frozen=True)
class IndexConfig:
    """Ordered sources, the multi-index strategy and per-project pins, with where each came from."""

    sources: tuple[IndexSource, ...]
    strategy: Strategy = "first-index"
    pins: Mapping[str, str] = field(default_factory=dict)
    origins: tuple[str, ...] = ()
    installer: str = ""  # whose configuration gave the indexes (pip, uv), when abiprobe's did not
    install: InstallSettings = field(default_factory=lambda: InstallSettings("pip"))

    def filter_options(
        self, target: Target, *, pre: bool = False, exclude_newer: datetime | None = None
    ) -> FilterOptions:
        """Candidate filtering with the installer's constraints and overrides that apply on ``target``."""
        return FilterOptions(
            pre=pre,
            exclude_newer=exclude_newer,
            constraints=install_rules(((s.value, s.origin) for s in self.install.constraints), target),
            overrides=install_rules(((s.value, s.origin) for s in self.install.overrides), target),
        )


# uv's index strategies as abiprobe's: unsafe-first-match takes every index's versions as best-match does
# (uv prefers the first index with a compatible version; abiprobe judges them all and says so)
UV_STRATEGY = {
    "first-index": "first-index",
    "unsafe-best-match": "best-match",
    "unsafe-first-match": "best-match",
}


def whose_settings(
    environ: Mapping[str, str], cwd: Path, found: InstallerIndexes | None, prefer: str | None
) -> InstallSettings:
    """The install settings of the installer whose indexes were read, else the one named, else pip's when
    pip sets any, else uv's when uv sets any, else pip's (empty)."""
    if found is not None and found.installer in INSTALLERS:
        return install_settings(environ, cwd, found.installer)
    if prefer in INSTALLERS:
        return install_settings(environ, cwd, str(prefer))
    if any(k in PIP_KEYS for k in pip_settings(environ)):
        return install_settings(environ, cwd, "pip")
    uv = install_settings(environ, cwd, "uv")
    return uv if uv != InstallSettings("uv") else InstallSettings("pip")


def default_index(environ: Mapping[str, str], cwd: Path) -> tuple[str, str]:
    """The user's default index (the installer's last, primary one) and where it was found."""
    found = installer_indexes(environ, cwd)
    if not found.indexes:
        raise UsageError("the installer configuration says no-index: pass --index-url URL")
    return found.indexes[-1].value, found.indexes[-1].origin


def _as_list(value: object, key: str, origin: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise UsageError(f"{origin}: {key} must be a string or a list of strings")


def _source_name(url: str) -> str:
    parts = urlsplit(display_url(url))
    return f"{parts.netloc}{parts.path}".rstrip("/")


def _source(url: str, origin: str, kind: SourceKind = "simple", pool: str = "") -> IndexSource:
    return IndexSource(url=url, name=_source_name(url), kind=kind, origin=origin, pool=pool)


def _installer_pool(installer: str) -> str:
    """pip merges all its indexes and find-links (no index order); uv's indexes keep uv's own first-index."""
    return "pip" if installer == "pip" else ""


def load_index_config(
    *,
    cli_indexes: Sequence[str] = (),
    cli_extra_indexes: Sequence[str] = (),
    cli_find_links: Sequence[str] = (),
    cli_strategy: str | None = None,
    cli_pins: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    default_extras: Sequence[str] = (),
    default_extras_origin: str = "abiprobe's defaults",
) -> IndexConfig:
    """Sources in lookup order: named ``indexes``, extras, then the primary index(es), then find-links.

    ``--index`` on the command line, ABIPROBE_INDEX_URL or ``index-url`` of abiprobe's settings (the CLI
    winning over the environment, the environment over the file) replace the installer's indexes and
    find-links; without any of them, the installer's whole index configuration is read.
    """
    env = os.environ if environ is None else environ
    here = cwd or Path.cwd()
    settings, settings_origin = project_settings(here)
    origin = settings_origin or "abiprobe settings"
    installer: InstallerIndexes | None = None
    prefer = env.get("ABIPROBE_INSTALLER") or settings.get("installer")
    if cli_indexes:
        primary = [_source(u, "--index") for u in cli_indexes]
    elif env.get("ABIPROBE_INDEX_URL"):
        primary = [_source(u, "ABIPROBE_INDEX_URL") for u in env["ABIPROBE_INDEX_URL"].split()]
    elif settings.get("index-url"):
        primary = [
            _source(u, f"{origin} index-url") for u in _as_list(settings["index-url"], "index-url", origin)
        ]
    else:
        installer = installer_indexes(env, here, str(prefer) if prefer else None)
        pool = _installer_pool(installer.installer)
        primary = [_source(s.value, s.origin, pool=pool) for s in installer.indexes]
    origins = [f"primary index {s.url} from {s.origin}" for s in primary[-1:]]
    if installer is not None:
        origins = [f"indexes from {installer.installer}'s configuration", *installer.notes]
    extras = [_source(u, "--extra-index") for u in cli_extra_indexes]
    extras += [_source(u, default_extras_origin) for u in default_extras]
    extras += [
        _source(u, "ABIPROBE_EXTRA_INDEX_URL") for u in env.get("ABIPROBE_EXTRA_INDEX_URL", "").split()
    ]
    extras += [
        _source(u, f"{origin} extra-index-url")
        for u in _as_list(settings.get("extra-index-url"), "extra-index-url", origin)
    ]
    named: list[IndexSource] = []
    for entry in settings.get("indexes", []) or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            raise UsageError(f"{origin}: each of 'indexes' needs a url")
        name = str(entry.get("name") or _source_name(entry["url"]))
        named.append(IndexSource(url=entry["url"], name=name, origin=f"{origin} indexes"))
    sources = [*named, *extras, *primary]
    sources += [_source(u, "--find-links", "find-links") for u in cli_find_links]
    sources += [
        _source(u, f"{origin} find-links", "find-links")
        for u in _as_list(settings.get("find-links"), "find-links", origin)
    ]
    if installer is not None:
        pool = _installer_pool(installer.installer)
        sources += [_source(s.value, s.origin, "find-links", pool) for s in installer.find_links]
    unique = tuple(dict.fromkeys(sources))
    install = whose_settings(env, here, installer, str(prefer) if prefer else None)
    strategy = cli_strategy or env.get("ABIPROBE_INDEX_STRATEGY") or settings.get("index-strategy")
    if not strategy and install.index_strategy is not None:
        strategy = UV_STRATEGY[install.index_strategy.value]
        origins.append(f"index strategy {install.index_strategy.value} ({install.index_strategy.origin})")
        if install.index_strategy.value == "unsafe-first-match":
            origins.append(
                "unsafe-first-match: every index's versions are judged; uv would take the first index "
                "with a compatible version, which may differ from the newest passing set"
            )
    strategy = strategy or "first-index"
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown index strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    pins_raw = settings.get("pin", {}) or {}
    if not isinstance(pins_raw, dict):
        raise UsageError(f"{origin}: 'pin' must be a table of project = index name")
    pins = {str(canonicalize_name(k)): str(v) for k, v in {**pins_raw, **(cli_pins or {})}.items()}
    for project, ref in pins.items():
        if not any(s.matches(ref) for s in unique):
            raise UsageError(f"pin {project} = {ref!r} names no configured index")
    return IndexConfig(
        sources=unique,
        strategy=cast(Strategy, strategy),
        pins=pins,
        origins=tuple(origins),
        installer=installer.installer if installer is not None else "",
        install=install,
    )
