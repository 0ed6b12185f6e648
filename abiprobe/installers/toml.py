"""TOML reading for configuration files (one readable error line, no traceback), and abiprobe's own settings
file, which the index configuration and the published-facts setting both read."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from abiprobe.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # the declared dependency on older Pythons
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


def toml_loads(text: str) -> dict[str, Any]:
    """Parsed TOML text; invalid TOML is a usage error of one line."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"invalid TOML: {exc}") from None


def read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file, or None when there is none; an unreadable or invalid file is a usage error."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return toml_loads(text)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None


def project_settings(cwd: Path) -> tuple[dict[str, Any], str | None]:
    """abiprobe's own settings: ``abiprobe.toml`` in ``cwd``, else ``[tool.abiprobe]`` of pyproject.toml."""
    own = read_toml(cwd / "abiprobe.toml")
    if own is not None:
        return own, str(cwd / "abiprobe.toml")
    pyproject = read_toml(cwd / "pyproject.toml")
    section = (pyproject or {}).get("tool", {}).get("abiprobe")
    if isinstance(section, dict):
        return section, f"{cwd / 'pyproject.toml'} [tool.abiprobe]"
    return {}, None
