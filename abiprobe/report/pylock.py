"""The chosen set as a PEP 751 lock file (``pylock.<key>.toml``) that pip (``pip install -r``) and uv
(``uv pip install -r``) install as is: each wheel's exact URL, size, sha256, upload time and index, and a
``[tool.abiprobe]`` table naming the target and the verdicts that chose the set.

The document is built here; when the installed ``packaging`` has ``packaging.pylock`` it is checked
against that reading of the standard before it is written (abiprobe.report.tomlwrite writes the TOML).
"""

from __future__ import annotations

import datetime as _dt
import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from abiprobe import __version__
from abiprobe.errors import AbiprobeError
from abiprobe.model.target import Target
from abiprobe.report.tomlwrite import dumps
from abiprobe.solve.candidates import StackCandidate


class PylockError(AbiprobeError):
    """The lock document does not hold to PEP 751 (as packaging.pylock reads it)."""


def pylock_name(key: str) -> str:
    """``pylock.<key>.toml``: the only names besides ``pylock.toml`` that installers take as PEP 751 files."""
    return f"pylock.{key}.toml"


def _upload_time(text: str | None) -> _dt.datetime | None:
    if not text:
        return None
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=_dt.timezone.utc)


def target_marker(target: Target) -> str:
    """The environment the lock is for, as a PEP 508 marker."""
    implementation = "cpython" if target.implementation == "cp" else "pypy"
    return (
        f'python_version == "{target.python[0]}.{target.python[1]}" and sys_platform == "linux" '
        f'and platform_machine == "{target.machine}" and implementation_name == "{implementation}"'
    )


def _package(w: StackCandidate, find_links: Collection[str]) -> dict[str, Any]:
    f = w.candidate.file
    sha = f.sha256 or (w.info.sha256 if w.info is not None else None)
    size = f.size or (w.summary.size if w.summary is not None else None)
    wheel: dict[str, Any] = {"name": f.filename, "upload-time": _upload_time(f.upload_time), "url": f.url}
    wheel["size"] = size or None
    wheel["hashes"] = {"sha256": sha} if sha else None
    package: dict[str, Any] = {"name": str(w.name), "version": str(w.version)}
    if f.index_url and f.index_url not in find_links:
        package["index"] = f.index_url
    package["wheels"] = [wheel]
    return package


def pylock_document(
    wheels: Sequence[StackCandidate],
    target: Target,
    abiprobe_table: Mapping[str, Any],
    *,
    find_links: Collection[str] = (),
) -> dict[str, Any]:
    """PEP 751 lock of ``wheels`` (one wheel per package) for ``target``."""
    packages = sorted((_package(w, find_links) for w in wheels), key=lambda p: str(p["name"]))
    return {
        "lock-version": "1.0",
        "environments": [target_marker(target)],
        "requires-python": f"=={target.python[0]}.{target.python[1]}.*",
        "created-by": "abiprobe",
        "packages": packages,
        "tool": {"abiprobe": {"version": __version__, **abiprobe_table}},
    }


def _validate(document: Mapping[str, Any]) -> None:
    try:
        module = importlib.import_module("packaging.pylock")
    except ImportError:
        return
    clean = _without_none(document)
    try:
        module.Pylock.from_dict(clean)
    except module.PylockValidationError as exc:
        raise PylockError(f"the lock would not be a valid pylock.toml: {exc}") from None


def _without_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def render_pylock(document: Mapping[str, Any], *, checked: Callable[[str], bool] | None = None) -> str:
    """TOML text of a lock document, checked against packaging.pylock where it is installed; not where
    ``checked(text)`` says these very bytes were checked already (the lock a warm solve writes again)."""
    text = dumps(document)
    if checked is None or not checked(text):
        _validate(document)
    return text
