"""How much abiprobe says on stderr: ``-q`` (quiet: results and errors only), default, ``-v`` (every HTTP
request with its status, bytes and time). Results go to stdout; notes, warnings and errors to stderr."""

from __future__ import annotations

import sys

_level = 0


def set_verbosity(level: int) -> None:
    global _level
    _level = level


def verbosity() -> int:
    return _level


def quiet() -> bool:
    return _level < 0


def warn(message: str) -> None:
    """A warning line on stderr (hidden by -qq)."""
    if _level > -2:
        print(f"abiprobe: warning: {message}", file=sys.stderr)


def error(message: str) -> None:
    """An error line on stderr, at every verbosity (an incomplete answer is one: exit 3)."""
    print(f"abiprobe: error: {message}", file=sys.stderr)


def request(method: str, url: str, status: int | str, received: int, seconds: float) -> None:
    """One line per HTTP request under -v (the URL as shown: no credentials)."""
    if _level >= 1:
        print(f"abiprobe: {method} {url} -> {status}, {_size(received)} in {seconds:.2f}s", file=sys.stderr)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    for unit in ("kB", "MB", "GB"):
        n_f = n / 1024
        if n_f < 1024 or unit == "GB":
            return f"{n_f:.1f} {unit}"
        n = int(n_f)
    return f"{n} B"
