"""TOML reading for configuration files: one readable error line, no traceback."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, cast

from abiprobe.errors import UsageError


def _toml_module() -> Any:
    """tomllib (3.11+), else tomli, else the copy of tomli that pip vendors (Python 3.10)."""
    for name in ("tomllib", "tomli", "pip._vendor.tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise UsageError("reading TOML on this Python needs the tomli package")


def toml_loads(text: str) -> dict[str, Any]:
    module = _toml_module()
    try:
        return cast(dict[str, Any], module.loads(text))
    except ValueError as exc:
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
