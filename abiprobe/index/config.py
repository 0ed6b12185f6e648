"""Which indexes to read: CLI, then environment, then abiprobe.toml / [tool.abiprobe], then the default.

The default index comes from the user's installer configuration (pip's environment and config files,
then uv's), else pip's own built-in default read at run time; no index host is written here.
"""

from __future__ import annotations

import configparser
import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name

from abiprobe.errors import UsageError
from abiprobe.http import display_url

Strategy = Literal["first-index", "best-match"]
STRATEGIES: tuple[Strategy, ...] = ("first-index", "best-match")
SourceKind = Literal["simple", "find-links"]


@dataclass(frozen=True)
class IndexSource:
    """One place to look: a simple-API root or a flat find-links page."""

    url: str
    name: str = ""
    kind: SourceKind = "simple"

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


def _toml_module() -> Any:
    """tomllib (3.11+), else tomli, else the copy of tomli that pip vendors (Python 3.10)."""
    for name in ("tomllib", "tomli", "pip._vendor.tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise UsageError("reading TOML on this Python needs the tomli package")


def _toml_loads(text: str) -> dict[str, Any]:
    module = _toml_module()
    try:
        return cast(dict[str, Any], module.loads(text))
    except ValueError as exc:
        raise UsageError(f"invalid TOML: {exc}") from None


def _read_toml(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return _toml_loads(text)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None


def project_settings(cwd: Path) -> tuple[dict[str, Any], str | None]:
    """abiprobe's own settings: ``abiprobe.toml`` in ``cwd``, else ``[tool.abiprobe]`` of pyproject.toml."""
    own = _read_toml(cwd / "abiprobe.toml")
    if own is not None:
        return own, str(cwd / "abiprobe.toml")
    pyproject = _read_toml(cwd / "pyproject.toml")
    section = (pyproject or {}).get("tool", {}).get("abiprobe")
    if isinstance(section, dict):
        return section, f"{cwd / 'pyproject.toml'} [tool.abiprobe]"
    return {}, None


def _pip_config_files(environ: Mapping[str, str], root: Path) -> list[Path]:
    """pip's config files from lowest to highest precedence (global, user, site, $PIP_CONFIG_FILE)."""
    explicit = environ.get("PIP_CONFIG_FILE")
    if explicit == os.devnull:
        return []
    home = Path(environ["HOME"]) if environ.get("HOME") else None
    xdg_dirs = environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    paths = [root / d.lstrip("/") / "pip" / "pip.conf" for d in xdg_dirs.split(":") if d]
    paths.append(root / "etc" / "pip.conf")
    if home is not None:
        paths.append(home / ".pip" / "pip.conf")
        xdg_home = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
        paths.append(xdg_home / "pip" / "pip.conf")
    if environ.get("VIRTUAL_ENV"):
        paths.append(Path(environ["VIRTUAL_ENV"]) / "pip.conf")
    if explicit:
        paths.append(Path(explicit))
    return paths


def pip_configured_index(environ: Mapping[str, str], root: Path = Path("/")) -> tuple[str, str] | None:
    """``(url, origin)`` from PIP_INDEX_URL or the highest-precedence pip.conf ``index-url``."""
    if environ.get("PIP_INDEX_URL"):
        return environ["PIP_INDEX_URL"].split()[0], "PIP_INDEX_URL"
    found: tuple[str, str] | None = None
    for path in _pip_config_files(environ, root):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot parse pip config {path}: {exc}") from None
        for section in ("global", "install"):
            if parser.has_option(section, "index-url"):
                found = parser.get(section, "index-url").split()[0], f"{path} [{section}] index-url"
    return found


def _uv_index_from(data: Mapping[str, Any]) -> str | None:
    for entry in data.get("index", []) or []:
        if isinstance(entry, dict) and entry.get("default") and isinstance(entry.get("url"), str):
            return str(entry["url"])
    value = data.get("index-url")
    return value if isinstance(value, str) and value else None


def uv_configured_index(
    environ: Mapping[str, str], cwd: Path, root: Path = Path("/")
) -> tuple[str, str] | None:
    """``(url, origin)`` from UV_DEFAULT_INDEX / UV_INDEX_URL, project uv.toml / [tool.uv], user uv.toml."""
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if environ.get(var):
            return environ[var], var
    candidates: list[tuple[Path, bool]] = [(cwd / "uv.toml", False), (cwd / "pyproject.toml", True)]
    home = environ.get("HOME")
    xdg = environ.get("XDG_CONFIG_HOME") or (str(Path(home) / ".config") if home else "")
    if xdg:
        candidates.append((Path(xdg) / "uv" / "uv.toml", False))
    candidates.append((root / "etc" / "uv" / "uv.toml", False))
    for path, in_pyproject in candidates:
        data = _read_toml(path)
        if data is None:
            continue
        section = data.get("tool", {}).get("uv", {}) if in_pyproject else data
        url = _uv_index_from(section) if isinstance(section, dict) else None
        if url:
            return url, str(path)
    return None


def builtin_default_index() -> str:
    """pip's built-in default simple-API URL, read from the installed pip at run time."""
    try:
        module = importlib.import_module("pip._internal.models.index")
        return str(module.PyPI.simple_url)
    except (ImportError, AttributeError):
        raise UsageError("no index configured and pip is not importable: pass --index-url URL") from None


def default_index(environ: Mapping[str, str], cwd: Path, root: Path = Path("/")) -> tuple[str, str]:
    """The user's default index and where it was found."""
    for var in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if environ.get(var):
            return environ[var].split()[0], var
    found = pip_configured_index(environ, root) or uv_configured_index(environ, cwd, root)
    if found is not None:
        return found
    return builtin_default_index(), "pip's built-in default"


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


def load_index_config(
    *,
    cli_indexes: Sequence[str] = (),
    cli_extra_indexes: Sequence[str] = (),
    cli_find_links: Sequence[str] = (),
    cli_strategy: str | None = None,
    cli_pins: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    root: Path = Path("/"),
) -> IndexConfig:
    """Sources in lookup order: named ``indexes``, extras, then the primary index, then find-links.

    ``--index`` on the command line replaces the primary; ABIPROBE_INDEX_URL / ``index-url`` likewise,
    with the CLI winning over the environment and the environment over the TOML file.
    """
    env = os.environ if environ is None else environ
    here = cwd or Path.cwd()
    settings, settings_origin = project_settings(here)
    origin = settings_origin or "abiprobe settings"
    origins: list[str] = []
    if cli_indexes:
        primary, primary_origin = list(cli_indexes), "--index"
    elif env.get("ABIPROBE_INDEX_URL"):
        primary, primary_origin = env["ABIPROBE_INDEX_URL"].split(), "ABIPROBE_INDEX_URL"
    elif settings.get("index-url"):
        primary, primary_origin = _as_list(settings["index-url"], "index-url", origin), origin
    else:
        url, primary_origin = default_index(env, here, root)
        primary = [url]
    origins.append(f"primary index from {primary_origin}")
    extras = list(cli_extra_indexes)
    extras += env.get("ABIPROBE_EXTRA_INDEX_URL", "").split()
    extras += _as_list(settings.get("extra-index-url"), "extra-index-url", origin)
    named: list[IndexSource] = []
    for entry in settings.get("indexes", []) or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            raise UsageError(f"{origin}: each of 'indexes' needs a url")
        named.append(IndexSource(url=entry["url"], name=str(entry.get("name") or _source_name(entry["url"]))))
    sources = named + [IndexSource(url=u, name=_source_name(u)) for u in [*extras, *primary]]
    links = [*cli_find_links, *_as_list(settings.get("find-links"), "find-links", origin)]
    sources += [IndexSource(url=u, name=_source_name(u), kind="find-links") for u in links]
    unique = tuple(dict.fromkeys(sources))
    strategy = cli_strategy or env.get("ABIPROBE_INDEX_STRATEGY") or settings.get("index-strategy")
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
    return IndexConfig(sources=unique, strategy=cast(Strategy, strategy), pins=pins, origins=tuple(origins))
