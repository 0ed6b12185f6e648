"""abiprobe's own versioned JSON documents: the one envelope every ``--json`` output has, and reading
them back (matrix, snapshot, probe jobs) with one-line errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from abiprobe.errors import UsageError
from abiprobe.model.hosts import concrete


def load_versioned(path: Path, kind: str, max_version: int, what: str) -> dict[str, Any]:
    """The JSON object in ``path`` whose ``kind`` is ``kind`` and whose schema version we can read."""
    try:
        data = json.loads(concrete(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != kind:
        raise UsageError(f"{path} is not an abiprobe {what}")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > max_version:
        raise UsageError(f"{path}: {what} schema version {version!r} is newer than this abiprobe reads")
    return data


JSON_INDENT = 1  # the indentation of every --json output and every JSON file abiprobe writes


def envelope(kind: str, payload: Mapping[str, Any], schema_version: int | None = None) -> dict[str, Any]:
    """``{"kind", "schema_version", ...payload}``: the one shape of every ``--json`` output (the version
    is the payload's own when it carries one)."""
    version = payload.get("schema_version") if schema_version is None else schema_version
    if not isinstance(version, int):
        raise ValueError(f"{kind}: a JSON document needs a schema version")
    rest = {k: v for k, v in payload.items() if k not in ("kind", "schema_version")}
    return {"kind": kind, "schema_version": version, **rest}


def json_text(document: Mapping[str, Any]) -> str:
    """A document as abiprobe prints and writes JSON: one indentation, keys in the order given."""
    return json.dumps(document, indent=JSON_INDENT, ensure_ascii=False) + "\n"
