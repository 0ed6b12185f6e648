"""Errors that end in one readable line: the CLI prints ``str(error)`` and exits with ``exit_code``."""

from __future__ import annotations


class AbiprobeError(Exception):
    """Base of every error abiprobe reports to a user without a traceback."""

    exit_code = 1


class UsageError(AbiprobeError):
    exit_code = 2


class BinaryFormatError(AbiprobeError):
    """A file is not the binary it claims to be, or is truncated or inconsistent."""


class ElfFormatError(BinaryFormatError):
    pass


class FatbinFormatError(BinaryFormatError):
    pass


class WheelFormatError(BinaryFormatError):
    """Broken zip, missing dist-info, wrong hash."""


class HashMismatchError(WheelFormatError):
    pass


class FetchError(AbiprobeError):
    """An index or a wheel's host could not be reached, or answered with something unusable."""

    exit_code = 3


class NotCachedError(AbiprobeError):
    """``--offline`` and the cache lacks what is asked for: the answer is as unknown as when an index
    cannot be read (the same exit status), but nothing is wrong with the index."""

    exit_code = 3


class CacheError(AbiprobeError):
    pass
