"""Find a Python interpreter matching the target (``3.12``, a path, or the wheels' own tags)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from abiprobe.errors import AbiprobeError
from abiprobe.store.localstate import local_state_dir
from abiprobe.store.primitives import atomic_write


class InterpreterNotFoundError(AbiprobeError):
    """No interpreter of the wanted version exists on this host."""


@dataclass(frozen=True)
class Interpreter:
    path: Path
    version: tuple[int, int]

    @property
    def label(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


_VERSION_SPEC = re.compile(r"^(?:python|py|cp)?(\d)\.?(\d{1,2})$")


def parse_version_spec(spec: str) -> tuple[int, int] | None:
    """``3.12`` / ``312`` / ``cp312`` / ``python3.12`` -> (3, 12); None for anything else (a path)."""
    m = _VERSION_SPEC.match(spec.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def wanted_versions(wheel_names: Iterable[str]) -> tuple[list[tuple[int, int]], tuple[int, int] | None]:
    """From wheel tags: exact CPython versions required (cp312-cp312) and the lowest abi3 floor."""
    exact: set[tuple[int, int]] = set()
    floor: tuple[int, int] | None = None
    for name in wheel_names:
        try:
            _, _, _, tags = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue
        for tag in tags:
            m = re.match(r"^cp(\d)(\d+)$", tag.interpreter)
            if not m:
                continue
            v = (int(m.group(1)), int(m.group(2)))
            if tag.abi == "abi3":
                floor = v if floor is None else max(floor, v)
            elif tag.abi.startswith("cp"):
                exact.add(v)
    return sorted(exact), floor


def query_version(python: Path) -> tuple[int, int]:
    """The interpreter's (major, minor): remembered for a real executable by its identity (path, size,
    mtime), asked by running it otherwise (a launcher script may answer differently each time)."""
    memo = _memo_path(python)
    if memo is not None:
        with contextlib.suppress(OSError, ValueError):
            major, minor = (int(n) for n in memo.read_text().split("."))
            return major, minor
    version = _ask_version(python)
    if memo is not None:
        with contextlib.suppress(OSError):
            atomic_write(memo, f"{version[0]}.{version[1]}".encode())
    return version


def _memo_path(python: Path) -> Path | None:
    """The record of an ELF executable, named by its identity; None for anything else (scripts, shims)."""
    try:
        real = os.path.realpath(python)
        with open(real, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                return None
        st = os.stat(real)
    except OSError:
        return None
    ident = f"{real}\n{st.st_size}\n{st.st_mtime_ns}\n{st.st_ino}"
    name = hashlib.sha256(ident.encode()).hexdigest()[:32]
    return local_state_dir() / "interpreters" / name


def _ask_version(python: Path) -> tuple[int, int]:
    try:
        out = subprocess.run(
            [str(python), "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise InterpreterNotFoundError(f"{python} is not a working Python interpreter: {exc}") from exc
    major, _, minor = out.partition(".")
    return int(major), int(minor)


def _candidates(version: tuple[int, int]) -> list[Path]:
    name = f"python{version[0]}.{version[1]}"
    found: list[Path] = []
    if sys.version_info[:2] == version:
        found.append(Path(sys.executable))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    on_path = shutil.which(name)
    # pyenv's shims answer only for the versions pyenv has selected; its versions are searched below
    if on_path and Path(on_path).parent != pyenv / "shims":
        found.append(Path(on_path))
    roots = [pyenv / "versions"]
    for root in roots:
        if root.is_dir():
            for d in sorted(root.glob(f"{version[0]}.{version[1]}.*"), reverse=True):
                found.append(d / "bin" / name)
    for prefix in ("/usr/local/bin", "/usr/bin", "/opt/python/bin"):
        found.append(Path(prefix) / name)
    return [p for p in found if p.is_file() and os.access(p, os.X_OK)]


def find_version(version: tuple[int, int]) -> Interpreter | None:
    for path in _candidates(version):
        try:
            if query_version(path) == version:
                return Interpreter(path, version)
        except InterpreterNotFoundError:
            continue
    return None


def find_interpreter(spec: str | None, wheel_names: Sequence[str] = ()) -> Interpreter:
    """The interpreter to probe with: an explicit path, a version, or one the wheels' tags accept."""
    if spec:
        version = parse_version_spec(spec)
        if version is None:
            path = Path(spec).expanduser()
            if not path.is_file():
                raise InterpreterNotFoundError(f"interpreter {spec} does not exist")
            return Interpreter(path.absolute(), query_version(path))
        found = find_version(version)
        if found is None:
            raise InterpreterNotFoundError(
                f"no Python {version[0]}.{version[1]} found on PATH or under pyenv; pass --python PATH"
            )
        return found
    exact, floor = wanted_versions(wheel_names)
    if len(exact) > 1:
        shown = ", ".join(f"{a}.{b}" for a, b in exact)
        raise InterpreterNotFoundError(
            f"the wheels need different Pythons ({shown}); they cannot load together"
        )
    if exact:
        found = find_version(exact[0])
        if found is None:
            raise InterpreterNotFoundError(
                f"the wheels need Python {exact[0][0]}.{exact[0][1]}, which is not installed here; "
                "pass --python"
            )
        return found
    here = sys.version_info[:2]
    if floor is None or here >= floor:
        return Interpreter(Path(sys.executable), (here[0], here[1]))
    for minor in range(floor[1], floor[1] + 10):
        found = find_version((floor[0], minor))
        if found is not None:
            return found
    raise InterpreterNotFoundError(
        f"the wheels need Python >= {floor[0]}.{floor[1]}; none found; pass --python"
    )
