"""A small TOML writer for the documents abiprobe emits (pylock.toml): tables, arrays of tables, inline
tables of scalars, strings, integers, booleans, datetimes and arrays of those, in insertion order."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, _dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_scalar(v)}" for k, v in value.items() if v is not None) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _is_table(value: Any) -> bool:
    """A mapping written as a [table]: one holding tables or arrays of tables (else it is inline)."""
    return isinstance(value, Mapping) and any(
        isinstance(v, Mapping) or _is_table_array(v) for v in value.values()
    )


def _emit(table: Mapping[str, Any], path: list[str], out: list[str]) -> None:
    for key, value in table.items():
        if value is None or _is_table(value) or _is_table_array(value):
            continue
        out.append(f"{_key(key)} = {_scalar(value)}")
    for key, value in table.items():
        if _is_table(value):
            out.append("")
            out.append("[" + ".".join(_key(k) for k in [*path, key]) + "]")
            _emit(value, [*path, key], out)
        elif _is_table_array(value):
            for item in value:
                out.append("")
                out.append("[[" + ".".join(_key(k) for k in [*path, key]) + "]]")
                _emit(item, [*path, key], out)


def dumps(document: Mapping[str, Any]) -> str:
    """TOML text of ``document``; None values are left out."""
    out: list[str] = []
    _emit(document, [], out)
    return "\n".join(out).lstrip("\n") + "\n"
