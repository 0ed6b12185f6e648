"""TOML reading for configuration files: one readable error line, no traceback."""

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
