"""A local wheelhouse of a project's runtime dependencies, packed again from the distributions installed in
the test interpreter: the files their RECORD lists, byte for byte, with their own dist-info, for an
offline install. Only pure-Python distributions are packed (their files are the wheel's files, nothing
compiled at install time); ``None`` when one is not, so the caller can say it cannot build the house.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def _closure(requirements: Iterable[str]) -> list[metadata.Distribution]:
    """The installed distributions ``requirements`` need here (markers for this interpreter, no extras)."""
    env = {**default_environment(), "extra": ""}
    todo, seen, out = list(requirements), set[str](), []
    while todo:
        req = Requirement(todo.pop())
        name = canonicalize_name(req.name)
        if name in seen or (req.marker is not None and not req.marker.evaluate(env)):
            continue
        seen.add(name)
        dist = metadata.distribution(req.name)
        out.append(dist)
        todo += dist.requires or []
    return out


def _is_pure(dist: metadata.Distribution) -> bool:
    wheel = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    return "Root-Is-Purelib: true" in wheel and bool(tags) and all(t.endswith("-none-any") for t in tags)


def _pack(dist: metadata.Distribution, out: Path) -> Path:
    name = canonicalize_name(dist.metadata["Name"]).replace("-", "_")
    wheel = out / f"{name}-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in dist.files or []:
            parts = file.parts
            if "__pycache__" in parts or parts[0] == ".." or file.name in ("INSTALLER", "REQUESTED"):
                continue
            if file.name == "direct_url.json":
                continue
            zf.writestr(file.as_posix(), Path(str(file.locate())).read_bytes())
    return wheel


def wheelhouse_of(requirements: Iterable[str], out: Path) -> Path | None:
    """Wheels of every installed distribution ``requirements`` need, in ``out``; None if one is not pure."""
    dists = _closure(requirements)
    if not all(_is_pure(d) for d in dists):
        return None
    out.mkdir(parents=True, exist_ok=True)
    for dist in dists:
        _pack(dist, out)
    return out
