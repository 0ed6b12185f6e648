"""Every ``--json`` output is checked against its JSON Schema under abiprobe/schemas/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).parents[2] / "abiprobe" / "schemas"


def assert_valid(doc: Any, schema: str) -> Any:
    """``doc`` validated against ``abiprobe/schemas/<schema>.schema.json``; returned for chaining."""
    jsonschema.validate(doc, json.loads((SCHEMAS / f"{schema}.schema.json").read_text()))
    return doc
