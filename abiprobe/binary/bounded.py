"""Bounded random access over bytes, an mmap or a seekable stream: the one reader the ELF, cubin and
fatbin readers read through.

A read either returns exactly the bytes asked for or raises the format's error (``ElfFormatError`` unless
told otherwise) in one line that names the file and what was being read; it never returns short or
empty, so a truncated or hostile header can neither run a read past the end nor be mistaken for padding.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections.abc import Callable
from typing import BinaryIO, TypeAlias

from abiprobe.errors import BinaryFormatError, ElfFormatError, FatbinFormatError

BinaryInput: TypeAlias = bytes | bytearray | memoryview | mmap.mmap | BinaryIO
Searchable: TypeAlias = bytes | bytearray | mmap.mmap
# read(offset, length) -> exactly ``length`` bytes, else the format error
Reader: TypeAlias = Callable[[int, int], bytes]

_KIND: dict[type[BinaryFormatError], str] = {ElfFormatError: "ELF", FatbinFormatError: "fatbin"}


class NeedBytes(Exception):  # a request for more input, not an error
    """A read reached past the bytes available so far (of a file being inflated): ``end`` is how many
    bytes from the start it needs."""

    def __init__(self, end: int) -> None:
        super().__init__(end)
        self.end = end


class ByteSource:
    """Bounded random access over bytes, an mmap or a seekable stream; every short read is an error.

    A stream backed by a regular file is memory-mapped read-only, so big tables are used in place
    (page-cache pages) instead of being copied; other streams are read with seek + read.

    With ``size`` the source holds only the first bytes of a file of that size (a member still being
    inflated): a read inside the file but past the bytes held raises :class:`NeedBytes`.
    ``error`` is the format error reads raise (its kind, ELF or fatbin, is named in the message).
    """

    def __init__(
        self,
        source: BinaryInput,
        label: str,
        size: int | None = None,
        *,
        error: type[BinaryFormatError] = ElfFormatError,
    ) -> None:
        self.label = label
        self.error = error
        self.kind = _KIND.get(error, "file")
        self._buf: Searchable | memoryview | None = None
        self._stream: BinaryIO | None = None
        self._owned_map: mmap.mmap | None = None
        if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
            self._buf = source
            self.size = source.nbytes if isinstance(source, memoryview) else len(source)
        else:
            self._owned_map = _map_file(source)
            if self._owned_map is not None:
                self._buf = self._owned_map
                self.size = len(self._owned_map)
            else:
                self._stream = source
                try:
                    self.size = source.seek(0, os.SEEK_END)
                except (OSError, ValueError) as exc:
                    raise self.fail(f"cannot seek in {self.kind} stream: {exc}") from None
        self.held = self.size
        if size is not None:
            self.held, self.size = min(self.size, size), size

    def __enter__(self) -> ByteSource:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Unmap a mapping this source made itself (left to the collector while views still exist)."""
        if self._owned_map is not None:
            with contextlib.suppress(BufferError):
                self._owned_map.close()

    def fail(self, message: str) -> BinaryFormatError:
        return self.error(f"{self.label}: {message}")

    def check(self, offset: int, length: int, what: str) -> None:
        """Raise unless ``[offset, offset+length)`` lies inside the file."""
        if offset < 0 or length < 0:
            raise self.fail(f"bad {self.kind}: {what} has a negative offset or size")
        if offset + length > self.size:
            raise self.fail(f"truncated {self.kind}: {what} runs past end of file")
        if offset + length > self.held:
            raise NeedBytes(offset + length)

    def read(self, offset: int, length: int, what: str) -> bytes:
        self.check(offset, length, what)
        if self._buf is not None:
            return bytes(self._buf[offset : offset + length])
        assert self._stream is not None
        try:
            self._stream.seek(offset)
            data = self._stream.read(length)
        except (OSError, ValueError) as exc:
            raise self.fail(f"cannot read {what}: {exc}") from None
        if len(data) != length:
            raise self.fail(f"truncated {self.kind}: {what} runs past end of file")
        return data

    def view(self, offset: int, length: int, what: str) -> memoryview:
        """The bytes at ``offset`` without copying them where the source is already in memory."""
        if self._buf is None:
            return memoryview(self.read(offset, length, what))
        self.check(offset, length, what)
        return memoryview(self._buf)[offset : offset + length]

    def searchable(self, offset: int, length: int, what: str) -> tuple[Searchable, int]:
        """A buffer with ``find`` holding the range, and the range's start in it (in place if possible)."""
        self.check(offset, length, what)
        if self._buf is not None and not isinstance(self._buf, memoryview):
            return self._buf, offset
        return self.read(offset, length, what), 0

    def window(self, offset: int, length: int, what: str) -> Reader:
        """A reader of ``[offset, offset+length)`` (which must lie in the file) with offsets relative to
        its start; a read leaving the window raises like one leaving the file."""
        self.check(offset, length, what)

        def read(at: int, count: int) -> bytes:
            if at < 0 or count < 0 or at + count > length:
                raise self.fail(
                    f"truncated {self.kind}: {count} bytes at {at:#x} run past the end of {what}"
                    f" ({length} bytes)"
                )
            return self.read(offset + at, count, what)

        return read


def _map_file(source: BinaryIO) -> mmap.mmap | None:
    try:
        fd = source.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size == 0:
            return None
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, AttributeError):
        return None


def source_label(source: BinaryInput, path: str) -> str:
    """How messages name the object: ``path``, else the stream's file name, else ``<elf>``."""
    return path or str(getattr(source, "name", "") or "<elf>")


__all__ = ["BinaryInput", "ByteSource", "NeedBytes", "Reader", "Searchable", "source_label"]
