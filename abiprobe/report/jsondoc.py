"""Reading abiprobe's own versioned JSON documents (matrix, snapshot, probe jobs) with one-line errors."""

from __future__ import annotations

import json
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
