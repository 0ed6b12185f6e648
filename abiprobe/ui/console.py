"""The rich consoles abiprobe prints through: stdout for results, stderr for progress, notes and warnings.

Off a terminal (piped, redirected, CI) lines are never wrapped or cut: tables take the width their
content needs, so ``sglang-kernel==0.3.…`` never happens in a log.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console, RenderableType

UNBOUNDED = 100_000


def make_console(*, stderr: bool = False, markup: bool = True) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        return Console(stderr=stderr, markup=markup, highlight=False)
    return Console(
        file=stream, width=UNBOUNDED, soft_wrap=True, markup=markup, highlight=False, color_system=None
    )


def print_all(parts: Iterable[RenderableType], console: Console | None = None) -> None:
    """Each of a renderer's parts on its own line(s), on ``console`` (default: stdout's)."""
    out = make_console() if console is None else console
    for part in parts:
        out.print(part)
