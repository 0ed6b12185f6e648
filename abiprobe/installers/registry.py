"""pip's built-in default index and its hosts, read from a pip at run time: no registry host is written here.

The pip importable here is asked first (its ``pip._internal.models.index``, 8 ms to import); without one
(abiprobe installed as a tool), a pip installed elsewhere on the machine: the interpreters named
``python3`` / ``python`` on PATH and those in the first line of the ``pip3`` / ``pip`` scripts on PATH, each
asked once in a subprocess. None answers only when no pip exists on the machine at all.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# Run by another interpreter: its working folder is kept off sys.path, so a `pip` folder there cannot answer.
_ASK = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
    "import json, pip; from pip._internal.models.index import PyPI\n"
    "print(json.dumps([PyPI.simple_url, PyPI.netloc, PyPI.file_storage_domain, pip.__version__]))"
)
ASK_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class PipRegistry:
    """pip's default index as the pip that was asked names it, and which pip that was."""

    simple_url: str
    index_host: str
    files_host: str
    source: str


def from_this_interpreter() -> PipRegistry | None:
    """The registry of the pip importable in this interpreter, through its own API."""
    try:
        module = importlib.import_module("pip._internal.models.index")
        pip = importlib.import_module("pip")
        index = module.PyPI
        return PipRegistry(
            str(index.simple_url),
            str(index.netloc),
            str(index.file_storage_domain),
            f"pip {pip.__version__} (importable here)",
        )
    except (ImportError, AttributeError):
        return None


def from_interpreter(python: str) -> PipRegistry | None:
    """The registry of the pip that ``python`` imports, asked in a subprocess; None if it has none."""
    try:
        done = subprocess.run(
            [python, "-c", _ASK], capture_output=True, text=True, timeout=ASK_TIMEOUT_S, check=False
        )
        url, index_host, files_host, version = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    if done.returncode != 0 or not all(isinstance(v, str) for v in (url, index_host, files_host)):
        return None
    return PipRegistry(url, index_host, files_host, f"pip {version} of {python}")


def _shebang_interpreter(script: str) -> str | None:
    try:
        with open(script, "rb") as handle:
            first = handle.readline(512).decode("utf-8", "replace")
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[1])
    return words[0]


def machine_interpreters(environ: Mapping[str, str] | None = None) -> list[str]:
    """Interpreters that may have a pip, in the order they are asked, each once."""
    path = (os.environ if environ is None else environ).get("PATH", os.defpath)
    found = [shutil.which(name, path=path) for name in ("python3", "python")]
    for script in ("pip3", "pip"):
        where = shutil.which(script, path=path)
        found.append(_shebang_interpreter(where) if where else None)
    return list(dict.fromkeys(p for p in found if p))


def from_machine(environ: Mapping[str, str] | None = None) -> PipRegistry | None:
    """The registry of the first pip found outside this interpreter."""
    return next((r for p in machine_interpreters(environ) if (r := from_interpreter(p))), None)


@functools.cache
def pip_registry() -> PipRegistry | None:
    """pip's default registry: this interpreter's pip, else one installed elsewhere; None without any pip."""
    return from_this_interpreter() or from_machine()
