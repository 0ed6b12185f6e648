"""pip's configuration as pip itself reads it: its config files in pip's precedence, then ``PIP_*`` variables.

Which files, in which order, comes from pip's own configuration API (``Configuration.iter_config_files``,
``OVERRIDE_ORDER``) when pip is importable, so the rules pip applies (``PIP_CONFIG_FILE=/dev/null`` reads
none, an existing ``PIP_CONFIG_FILE`` hides the user files, the virtualenv's ``pip.conf``, XDG folders)
are pip's and follow a pip upgrade. Each file is then parsed here, as pip parses it (RawConfigParser,
``[global]`` then ``[install]``, then the environment), so every value can name the file it came from;
``pip config list`` gives the values but not their files. Without pip, the same rules are applied to
the same file list written out below.
"""

from __future__ import annotations

import configparser
import importlib
import locale
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from abiprobe.errors import UsageError

# The sections pip's `install` command reads, lowest precedence first (pip's ConfigOptionParser order).
SECTIONS = ("global", "install")
TRUE = frozenset({"y", "yes", "t", "true", "on", "1"})
FALSE = frozenset({"n", "no", "f", "false", "off", "0"})


@dataclass(frozen=True)
class Setting:
    """One configured value and where it came from (a file and section, or a variable)."""

    value: str
    origin: str


def _fallback_files(environ: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """pip's variants and files (its rules on Linux/macOS) for when pip cannot be imported."""
    explicit = environ.get("PIP_CONFIG_FILE")
    dirs = [d for d in (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if d]
    home = Path(environ.get("HOME") or Path.home())
    xdg_home = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
    out = [("env", [explicit] if explicit is not None else [])]
    out.append(("global", [str(Path(d) / "pip" / "pip.conf") for d in dirs] + ["/etc/pip.conf"]))
    if not (explicit and os.path.exists(explicit)):
        out.append(("user", [str(home / ".pip" / "pip.conf"), str(xdg_home / "pip" / "pip.conf")]))
    out.append(("site", [str(Path(sys.prefix) / "pip.conf")]))
    return out


def config_files(environ: Mapping[str, str] | None = None) -> list[str]:
    """pip's config files that exist, lowest precedence first; none under ``PIP_CONFIG_FILE=/dev/null``."""
    env = os.environ if environ is None else environ
    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return []  # pip reads no file at all then; its configuration module (60 ms to import) is not needed
    order: tuple[str, ...] = ("global", "user", "site", "env")
    variants: list[tuple[str, list[str]]]
    try:
        module = importlib.import_module("pip._internal.configuration")
        if env is not os.environ:
            raise ImportError("pip reads os.environ only")
        variants = [(str(k), list(v)) for k, v in module.Configuration(isolated=False).iter_config_files()]
        order = tuple(str(k) for k in module.OVERRIDE_ORDER)
    except (ImportError, AttributeError, TypeError):
        variants = _fallback_files(env)
    by_kind = dict(variants)
    return [f for kind in order for f in by_kind.get(kind, []) if os.path.isfile(f)]


def _parse(path: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser()
    encoding = locale.getpreferredencoding(False)
    try:
        parser.read(path, encoding=encoding)
    except UnicodeDecodeError:
        raise UsageError(
            f"cannot read pip config {path}: it contains invalid {encoding} characters"
        ) from None
    except configparser.Error as exc:
        first = str(exc).splitlines()[0]
        raise UsageError(f"cannot parse pip config {path}: {first}") from None
    return parser


def _entries(environ: Mapping[str, str]) -> Iterator[tuple[str, str, str]]:
    """(option, value, origin) in pip's precedence, lowest first: files by section, then ``PIP_*``."""
    for path in config_files(environ):
        parser = _parse(path)
        for section in SECTIONS:
            if parser.has_section(section):
                for key, value in parser.items(section):
                    yield key.replace("_", "-"), value, f"{path} [{section}] {key}"
    for var, value in environ.items():
        if var.startswith("PIP_") and var[4:].lower() not in ("version", "help"):
            yield var[4:].lower().replace("_", "-"), value, var


def pip_settings(environ: Mapping[str, str] | None = None) -> dict[str, Setting]:
    """Every option pip's ``install`` would take from configuration: the winning value and its origin."""
    env = os.environ if environ is None else environ
    return {key: Setting(value, origin) for key, value, origin in _entries(env)}


def pip_flag(setting: Setting | None) -> bool:
    """A boolean option as pip reads it (``strtobool``); a bad value is a usage error naming its origin."""
    if setting is None:
        return False
    word = setting.value.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise UsageError(f"{setting.origin}: {setting.value!r} is not a yes/no value")


def pip_list(setting: Setting | None) -> list[str]:
    """A repeatable option (``extra-index-url``, ``find-links``): whitespace-separated, as pip splits it."""
    return setting.value.split() if setting is not None else []


def pip_location(value: str) -> str:
    """A find-links / index location as pip takes it: a local path (``~`` expanded) becomes a file URL."""
    if "://" in value:
        return value
    path = Path(os.path.expanduser(value)).absolute()
    return path.as_uri() + ("/" if path.is_dir() else "")
