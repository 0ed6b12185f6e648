"""The kind table: every item argument is parsed once into a typed spec (``parse_item``), and each command
takes the kinds it declares, refusing any other in one line with a usage exit and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.wheelbuild import build_wheel

from abiprobe.commands.check import CHECK_ITEMS
from abiprobe.commands.inspect import INSPECT_ITEMS
from abiprobe.commands.item_specs import (
    KIND_WORDS,
    DirectorySpec,
    LocalFileSpec,
    LockFileSpec,
    NameSpec,
    NotAnItem,
    PinnedSpec,
    RequirementsFileSpec,
    RequirementSpec,
    WheelFileSpec,
    WheelUrlSpec,
    parse_item,
)
from abiprobe.commands.known_wheels import TORCH_RELEASE
from abiprobe.commands.probe import PROBE_ITEMS

TARGET = ("--python", "cp312", "--platform", "manylinux_2_28_x86_64")


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One real thing on disk of every local kind: a wheel, an unpacked tree, a shared object, a
    requirements file, a lock, and a fifo (neither a file nor a directory)."""
    d = tmp_path_factory.mktemp("kinds")
    lib = build_shared(d, "libkind.so", "int kind(void) { return 1; }\n")
    lib.chmod(0o644)  # a library, not a program: read as an object, never run
    tree = d / "tree"
    (tree / "kindpkg").mkdir(parents=True)
    (tree / "kindpkg" / "__init__.py").write_text("")
    reqs = d / "requirements-gpu.txt"
    reqs.write_text("kindpkg>=1\n")
    lock = d / "pylock.gpu.toml"
    lock.write_text('lock-version = "1.0"\ncreated-by = "test"\n')
    fifo = d / "pipe"
    os.mkfifo(fifo)
    return {
        "wheel": build_wheel(d, "kindpkg", "1.0", {"kindpkg/__init__.py": b""}, tag="py3-none-any"),
        "directory": tree,
        "file": lib,
        "requirements": reqs,
        "pylock": lock,
        "fifo": fifo,
    }


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("wheel", WheelFileSpec),
        ("directory", DirectorySpec),
        ("file", LocalFileSpec),
        ("requirements", RequirementsFileSpec),
        ("pylock", LockFileSpec),
    ],
)
def test_each_local_kind_is_parsed_by_what_is_on_disk(local: dict[str, Path], kind: str, cls: type) -> None:
    # GIVEN a real path of the kind; WHEN parsed
    spec = parse_item(str(local[kind]))
    # THEN the spec is of its type, names that kind and keeps the text as given
    assert isinstance(spec, cls) and not isinstance(spec, NotAnItem)
    assert (spec.kind, spec.text) == (kind, str(local[kind]))


@pytest.mark.parametrize(
    ("text", "cls", "kind"),
    [
        ("https://download.pytorch.org/whl/torch-2.9.0-cp312-cp312-linux_x86_64.whl", WheelUrlSpec, "url"),
        ("torch==2.9.0", PinnedSpec, "pinned"),
        ("torch===2.9.0+cu130", PinnedSpec, "pinned"),
        ("torch[opt]==2.9.0", PinnedSpec, "pinned"),  # extras do not change which wheel is read
        ("torch", NameSpec, "name"),
        ("torch>=2.8,<2.10", RequirementSpec, "requirement"),
        ("torch==2.9.*", RequirementSpec, "requirement"),  # a wildcard names many versions
        ("torch ; python_version >= '3.10'", RequirementSpec, "requirement"),
        ("torch @ https://download.pytorch.org/whl/torch-2.9.0-cp312-cp312-linux_x86_64.whl", RequirementSpec,
         "requirement"),
    ],
)  # fmt: skip
def test_each_text_kind_is_parsed_by_its_form(text: str, cls: type, kind: str) -> None:
    spec = parse_item(text)
    assert isinstance(spec, cls) and not isinstance(spec, NotAnItem)
    assert (spec.kind, spec.text) == (kind, text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("./no-such-thing", "missing"),
        ("no-such-kernel-1.0-py3-none-any.whl", "missing"),  # a valid project name, but a wheel's file name
        ("no-such-lib.so", "missing"),
        ("requirements-missing.txt", "missing"),
        ("torch==!", "invalid"),
    ],
)
def test_a_text_that_names_nothing_is_not_an_item(tmp_path: Path, text: str, problem: str) -> None:
    spec = parse_item(str(tmp_path / text) if text.startswith("./") else text)
    assert isinstance(spec, NotAnItem) and spec.problem == problem and "\n" not in spec.why


def test_a_fifo_is_neither_a_file_nor_a_directory(local: dict[str, Path]) -> None:
    spec = parse_item(str(local["fifo"]))
    assert isinstance(spec, NotAnItem) and (spec.problem, spec.why) == (
        "special",
        "neither a file nor a directory",
    )


def test_every_command_table_names_only_known_kinds() -> None:
    for accepts in (CHECK_ITEMS, PROBE_ITEMS, INSPECT_ITEMS, TORCH_RELEASE):
        assert set(accepts.kinds) <= set(KIND_WORDS)
    # probe installs what it runs: a tree on disk is not an installable wheel
    assert set(CHECK_ITEMS.kinds) - set(PROBE_ITEMS.kinds) == {"directory"}


def _abiprobe(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "abiprobe", *argv], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (("inspect", "{requirements}"), "{requirements}: a requirements file (.txt); inspect takes a .so or "
         ".cubin file, a .whl file, a directory, an installed distribution, a wheel URL or PROJECT==VERSION"),
        (("inspect", "torch>=2"), "torch>=2: a requirement; inspect takes"),
        (("inspect", "{fifo}"), "{fifo}: neither a file nor a directory"),
        (("diff", "torch", "torch==2.9.0"), "torch: a project name; a torch release is torch==VERSION, "
         "a .whl file, a wheel URL, a directory or a Python interpreter with torch installed"),
        (("diff", "{file}", "{file}"), "{file}: not a torch wheel, and not an executable Python interpreter"),
        (("diff", "{pylock}", "torch==2.9.0"), "{pylock}: a pylock.toml; a torch release is"),
        (("probe", "{directory}", *TARGET), "{directory}: a directory; probe takes a .whl file, a wheel URL"),
        (("check", "{file}", *TARGET), "{file}: a local file other than a wheel; check takes a .whl file"),
        (("check", "./no-such-thing", *TARGET), "./no-such-thing: not a .whl file, a directory, a wheel URL, "
         "PROJECT==VERSION, a project name, a requirement, a requirements file (.txt) or a pylock.toml "
         "(no such file or directory)"),
    ],
)  # fmt: skip
def test_a_kind_a_command_does_not_take_is_one_line_and_a_usage_exit(
    local: dict[str, Path], tmp_path: Path, argv: tuple[str, ...], line: str
) -> None:
    # GIVEN an item of a kind the command does not take (or naming nothing)
    paths = {k: str(v) for k, v in local.items()}
    # WHEN the real command line is given it (a scratch cache: nothing may be written for it)
    cache = tmp_path / "cache"
    done = _abiprobe(*(a.format(**paths) for a in argv), "--cache-dir", str(cache))
    # THEN one line says what it is and what the command takes; usage exit, no traceback, nothing cached
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("abiprobe: error: "), done.stderr
    assert line.format(**paths) in lines[0]
    assert "Traceback" not in done.stderr and not any(cache.rglob("*.gz"))
