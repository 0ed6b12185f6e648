"""Registry host names as tokens in what abiprobe writes to disk, real names again when it reads.

The default registry's hosts are never written literally into files abiprobe produces for committing
(wheel_index_cache/, matrices/): they become ``{registry}`` and ``{registry-files}``, resolved at run time
from pip's own built-in default (abiprobe.installers.registry, where the default index URL comes from too).
Other hosts (the PyTorch, sglang and flashinfer indexes, a private mirror) are kept as they are.
"""

from __future__ import annotations

import functools

from abiprobe.installers.registry import pip_registry

REGISTRY = "{registry}"
REGISTRY_FILES = "{registry-files}"


@functools.cache
def _pairs() -> tuple[tuple[str, str], ...]:
    """(host, token) pairs, longest host first; empty when no pip exists on this machine."""
    registry = pip_registry()
    if registry is None:
        return ()
    files, index = registry.files_host, registry.index_host
    pairs = [(files, REGISTRY_FILES), (index, REGISTRY)]
    return tuple(sorted((p for p in pairs if p[0]), key=lambda p: -len(p[0])))


def neutral(text: str) -> str:
    """Registry host names replaced by their tokens."""
    for host, token in _pairs():
        text = text.replace(host, token)
    return text


def concrete(text: str) -> str:
    """Tokens replaced by the registry host names of this machine's pip."""
    for host, token in _pairs():
        text = text.replace(token, host)
    return text


READABLE = {REGISTRY_FILES: "(default registry files)", REGISTRY: "(default registry)"}


def readable(text: str) -> str:
    """Tokens in words, for files people read that may be committed (matrices/*.md, *.html): no literal
    ``{registry}`` and no registry host name; terminal output uses :func:`concrete` instead."""
    for token, words in READABLE.items():
        text = text.replace(token, words)
    return text


def neutral_bytes(data: bytes) -> bytes:
    for host, token in _pairs():
        data = data.replace(host.encode(), token.encode())
    return data


def concrete_bytes(data: bytes) -> bytes:
    for host, token in _pairs():
        data = data.replace(token.encode(), host.encode())
    return data


def registry_file_host() -> str | None:
    """The host the default registry serves wheel files from, per pip; None without any pip."""
    return next((host for host, token in _pairs() if token == REGISTRY_FILES), None)
