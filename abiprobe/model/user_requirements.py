"""Requirements as users have them: requirements files (pip's format) and ``pylock.toml`` (PEP 751).

Parsing is pure: files are read through the ``read`` callable given. A requirements file's lines are
joined at a trailing backslash, ``#`` comments dropped, ``${VAR}`` expanded from the given variables;
``-r`` / ``-c`` include other files (relative to the including one), the options that change what an
installer picks are kept (``--index-url``, ``--extra-index-url``, ``--find-links``, ``--no-index``,
``--pre``), ``--hash`` options are dropped, and an editable or unknown option is an error naming its
line. Markers are evaluated for the target by the caller (``for_target``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from abiprobe.errors import UsageError
from abiprobe.model.requirements import marker_environment
from abiprobe.model.target import Target

Reader = Callable[[str], str]
_VAR = re.compile(r"\$\{([A-Z0-9_]+)\}")
_IGNORED = frozenset({"--prefer-binary", "--only-binary", "--no-binary", "--use-feature", "--trusted-host",
                      "--require-hashes", "--progress-bar", "--no-build-isolation"})  # fmt: skip
_VALUED = frozenset({"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-r", "--requirement",
                     "-c", "--constraint", "--only-binary", "--no-binary", "--use-feature",
                     "--trusted-host", "--progress-bar", "--hash"})  # fmt: skip


def is_pinned(requirement: Requirement) -> bool:
    """Whether ``requirement`` names one version outright: one ``==`` or ``===`` clause, no wildcard."""
    specs = list(requirement.specifier)
    return len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version


@dataclass(frozen=True)
class UserRequirement:
    """One requirement line: the text as an item (a wheel path or URL stays as given) and its origin."""

    text: str
    origin: str
    requirement: Requirement | None = None  # None: a wheel file or URL

    @property
    def pinned(self) -> bool:
        """Whether it names one version outright (``==X`` without a wildcard) or a wheel."""
        return self.requirement is None or is_pinned(self.requirement)


@dataclass(frozen=True)
class RequirementsInput:
    """Requirements and constraints, and the installer options the files set."""

    requirements: tuple[UserRequirement, ...] = ()
    constraints: tuple[UserRequirement, ...] = ()
    index_urls: tuple[str, ...] = ()
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False
    pre: bool = False
    notes: tuple[str, ...] = field(default=())


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = number
        line = re.sub(r"(^|\s)#.*$", "", raw)
        if line.endswith("\\"):
            buf += line[:-1]
            continue
        out.append((start, (buf + line).strip()))
        buf = ""
    if buf:
        out.append((start, buf.strip()))
    return [(n, line) for n, line in out if line]


def _is_wheel_ref(text: str) -> bool:
    return text.endswith(".whl") and ("/" in text or text.startswith(".") or "@" not in text)


def _requirement(text: str, origin: str, base: str) -> UserRequirement:
    if _is_wheel_ref(text) and "://" not in text and " @ " not in text:
        return UserRequirement(_joined(base, text), origin)
    if text.startswith(("http://", "https://")):
        return UserRequirement(text, origin)
    try:
        return UserRequirement(str(Requirement(text)), origin, Requirement(text))
    except InvalidRequirement as exc:
        raise UsageError(f"{origin}: {text!r} is not a requirement ({exc})") from None


def _joined(base: str, path: str) -> str:
    if "://" in path or path.startswith("/") or not base:
        return path
    return str(PurePosixPath(base) / path)


def _split_options(line: str, origin: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"{origin}: cannot split the line ({exc})") from None


def parse_requirements_file(
    path: str, read: Reader, environ: Mapping[str, str] | None = None, *, constraint: bool = False
) -> RequirementsInput:
    """``path`` (and every file it includes) as requirements, constraints and installer options."""
    acc: dict[str, list[Any]] = {k: [] for k in ("requirements", "constraints", "index_urls",
                                                  "extra_index_urls", "find_links", "notes")}  # fmt: skip
    flags = {"no_index": False, "pre": False}
    _walk(path, read, environ or {}, constraint, acc, flags, [])
    return RequirementsInput(
        requirements=tuple(acc["requirements"]),
        constraints=tuple(acc["constraints"]),
        index_urls=tuple(acc["index_urls"]),
        extra_index_urls=tuple(acc["extra_index_urls"]),
        find_links=tuple(acc["find_links"]),
        no_index=flags["no_index"],
        pre=flags["pre"],
        notes=tuple(acc["notes"]),
    )


def _walk(path: str, read: Reader, environ: Mapping[str, str], constraint: bool,
          acc: dict[str, list[Any]], flags: dict[str, bool], seen: list[str]) -> None:  # fmt: skip
    if path in seen:
        raise UsageError(f"{path}: includes itself (through {' -> '.join(seen)})")
    try:
        text = read(path)
    except OSError as exc:
        raise UsageError(f"cannot read requirements file {path}: {exc.strerror or exc}") from None
    base = str(PurePosixPath(path).parent) if "/" in path else ""
    for number, line in _logical_lines(text):
        origin = f"{path}:{number}"
        line = _VAR.sub(lambda m: environ.get(m.group(1), m.group(0)), line)
        if not line.startswith("-"):
            words = line.split(" --hash", 1)[0].split(" -", 1)[0].strip()
            acc["constraints" if constraint else "requirements"].append(_requirement(words, origin, base))
            continue
        opts = _split_options(line, origin)
        i = 0
        while i < len(opts):
            opt, value = opts[i], None
            if "=" in opt and opt.startswith("--"):
                opt, value = opt.split("=", 1)
            elif opt in _VALUED:
                if i + 1 >= len(opts):
                    raise UsageError(f"{origin}: {opt} needs a value")
                i, value = i + 1, opts[i + 1]
            elif len(opt) > 2 and opt[:2] in ("-r", "-c", "-i", "-f"):
                opt, value = opt[:2], opt[2:]
            i += 1
            if opt in ("-r", "--requirement", "-c", "--constraint"):
                assert value is not None
                nested = constraint or opt in ("-c", "--constraint")
                _walk(_joined(base, value), read, environ, nested, acc, flags, [*seen, path])
            elif opt in ("-i", "--index-url"):
                acc["index_urls"].append(value)
            elif opt == "--extra-index-url":
                acc["extra_index_urls"].append(value)
            elif opt in ("-f", "--find-links"):
                assert value is not None
                acc["find_links"].append(_joined(base, value))
            elif opt == "--no-index":
                flags["no_index"] = True
            elif opt == "--pre":
                flags["pre"] = True
            elif opt in _IGNORED or opt == "--hash":
                acc["notes"].append(f"{origin}: {opt} does not change which wheel is judged; left out")
            elif opt in ("-e", "--editable"):
                raise UsageError(f"{origin}: an editable install is a source tree, not a wheel to judge")
            else:
                raise UsageError(f"{origin}: unknown requirements-file option {opt}")


def for_target(requirements: Sequence[UserRequirement], target: Target) -> list[UserRequirement]:
    """The requirements whose environment markers hold on the target (not this host)."""
    env = marker_environment(target)
    out = []
    for r in requirements:
        marker = r.requirement.marker if r.requirement is not None else None
        if marker is None or marker.evaluate(env):
            out.append(r)
    return out


@dataclass(frozen=True)
class LockedWheel:
    """One wheel of a pylock.toml package: its name, version, file name, URL or path, and sha256."""

    name: str
    version: str
    filename: str
    location: str
    sha256: str | None


def parse_pylock(data: Mapping[str, Any], origin: str, target: Target) -> list[list[LockedWheel]]:
    """The packages of a PEP 751 lock that apply on the target: each its wheels (the target picks one);
    a package with no wheel (an sdist, a VCS or directory source) is an error naming it."""
    if str(data.get("lock-version", "")).split(".")[0] != "1":
        raise UsageError(f"{origin}: lock-version {data.get('lock-version')!r} is not 1.x")
    env = marker_environment(target)
    out: list[list[LockedWheel]] = []
    for pkg in data.get("packages") or []:
        name, version = str(pkg.get("name", "")), str(pkg.get("version", ""))
        marker = pkg.get("marker")
        if marker:
            from packaging.markers import Marker

            if not Marker(str(marker)).evaluate(env):
                continue
        wheels = []
        for w in pkg.get("wheels") or []:
            location = str(w.get("url") or w.get("path") or "")
            filename = str(w.get("name") or location.rsplit("/", 1)[-1])
            sha = (w.get("hashes") or {}).get("sha256")
            try:
                known = version or str(parse_wheel_filename(filename)[1])
            except InvalidWheelFilename:
                raise UsageError(f"{origin}: package {name}: {filename!r} is not a wheel file name") from None
            wheels.append(LockedWheel(name, known, filename, location, sha))
        if not wheels:
            raise UsageError(f"{origin}: package {name} {version} has no wheel (only wheels can be judged)")
        out.append(wheels)
    return out
