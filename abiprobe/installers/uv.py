"""uv's index and TLS configuration as uv reads it.

Files: ``UV_CONFIG_FILE`` alone when set; none under ``UV_NO_CONFIG``; else the nearest folder at or above
the working folder holding ``uv.toml`` or a ``pyproject.toml`` with ``[tool.uv]`` (uv.toml wins in one
folder), then the user's ``uv.toml`` (``$XDG_CONFIG_HOME/uv``), then the system's (``$XDG_CONFIG_DIRS/uv``,
``/etc/uv``): scalars from the first that sets them, ``[[index]]`` lists in that order. Variables
(``UV_INDEX``, ``UV_DEFAULT_INDEX``, ``UV_INDEX_URL``, ``UV_EXTRA_INDEX_URL``, ``UV_FIND_LINKS``,
``UV_NO_INDEX``, ``UV_NATIVE_TLS``) come before any file, as uv's command-line equivalents do, and
``UV_INDEX_<NAME>_USERNAME`` / ``_PASSWORD`` give a named index its credentials.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abiprobe.errors import UsageError
from abiprobe.installers.pip import Setting
from abiprobe.installers.toml import read_toml

TRUE = frozenset({"1", "true", "yes", "on", "y", "t"})
FALSE = frozenset({"0", "false", "no", "off", "n", "f", ""})


@dataclass(frozen=True)
class UvIndex:
    """One ``[[index]]`` entry (or a ``UV_INDEX`` item) as uv understands it."""

    url: str
    name: str
    origin: str
    default: bool = False
    explicit: bool = False
    flat: bool = False  # format = "flat": a find-links page, not a simple API


@dataclass(frozen=True)
class UvSettings:
    """What uv would use: indexes in lookup order, find-links, no-index, native TLS, credentials."""

    indexes: tuple[UvIndex, ...] = ()
    find_links: tuple[Setting, ...] = ()
    no_index: Setting | None = None
    native_tls: Setting | None = None
    files: tuple[str, ...] = ()
    credentials: tuple[tuple[str, str, str, str], ...] = field(default=())  # (url, user, password, origin)


def _truthy(value: str, origin: str) -> bool:
    word = value.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise UsageError(f"{origin}: {value!r} is not a boolean")


def env_name(index_name: str) -> str:
    """The ``<NAME>`` of ``UV_INDEX_<NAME>_USERNAME``: upper case, every non-alphanumeric as ``_``."""
    return re.sub(r"[^A-Z0-9]", "_", index_name.upper())


def uv_section(path: Path) -> dict[str, Any] | None:
    """uv's settings in ``path``: the whole uv.toml, or ``[tool.uv]`` of a pyproject.toml (None if absent)."""
    data = read_toml(path)
    if data is None:
        return None
    if path.name == "pyproject.toml":
        section = data.get("tool", {}).get("uv")
        return section if isinstance(section, dict) else None
    return data


def _project_file(cwd: Path) -> Path | None:
    for folder in (cwd, *cwd.parents):
        for name in ("uv.toml", "pyproject.toml"):
            if uv_section(folder / name) is not None:
                return folder / name
    return None


def uv_config_files(environ: Mapping[str, str], cwd: Path) -> list[Path]:
    """The files uv reads, highest precedence first."""
    if environ.get("UV_CONFIG_FILE"):
        path = Path(environ["UV_CONFIG_FILE"])
        if not path.is_file():
            raise UsageError(f"UV_CONFIG_FILE={path}: no such file")
        return [path]
    if _truthy(environ.get("UV_NO_CONFIG", ""), "UV_NO_CONFIG"):
        return []
    found: list[Path] = []
    project = _project_file(cwd)
    if project is not None:
        found.append(project)
    home = environ.get("HOME")
    xdg = environ.get("XDG_CONFIG_HOME") or (str(Path(home) / ".config") if home else "")
    if xdg:
        found.append(Path(xdg) / "uv" / "uv.toml")
    dirs = [d for d in (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if d]
    system = [Path(d) / "uv" / "uv.toml" for d in dirs] + [Path("/etc/uv/uv.toml")]
    found += [next((p for p in system if p.is_file()), system[-1])]
    return [p for p in found if p.is_file()]


def _file_indexes(data: Mapping[str, Any], origin: str) -> list[UvIndex]:
    out: list[UvIndex] = []
    for i, entry in enumerate(data.get("index", []) or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            raise UsageError(f"{origin}: [[index]] entry {i + 1} needs a url")
        out.append(
            UvIndex(
                url=entry["url"],
                name=str(entry.get("name") or ""),
                origin=f"{origin} [[index]] {entry.get('name') or i + 1}",
                default=bool(entry.get("default")),
                explicit=bool(entry.get("explicit")),
                flat=entry.get("format") == "flat",
            )
        )
    extras = data.get("extra-index-url") or []
    out += [UvIndex(url=u, name="", origin=f"{origin} extra-index-url") for u in _strings(extras, origin)]
    if isinstance(data.get("index-url"), str):
        out.append(UvIndex(url=data["index-url"], name="", origin=f"{origin} index-url", default=True))
    return out


def _strings(value: object, origin: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise UsageError(f"{origin}: expected a string or a list of strings")


def _env_indexes(environ: Mapping[str, str]) -> list[UvIndex]:
    out: list[UvIndex] = []
    for item in environ.get("UV_INDEX", "").split():
        name, sep, url = item.partition("=")
        named = bool(sep) and "://" not in name
        out.append(UvIndex(url=url if named else item, name=name if named else "", origin="UV_INDEX"))
    out += [
        UvIndex(url=u, name="", origin="UV_EXTRA_INDEX_URL")
        for u in environ.get("UV_EXTRA_INDEX_URL", "").split()
    ]
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if environ.get(var):
            out.append(UvIndex(url=environ[var].strip(), name="", origin=var, default=True))
            break
    return out


def _ordered(indexes: list[UvIndex]) -> tuple[UvIndex, ...]:
    """uv's lookup order: the first default wins and goes last; later defaults and repeats are dropped."""
    seen: set[str] = set()
    regular: list[UvIndex] = []
    default: UvIndex | None = None
    for index in indexes:
        if index.url in seen:
            continue
        seen.add(index.url)
        if index.default:
            default = default or index
        else:
            regular.append(index)
    return tuple(regular + ([default] if default else []))


def uv_settings(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> UvSettings:
    env = os.environ if environ is None else environ
    files = uv_config_files(env, cwd or Path.cwd())
    sections = [(str(p), s) for p in files if (s := uv_section(p)) is not None]
    indexes = _env_indexes(env)
    for origin, data in sections:
        indexes += _file_indexes(data, origin)
    links = [Setting(u, "UV_FIND_LINKS") for u in env.get("UV_FIND_LINKS", "").split(",") if u.strip()]
    for origin, data in sections:
        links += [Setting(u, f"{origin} find-links") for u in _strings(data.get("find-links") or [], origin)]
    return UvSettings(
        indexes=_ordered(indexes),
        find_links=tuple(links),
        no_index=_first_flag(env, sections, "UV_NO_INDEX", "no-index"),
        native_tls=_first_flag(env, sections, "UV_NATIVE_TLS", "native-tls"),
        files=tuple(origin for origin, _ in sections),
        credentials=tuple(_credentials(env, indexes)),
    )


def _first_flag(
    environ: Mapping[str, str], sections: list[tuple[str, dict[str, Any]]], var: str, key: str
) -> Setting | None:
    """The first of the variable and the files to set ``key``, when it is set to true."""
    if environ.get(var, "") != "":
        return Setting("true", var) if _truthy(environ[var], var) else None
    for origin, data in sections:
        if key in data:
            return Setting("true", f"{origin} {key}") if data[key] is True else None
    return None


def _credentials(environ: Mapping[str, str], indexes: list[UvIndex]) -> list[tuple[str, str, str, str]]:
    out = []
    for index in indexes:
        if not index.name:
            continue
        prefix = f"UV_INDEX_{env_name(index.name)}_"
        user, password = environ.get(prefix + "USERNAME"), environ.get(prefix + "PASSWORD")
        if user is not None or password is not None:
            origin = " / ".join(v for v in (prefix + "USERNAME", prefix + "PASSWORD") if v in environ)
            out.append((index.url, user or "", password or "", origin))
    return out
