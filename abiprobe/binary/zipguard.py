"""One policy for reading zip members from hostile files: what ``zipfile`` may raise on them, and how far
a member may inflate (checked before inflating, from the central directory, and again while streaming)."""

from __future__ import annotations

import lzma
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from abiprobe.errors import WheelFormatError

# What zipfile raises on a damaged or hostile archive, beyond BadZipFile: an unsupported compression
# method or zip version (NotImplementedError), an encrypted member (RuntimeError), a name flagged UTF-8
# that is not (UnicodeDecodeError), offsets past the file (ValueError, OverflowError, struct.error).
ZIP_ERRORS: tuple[type[Exception], ...] = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    NotImplementedError,
    RuntimeError,
    UnicodeDecodeError,
    ValueError,
    OverflowError,
    struct.error,
    OSError,
)
MEMBER_LIMIT = 8 << 30  # inflated bytes of one member (the largest real CUDA libraries are ~2 GiB)
SMALL_MEMBER_LIMIT = 16 << 20  # METADATA, WHEEL, RECORD, top_level.txt
RATIO_FLOOR = 64 << 20  # members inflating to less than this are not judged by their ratio
RATIO_LIMIT = 200  # inflated : compressed beyond the floor (real libraries: under 20)
_COPY_CHUNK = 1 << 20


def zip_reason(exc: BaseException) -> str:
    """One line for what went wrong inside a zip."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, RuntimeError) and "encrypted" in text:
        return "encrypted members are not supported"
    return f"{text} ({type(exc).__name__})" if text else type(exc).__name__


@contextmanager
def zip_errors(label: str) -> Iterator[None]:
    """Map whatever ``zipfile`` raises on a bad archive to one WheelFormatError line about ``label``."""
    try:
        yield
    except WheelFormatError:
        raise
    except RecursionError:
        raise WheelFormatError(f"{label}: not a readable zip (nested too deeply)") from None
    except ZIP_ERRORS as exc:
        raise WheelFormatError(f"{label}: not a readable zip ({zip_reason(exc)})") from None


def member_limit(name: str) -> int:
    """The most bytes member ``name`` may inflate to: dist-info files are small text."""
    head, _, rest = name.partition("/")
    return SMALL_MEMBER_LIMIT if head.endswith(".dist-info") and "/" not in rest else MEMBER_LIMIT


def check_declared(name: str, file_size: int, compressed_size: int) -> None:
    """Refuse a member whose central-directory sizes say it inflates too far, before inflating it."""
    limit = member_limit(name)
    if file_size > limit:
        raise WheelFormatError(f"{name}: inflates to {file_size} bytes, more than the {limit} allowed")
    if file_size > RATIO_FLOOR and file_size > RATIO_LIMIT * max(compressed_size, 1):
        ratio = file_size // max(compressed_size, 1)
        raise WheelFormatError(f"{name}: compression ratio {ratio}:1 is a zip bomb's, not a library's")


def check_archive(zf: zipfile.ZipFile, label: str) -> None:
    """Every member's declared sizes under the caps of :func:`check_declared`, and the members together
    under the same ratio, before anything inflates them (an installer writes what it inflates): the
    first member over them is named in one line."""
    total = packed = 0
    with zip_errors(label):
        for info in zf.infolist():
            try:
                check_declared(info.filename, info.file_size, info.compress_size)
            except WheelFormatError as exc:
                raise WheelFormatError(f"{label}: {exc}") from None
            total, packed = total + info.file_size, packed + info.compress_size
    if total > RATIO_FLOOR and total > RATIO_LIMIT * max(packed, 1):
        ratio = total // max(packed, 1)
        raise WheelFormatError(f"{label}: its members inflate {ratio}:1 together, a zip bomb's ratio")


def check_produced(name: str, produced: int, file_size: int) -> None:
    """Stop a member that inflates past the size its central directory gave (checked while streaming)."""
    if produced > file_size:
        raise WheelFormatError(f"{name}: inflates past the {file_size} bytes its central directory gives")


def copy_member(zf: zipfile.ZipFile, name: str, out: IO[bytes]) -> None:
    """Inflate member ``name`` into ``out`` under the size and ratio caps; every failure is one line."""
    with zip_errors(name):
        info = zf.getinfo(name)
        check_declared(name, info.file_size, info.compress_size)
        produced = 0
        with zf.open(info) as src:
            while chunk := src.read(_COPY_CHUNK):
                produced += len(chunk)
                check_produced(name, produced, info.file_size)
                out.write(chunk)


def open_zip(source: Path | IO[bytes], label: str) -> zipfile.ZipFile:
    """``zipfile.ZipFile(source)`` with its failures as one WheelFormatError line about ``label``."""
    with zip_errors(label):
        return zipfile.ZipFile(source)


__all__ = [
    "MEMBER_LIMIT",
    "RATIO_LIMIT",
    "SMALL_MEMBER_LIMIT",
    "ZIP_ERRORS",
    "check_archive",
    "check_declared",
    "check_produced",
    "copy_member",
    "open_zip",
    "zip_errors",
]
