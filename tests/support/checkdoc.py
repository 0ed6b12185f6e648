"""Reading `check --json` documents in tests."""

from __future__ import annotations

from typing import Any


def verdicts_of(data: dict[str, Any], check: str) -> list[tuple[str, str]]:
    """(status, explanation) of every unit's verdict of ``check`` (``sonames``, ``symbol_versions``...)."""
    return [
        (v["status"], v["explanation"]) for u in data["units"] for v in u["verdicts"] if v["check"] == check
    ]
