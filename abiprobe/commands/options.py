"""The target and index options every command that looks wheels up takes, spelled and checked in one place.

``--cuda --arch --python --platform --driver`` say where the wheels must load; ``--index --extra-index
--index-strategy --offline --cache-dir`` where they are looked up. Older spellings (``--index-url``,
``--extra-index-url``, ``--strategy``) stay accepted, hidden from the help.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

from abiprobe.errors import UsageError
from abiprobe.index.config import STRATEGIES
from abiprobe.model.target import CUDA_DRIVER_TABLE, Target, parse_cuda_version

DEFAULT_CUDA = "13.0"
KNOWN_CUDA: tuple[tuple[int, int], ...] = tuple(row[1] for row in CUDA_DRIVER_TABLE)


def known_cuda(text: str) -> tuple[int, int]:
    """``--cuda`` as (major, minor): a CUDA release abiprobe has driver and PTX data for, else a usage
    error naming the ones it knows (a version without data would give verdicts nothing backs)."""
    version = parse_cuda_version(text)
    if version not in KNOWN_CUDA:
        known = ", ".join(f"{a}.{b}" for a, b in KNOWN_CUDA)
        raise UsageError(f"--cuda {text}: not a CUDA release abiprobe knows (one of {known})")
    return version


def add_target_options(
    parser: argparse.ArgumentParser,
    *,
    python_help: str | None = None,
    cuda: bool = True,
    arch: bool = True,
    driver: bool = True,
    arch_help: str = "target GPU architecture (sm120, sm_90a, 12.0)",
) -> None:
    """The target options; ``python_help`` replaces --python's text where it also takes an interpreter."""
    group = parser.add_argument_group("target (where the wheels must load)")
    if cuda:
        group.add_argument("--cuda", default=DEFAULT_CUDA, help="target CUDA version (13.0, cu130)")
    if arch:
        group.add_argument("--arch", help=arch_help)
    host = Target.from_host()
    group.add_argument(
        "--python",
        help=python_help or f"target Python (cp312, 3.12; default: this interpreter's, {host.python_tag})",
    )
    group.add_argument("--platform", help=f"target platform tag (default: this host's, {host.platform})")
    if driver:
        group.add_argument("--driver", help="target NVIDIA driver version (580.95.05); default: as --cuda")


def add_index_options(
    parser: argparse.ArgumentParser, *, index_help: str | None = None, lookups: bool = True
) -> None:
    """The index options; ``lookups`` adds --index-strategy, --offline and --cache-dir (commands that
    read pages, not only name them)."""
    group = parser.add_argument_group("indexes (where the wheels are looked up)")
    group.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="URL",
        help=index_help or "index to read (repeatable); replaces the configured and default indexes",
    )
    group.add_argument("--index-url", dest="index", action="append", help=argparse.SUPPRESS)
    group.add_argument(
        "--extra-index", action="append", default=[], metavar="URL", help="index read before the rest"
    )
    group.add_argument("--extra-index-url", dest="extra_index", action="append", help=argparse.SUPPRESS)
    if not lookups:
        return
    group.add_argument("--index-strategy", choices=STRATEGIES, help="multi-index strategy")
    group.add_argument("--offline", action="store_true", help="answer from the wheel_index_cache alone")
    group.add_argument("--cache-dir", type=Path, help="wheel_index_cache directory")


def target_of(args: argparse.Namespace, *, python: str | None = None, base: Target | None = None) -> Target:
    """The target the options name (``python``: a version found otherwise, e.g. from an interpreter),
    every value checked as every command checks it."""
    cuda = getattr(args, "cuda", None) or DEFAULT_CUDA
    major, minor = known_cuda(cuda)
    return Target.parse(
        cuda=f"{major}.{minor}",
        arch=getattr(args, "arch", None),
        python=python if python is not None else getattr(args, "python", None),
        platform=getattr(args, "platform", None),
        driver=getattr(args, "driver", None),
        base=base,
    )


def interpreter_version(python: str) -> str:
    """``3.12``: the version of the interpreter at ``python`` (a usage error when it cannot be run)."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"cannot run the interpreter {python}: {exc}") from None
    return out


def target_python(python: str | None) -> str | None:
    """The Python version whose tags pick wheels: ``--python`` as a version, or its interpreter's."""
    if python is None:
        return None
    return python if is_python_version(python) else interpreter_version(python)


def is_python_version(text: str) -> bool:
    """Whether ``--python`` names a version (3.12, cp312) rather than an interpreter."""
    return re.fullmatch(r"(cp|pp)?\d\.?\d{1,2}", text.strip().lower()) is not None
