"""The indexes the user's installer would read: pip's settings when pip sets any, else uv's, else the default.

``ABIPROBE_INSTALLER`` (or ``installer`` in abiprobe.toml) = ``pip`` or ``uv`` names one outright. pip's
indexes keep pip's order (extras, then ``index-url``); uv's keep uv's (``UV_INDEX`` and ``[[index]]`` in
order, the default last; ``explicit`` ones are left out, as uv reads them only for pinned packages,
``format = "flat"`` ones are find-links). ``no-index`` leaves only the find-links.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from abiprobe.errors import UsageError
from abiprobe.installers.pip import Setting, pip_flag, pip_list, pip_location, pip_settings
from abiprobe.installers.registry import pip_registry
from abiprobe.installers.uv import UvSettings, uv_settings

PIP_INDEX_KEYS = ("index-url", "extra-index-url", "find-links", "no-index")
INSTALLERS = ("pip", "uv")
BUILTIN = "pip's built-in default"


@dataclass(frozen=True)
class InstallerIndexes:
    """Index roots in lookup order (the default one last) and find-links, each with its origin."""

    installer: str
    indexes: tuple[Setting, ...]
    find_links: tuple[Setting, ...] = ()
    notes: tuple[str, ...] = ()


NO_PIP = (
    "no index configured, and no pip on this machine to read its default index from: "
    "pass --index-url URL, or set PIP_INDEX_URL or UV_DEFAULT_INDEX"
)


def builtin_default_index() -> str:
    """pip's built-in default simple-API URL, read at run time from a pip here or elsewhere on the machine."""
    registry = pip_registry()
    if registry is None:
        raise UsageError(NO_PIP)
    return registry.simple_url


def _builtin() -> Setting:
    return Setting(builtin_default_index(), BUILTIN)


def _from_pip(settings: Mapping[str, Setting]) -> InstallerIndexes:
    links = tuple(
        Setting(pip_location(u), s.origin) for s in [settings.get("find-links")] if s for u in pip_list(s)
    )
    no_index = settings.get("no-index")
    if pip_flag(no_index):
        assert no_index is not None
        return InstallerIndexes("pip", (), links, (f"no index ({no_index.origin}): find-links only",))
    extra = settings.get("extra-index-url")
    extras = [Setting(pip_location(u), extra.origin) for u in pip_list(extra)] if extra else []
    index = settings.get("index-url")
    primary = (
        Setting(pip_location(index.value.split()[0]), index.origin) if index and index.value.split() else None
    )
    return InstallerIndexes("pip", (*extras, primary or _builtin()), links)


def _from_uv(settings: UvSettings) -> InstallerIndexes:
    notes = [
        f"{i.name or i.url}: explicit (only for pinned packages), left out ({i.origin})"
        for i in settings.indexes
        if i.explicit
    ]
    usable = [i for i in settings.indexes if not i.explicit]
    links = [Setting(pip_location(i.url), i.origin) for i in usable if i.flat]
    links += [Setting(pip_location(s.value), s.origin) for s in settings.find_links]
    if settings.no_index is not None:
        notes.append(f"no index ({settings.no_index.origin}): find-links only")
        return InstallerIndexes("uv", (), tuple(links), tuple(notes))
    roots = [Setting(pip_location(i.url), i.origin) for i in usable if not i.flat]
    if not any(i.default for i in usable if not i.flat):
        roots.append(_builtin())
    return InstallerIndexes("uv", tuple(roots), tuple(links), tuple(notes))


def uv_sets_indexes(settings: UvSettings) -> bool:
    return bool(settings.indexes or settings.find_links or settings.no_index)


def installer_indexes(environ: Mapping[str, str], cwd: Path, prefer: str | None = None) -> InstallerIndexes:
    """The index set of the user's installer (``prefer`` = "pip" or "uv" picks one)."""
    if prefer is not None and prefer not in INSTALLERS:
        raise UsageError(f"unknown installer {prefer!r}; choose one of {', '.join(INSTALLERS)}")
    if prefer != "uv":
        pip = pip_settings(environ)
        if prefer == "pip" or any(k in pip for k in PIP_INDEX_KEYS):
            return _from_pip(pip)
    uv = uv_settings(environ, cwd)
    if prefer == "uv" or uv_sets_indexes(uv):
        return _from_uv(uv)
    return InstallerIndexes(BUILTIN, (_builtin(),))
