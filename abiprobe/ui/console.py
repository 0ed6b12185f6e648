"""The rich consoles abiprobe prints through: stdout for results, stderr for progress, notes and warnings.

Off a terminal (piped, redirected, CI) lines are never wrapped or cut: tables take the width their
content needs, so ``sglang-kernel==0.3.…`` never happens in a log.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console, RenderableType

from abiprobe import log
from abiprobe.report.lines import Line, Part, Stderr, Warn

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


def print_all(parts: Iterable[Part], console: Console | None = None) -> None:
    """A renderer's parts in order: on ``console`` (default: stdout's), warnings and ``Stderr`` parts on
    stderr."""
    out = make_console() if console is None else console
    err: Console | None = None
    for part in parts:
        if isinstance(part, Warn):
            log.warn(part.text)
        elif isinstance(part, Stderr):
            err = make_console(stderr=True) if err is None else err
            _print(err, part.part)
        else:
            _print(out, part)


def _print(console: Console, part: RenderableType | Line) -> None:
    if isinstance(part, Line):
        console.print(part.text, markup=part.markup, soft_wrap=part.soft_wrap)
    else:
        console.print(part)
