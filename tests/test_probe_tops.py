"""A probe imports the modules a distribution provides, never its vendored-library folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.commands.probe import default_import_order

TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"


@pytest.fixture(scope="module")
def vendoring_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel laid out as auditwheel repairs one: its package, a ``vendlib.libs`` folder with a real
    library, plus a top-level module, a ``__pycache__`` and a dashed data folder."""
    out = tmp_path_factory.mktemp("tops")
    lib = build_shared(out / "b", "libvend-1a2b3c.so.1", "int vend(void) { return 1; }")
    files: dict[str, bytes | Path] = {
        "vendlib/__init__.py": b"VALUE = 1\n",
        "vendlib.libs/libvend-1a2b3c.so.1": lib,
        "vendlib_helper.py": b"HELPED = True\n",
        "__pycache__/vendlib_helper.cpython-312.pyc": b"",
        "vend-data/notes.txt": b"notes\n",
    }
    return build_wheel(out, "vendlib", "1.0", files, tag=f"{TAG}-{TAG}-manylinux_2_28_x86_64")


def test_default_import_order_is_the_importable_top_level_names(vendoring_wheel: Path) -> None:
    # GIVEN a wheel with a vendored-library folder WHEN its import order is chosen
    # THEN only identifiers are imported: the package and the top-level module
    assert default_import_order([vendoring_wheel]) == ("vendlib", "vendlib_helper")


def test_probe_of_a_wheel_with_vendored_libraries_imports_it(
    vendoring_wheel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same wheel WHEN probed for real in a throwaway venv
    code = main(["probe", str(vendoring_wheel), "--json"])
    result = json.loads(capsys.readouterr().out)["results"][0]
    # THEN it imports (no "No module named 'vendlib.libs'")
    assert (code, result["outcome"]) == (0, "ok"), result


def test_a_stale_top_level_entry_is_not_a_module_the_distribution_provides() -> None:
    from abiprobe.binary.wheel import provided_tops

    # GIVEN top_level.txt naming _xxhash and xxhash, where the extension now lives inside the package
    files = [
        "xxhash/__init__.py",
        "xxhash/_xxhash.cpython-312-x86_64-linux-gnu.so",
        "xxhash-4.0.1.dist-info/RECORD",
    ]
    # THEN only what the files install is imported; with no file list, the listed names stand
    assert provided_tops(["_xxhash", "xxhash"], files) == {"xxhash"}
    assert provided_tops(["_xxhash", "xxhash"], []) == {"_xxhash", "xxhash"}
    # AND a list naming nothing the files install falls back to what they install
    assert provided_tops(["gone"], files) == {"xxhash"}
