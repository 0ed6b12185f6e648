"""One ``--json`` envelope everywhere: ``kind`` and ``schema_version`` first, then the payload, indent 1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.schemas import SCHEMAS, assert_valid
from support.wheelbuild import build_wheel

from abiprobe.cli import main

MATRIX = Path(__file__).parents[1] / "matrices" / "cu130-sm120-cp312-manylinux_2_28_x86_64.json"


def _envelope(text: str) -> dict[str, object]:
    """The printed document, checked for the envelope's shape and the one indentation."""
    doc = json.loads(text)
    assert list(doc)[:2] == ["kind", "schema_version"]
    assert str(doc["kind"]).startswith("abiprobe-") and isinstance(doc["schema_version"], int)
    assert text.startswith('{\n "kind": ') and text == json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    return dict(doc)


def test_every_schema_requires_the_envelope() -> None:
    # GIVEN every JSON Schema abiprobe ships (a oneOf schema: each of its documents)
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        schema = json.loads(path.read_text())
        shapes = schema.get("oneOf", [schema])
        for shape in shapes:
            shape = schema["$defs"][shape["$ref"].rsplit("/", 1)[1]] if "$ref" in shape else shape
            # THEN each requires a constant kind and a schema version
            assert {"kind", "schema_version"} <= set(shape["required"]), path.name
            assert "const" in shape["properties"]["kind"], path.name


def test_the_outputs_of_the_local_commands_share_the_envelope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a wheel on a local index, an empty cache and the committed matrix
    wheel = build_wheel(tmp_path / "w", "demo", "1.0", {"demo/__init__.py": b""})
    cache = ["--cache-dir", str(tmp_path / "c")]
    with IndexServer() as srv:
        srv.add_wheel(wheel)
        runs = {
            "index-ls": ["index", "ls", "demo", "--index", srv.index_url, *cache],
            "config": ["config", "--index", srv.index_url],
            "cache": ["cache", "info", *cache],
            "inspect": ["inspect", str(wheel), *cache],
            "check": ["check", str(wheel), "--no-deps", *cache],
            "matrix": ["matrix", "show", str(MATRIX)],
            "matrix-diff": ["matrix", "diff", str(MATRIX), str(MATRIX)],
        }
        for schema, argv in runs.items():
            # WHEN each prints --json (whatever its verdict)
            main([*argv, "--json"])
            # THEN the document has the envelope and its schema holds
            assert_valid(_envelope(capsys.readouterr().out), schema)


def test_restore_plan_and_its_verification_share_the_envelope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a snapshot of this interpreter's environment
    snap = tmp_path / "s.json"
    assert main(["snapshot", "--python", sys.executable, "-o", str(snap)]) == 0
    capsys.readouterr()
    # WHEN the restore plan and the verification are printed as JSON
    assert main(["restore-plan", str(snap), "--json"]) == 0
    plan = _envelope(capsys.readouterr().out)
    assert main(["restore-plan", str(snap), "--verify", sys.executable, "--json"]) == 0
    verified = _envelope(capsys.readouterr().out)
    # THEN each carries its own kind and validates
    assert (plan["kind"], verified["kind"]) == ("abiprobe-restore-plan", "abiprobe-restore-verification")
    assert_valid(plan, "restore-plan")
    assert_valid(verified, "restore-plan")
