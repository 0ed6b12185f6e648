"""One binary object -> ElfFacts with its GPU code: the ELF reader and the fatbin reader joined."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import BinaryIO

from abiprobe.errors import BinaryFormatError
from abiprobe.model.facts import ElfFacts

ELF_MAGIC = b"\x7fELF"
_HASH_CHUNK = 1 << 20


def looks_like_binary_member(name: str) -> bool:
    """Whether a wheel member can hold loader-relevant ELF or GPU code, judged by its name alone."""
    base = name.rsplit("/", 1)[-1]
    if name.endswith("/") or ".dist-info/" in name:
        return False
    return base.endswith((".so", ".cubin")) or ".so." in base


def inspect_stream(stream: BinaryIO, path: str, *, with_hash: bool = True) -> ElfFacts:
    """Read the loader facts and the GPU code of one seekable ELF stream."""
    # the readers with the first object read: what asks only whether a name looks like one needs neither
    from abiprobe.binary.cuda import gpu_code_of_elf
    from abiprobe.binary.elf import read_elf

    stream.seek(0)
    if stream.read(4) != ELF_MAGIC:
        raise BinaryFormatError(f"{path}: not an ELF file")
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(0)
    facts = read_elf(stream, path)
    gpu = gpu_code_of_elf(stream, path)  # a standalone cubin's single entry, or every fatbin entry
    digest = _sha256_of_stream(stream) if with_hash else None
    return dataclasses.replace(facts, gpu_code=tuple(gpu), sha256=digest, size=size)


def inspect_file(path: Path, display: str | None = None) -> ElfFacts:
    """Inspect an ELF file on disk (a .so, a .cubin, an executable)."""
    name = display or path.name
    try:
        with path.open("rb") as fh:
            return inspect_stream(fh, name)
    except OSError as exc:
        raise BinaryFormatError(f"{name}: cannot read: {exc.strerror or exc}") from None


def _sha256_of_stream(stream: BinaryIO) -> str:
    stream.seek(0)
    h = hashlib.sha256()
    while chunk := stream.read(_HASH_CHUNK):
        h.update(chunk)
    return h.hexdigest()
