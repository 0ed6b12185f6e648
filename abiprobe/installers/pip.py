"""pip's configuration as pip itself reads it: its config files in pip's precedence, then ``PIP_*`` variables.

Which files, in which order, follows pip's documented rules, written out below without importing pip
(abiprobe runs where pip is not importable, as an installed tool, and pip's configuration module costs
60 ms): ``PIP_CONFIG_FILE=/dev/null`` reads none, an existing ``PIP_CONFIG_FILE`` hides the user files,
the global files of ``XDG_CONFIG_DIRS`` and ``/etc``, the user's legacy and XDG files, the environment's
own ``pip.conf``. tests/test_pip_config_files.py holds them to pip's own ``Configuration`` API. Each file
is parsed as pip parses it (RawConfigParser, ``[global]`` then ``[install]``, then the environment), so
every value can name the file it came from; ``pip config list`` gives the values but not their files.
"""

from __future__ import annotations

import configparser
import locale
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from abiprobe.errors import UsageError

# The sections pip's `install` command reads, lowest precedence first (pip's ConfigOptionParser order).
SECTIONS = ("global", "install")
# pip's variants, lowest precedence first (its OVERRIDE_ORDER without the variables, read after them all).
OVERRIDE_ORDER = ("global", "user", "site", "env")
CONFIG_NAME = "pip.conf"
APP_SUPPORT = "/Library/Application Support"
TRUE = frozenset({"y", "yes", "t", "true", "on", "1"})
FALSE = frozenset({"n", "no", "f", "false", "off", "0"})


@dataclass(frozen=True)
class Setting:
    """One configured value and where it came from (a file and section, or a variable)."""

    value: str
    origin: str


def _xdg_dirs(environ: Mapping[str, str]) -> list[str]:
    """``XDG_CONFIG_DIRS`` as pip's platformdirs takes it: absolute entries only, else ``/etc/xdg``."""
    dirs = [d.strip() for d in environ.get("XDG_CONFIG_DIRS", "").split(":")]
    return [d for d in dirs if os.path.isabs(d)] or ["/etc/xdg"]


def _user_dir(environ: Mapping[str, str], home: str) -> str:
    """pip's user config folder: XDG on Linux; on macOS Application Support's if it exists, else ~/.config."""
    if sys.platform == "darwin":
        support = os.path.join(home + APP_SUPPORT, "pip")
        return support if os.path.isdir(support) else os.path.join(home, ".config", "pip")
    xdg = environ.get("XDG_CONFIG_HOME", "").strip()
    return os.path.join(xdg if os.path.isabs(xdg) else os.path.join(home, ".config"), "pip")


def pip_variant_files(environ: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """pip's (variant, files) on POSIX systems, as its ``Configuration.iter_config_files`` yields them."""
    explicit = environ.get("PIP_CONFIG_FILE")
    home = environ.get("HOME") or os.path.expanduser("~")
    if sys.platform == "darwin":
        system = [APP_SUPPORT + "/pip"]
    else:
        system = [*(os.path.join(d, "pip") for d in _xdg_dirs(environ)), "/etc"]
    out = [("global", [os.path.join(d, CONFIG_NAME) for d in system])]
    if not (explicit and os.path.exists(explicit)):
        legacy = os.path.join(home, ".pip", CONFIG_NAME)
        out.append(("user", [legacy, os.path.join(_user_dir(environ, home), CONFIG_NAME)]))
    out.append(("site", [os.path.join(sys.prefix, CONFIG_NAME)]))
    out.append(("env", [explicit] if explicit is not None else []))
    return out


def config_files(environ: Mapping[str, str] | None = None) -> list[str]:
    """pip's config files that exist, lowest precedence first; none under ``PIP_CONFIG_FILE=/dev/null``."""
    env = os.environ if environ is None else environ
    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    by_kind = dict(pip_variant_files(env))
    return [f for kind in OVERRIDE_ORDER for f in by_kind.get(kind, []) if os.path.isfile(f)]


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
