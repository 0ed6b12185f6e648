"""The lock's closure resolver over real wheel files' own METADATA: newest first, markers for the target,
extras, and a readable line when the indexes cannot complete the set."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from support.held import BUILT_IN_UNREAD
from support.wheelbuild import build_wheel

from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.candidate import Candidate, IndexFile, candidates_from_files
from abiprobe.model.facts import WheelInfo
from abiprobe.model.target import Target
from abiprobe.solve.candidates import FilterOptions, StackCandidate
from abiprobe.solve.closure import ClosureError, complete_install, resolve_closure

TARGET = Target(cuda=(13, 0), python=(3, 12), platform="manylinux_2_28_x86_64")
PURE = "py3-none-any"


class Files:
    """A listing over wheel files on disk: what an index page and its PEP 658 files would say."""

    def __init__(self, wheels: list[Path]) -> None:
        self.wheels = {w.name: w for w in wheels}

    def candidates(self, project: str) -> tuple[Candidate, ...]:
        files = [IndexFile(w.name, w.as_uri()) for w in self.wheels.values()]
        return candidates_from_files(files, project)[0]

    def metadata(self, file: IndexFile) -> bytes:
        with zipfile.ZipFile(self.wheels[file.filename]) as zf:
            (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
            return zf.read(name)


def _root(listing: Files, wheel: Path) -> StackCandidate:
    (c,) = [c for c in listing.candidates(wheel.name.split("-")[0]) if c.file.filename == wheel.name]
    return StackCandidate(
        "torch", c, 0, info=WheelInfo.of(wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD))
    )


def test_newest_allowed_versions_markers_for_the_target_and_extras(tmp_path: Path) -> None:
    root = build_wheel(tmp_path, "app", "1.0", {"app.py": b""}, tag=PURE, requires_dist=[
        "dep>=1,<3", "hostonly; sys_platform == 'win32'", "extrapkg[fast]",
    ])  # fmt: skip
    wheels = [root]
    wheels += [build_wheel(tmp_path, "dep", v, {"dep.py": b""}, tag=PURE) for v in ("1.0", "2.5", "3.0")]
    extra_reqs = ["fastlib>=2; extra == 'fast'", "slowlib; extra == 'slow'"]
    wheels += [build_wheel(tmp_path, "extrapkg", "1.0", {"e.py": b""}, tag=PURE, requires_dist=extra_reqs)]
    wheels += [build_wheel(tmp_path, "fastlib", v, {f"f{v[0]}.py": b""}, tag=PURE) for v in ("1.0", "2.0")]
    listing = Files(wheels)
    pins = resolve_closure([_root(listing, root)], listing, TARGET, FilterOptions())
    assert [(p.name, str(p.version)) for p in pins] == [
        ("dep", "2.5"),
        ("extrapkg", "1.0"),
        ("fastlib", "2.0"),
    ]


def test_an_impossible_set_is_one_readable_line_and_adds_nothing(tmp_path: Path) -> None:
    root = build_wheel(tmp_path, "app", "1.0", {"app.py": b""}, tag=PURE, requires_dist=["dep>=2"])
    dep = build_wheel(tmp_path, "dep", "1.0", {"dep.py": b""}, tag=PURE)
    listing = Files([root, dep])
    with pytest.raises(ClosureError, match=r"app 1.0 requires dep>=2"):
        resolve_closure([_root(listing, root)], listing, TARGET, FilterOptions())
    added, problem = complete_install([_root(listing, root)], listing, TARGET, FilterOptions())
    assert added == []
    assert problem is not None and "dep>=2" in problem
