"""Installer settings that change what gets installed, read as pip and uv read them.

pip: ``constraint`` (``PIP_CONSTRAINT``, pip.conf; whitespace-separated requirement files), ``trusted-host``
and ``keyring-provider``. uv: ``UV_CONSTRAINT`` / ``UV_OVERRIDE`` (space-separated files) and
``constraint-dependencies`` / ``override-dependencies`` of uv.toml or ``[tool.uv]`` (the first file that
sets one), ``UV_INSECURE_HOST`` / ``allow-insecure-host``, ``UV_INDEX_STRATEGY`` / ``index-strategy`` and
``UV_KEYRING_PROVIDER`` / ``keyring-provider``; a variable wins over every file. Each value keeps its origin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abiprobe.errors import UsageError
from abiprobe.installers.pip import Setting, pip_list, pip_settings
from abiprobe.installers.uv import uv_config_files, uv_section

PIP_KEYS = ("constraint", "trusted-host", "keyring-provider")
UV_STRATEGIES = ("first-index", "unsafe-first-match", "unsafe-best-match")
UV_KEYRING = ("disabled", "subprocess")
PIP_KEYRING = ("auto", "disabled", "import", "subprocess")


@dataclass(frozen=True)
class InstallSettings:
    """What the user's installer would apply to an install beyond its indexes, each with its origin."""

    installer: str
    constraints: tuple[Setting, ...] = ()  # one requirement each
    overrides: tuple[Setting, ...] = ()
    trusted_hosts: tuple[Setting, ...] = ()  # host or host:port, TLS not verified there
    index_strategy: Setting | None = None  # uv's
    keyring_provider: Setting | None = None


NESTED = ("-c", "-r", "--constraint", "--requirement")


def requirement_lines(path: str, origin: str, depth: int = 0) -> list[Setting]:
    """The requirements of a constraints / overrides file, one per line, as pip reads one: comments,
    blanks and ``\\`` continuations, nested ``-c`` / ``-r`` files (relative to this one) followed; any
    other option line is a usage error naming the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{origin}: cannot read {path}: {exc.strerror or exc}") from None
    out = []
    for number, raw in _joined(text):
        line = "" if raw.lstrip().startswith("#") else raw.split(" #", 1)[0].strip()
        if not line:
            continue
        option, _, rest = line.replace("=", " ", 1).partition(" ") if line.startswith("-") else ("", "", "")
        if option in NESTED and rest.strip() and depth < 10:
            nested = Path(path).parent / rest.strip()
            out += requirement_lines(str(nested), f"{path}:{number}", depth + 1)
        elif option:
            raise UsageError(f"{path}:{number}: {option} in a constraints file is not read by abiprobe")
        else:
            out.append(Setting(line, f"{path}:{number} via {origin}"))
    return out


def _joined(text: str) -> list[tuple[int, str]]:
    """Lines with ``\\`` continuations joined, each numbered by its first line (as pip numbers them)."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        first, head = pending if pending is not None else (number, "")
        if line.endswith("\\") and not line.lstrip().startswith("#"):
            pending = (first, head + line[:-1])
            continue
        out.append((first, head + line))
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def _files(value: str, origin: str) -> list[Setting]:
    return [s for path in value.split() for s in requirement_lines(path, origin)]


def pip_install_settings(environ: Mapping[str, str], *, rules: bool = True) -> InstallSettings:
    """pip's settings; without ``rules`` its constraint files are not read (for the network settings)."""
    pip = pip_settings(environ)
    constraint = pip.get("constraint") if rules else None
    hosts = [Setting(h, s.origin) for s in [pip.get("trusted-host")] if s for h in pip_list(s)]
    keyring = pip.get("keyring-provider")
    if keyring is not None and keyring.value.strip() not in PIP_KEYRING:
        raise UsageError(
            f"{keyring.origin}: keyring-provider {keyring.value!r}; pip takes {', '.join(PIP_KEYRING)}"
        )
    return InstallSettings(
        "pip",
        constraints=tuple(_files(constraint.value, constraint.origin)) if constraint else (),
        trusted_hosts=tuple(hosts),
        keyring_provider=keyring,
    )


def _uv_value(
    environ: Mapping[str, str], sections: list[tuple[str, dict[str, Any]]], var: str, key: str
) -> Setting | None:
    if environ.get(var, "").strip():
        return Setting(environ[var].strip(), var)
    for origin, data in sections:
        if isinstance(data.get(key), str):
            return Setting(data[key], f"{origin} {key}")
    return None


def _uv_list(
    environ: Mapping[str, str], sections: list[tuple[str, dict[str, Any]]], var: str, key: str
) -> list[Setting]:
    """A requirement list: the variable's files, else the first file's list."""
    if environ.get(var, "").strip():
        return _files(environ[var], var)
    for origin, data in sections:
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{origin}: {key} must be a list of requirement strings")
        return [Setting(v, f"{origin} {key}") for v in value]
    return []


def uv_install_settings(environ: Mapping[str, str], cwd: Path, *, rules: bool = True) -> InstallSettings:
    """uv's settings; without ``rules`` its constraint and override files are not read."""
    sections = [(str(p), s) for p in uv_config_files(environ, cwd) if (s := uv_section(p)) is not None]
    strategy = _uv_value(environ, sections, "UV_INDEX_STRATEGY", "index-strategy")
    if strategy is not None and strategy.value not in UV_STRATEGIES:
        raise UsageError(
            f"{strategy.origin}: index-strategy {strategy.value!r}; uv takes {', '.join(UV_STRATEGIES)}"
        )
    keyring = _uv_value(environ, sections, "UV_KEYRING_PROVIDER", "keyring-provider")
    if keyring is not None and keyring.value not in UV_KEYRING:
        raise UsageError(
            f"{keyring.origin}: keyring-provider {keyring.value!r}; uv takes {', '.join(UV_KEYRING)}"
        )
    if environ.get("UV_INSECURE_HOST", "").strip():
        hosts = [Setting(h, "UV_INSECURE_HOST") for h in environ["UV_INSECURE_HOST"].split()]
    else:
        hosts = next(
            ([Setting(h, f"{o} allow-insecure-host") for h in d["allow-insecure-host"]]
             for o, d in sections if isinstance(d.get("allow-insecure-host"), list)),
            [],
        )  # fmt: skip
    constraints = _uv_list(environ, sections, "UV_CONSTRAINT", "constraint-dependencies") if rules else []
    overrides = _uv_list(environ, sections, "UV_OVERRIDE", "override-dependencies") if rules else []
    return InstallSettings(
        "uv",
        constraints=tuple(constraints),
        overrides=tuple(overrides),
        trusted_hosts=tuple(hosts),
        index_strategy=strategy,
        keyring_provider=keyring,
    )


def install_settings(environ: Mapping[str, str], cwd: Path, installer: str) -> InstallSettings:
    """The settings of ``installer`` ("pip" or "uv")."""
    return uv_install_settings(environ, cwd) if installer == "uv" else pip_install_settings(environ)
