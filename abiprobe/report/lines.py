"""What a text renderer hands the CLI to print: rich renderables, in order, and a few marked parts.

A renderer returns a list of ``Part``: a renderable (a table, or a line of rich markup) goes to stdout;
``Line`` is a line that asks for its own printing (markup not read, or soft-wrapped on a terminal too);
``Warn`` is a warning for stderr and ``Stderr`` any other part for stderr, kept in order with the rest.
``abiprobe.ui.console.print_all`` prints such a list.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import RenderableType


@dataclass(frozen=True)
class Line:
    """One line printed with ``markup`` and ``soft_wrap`` as given (None: as the console does)."""

    text: str
    markup: bool | None = None
    soft_wrap: bool | None = None


@dataclass(frozen=True)
class Warn:
    """A warning line for stderr (``abiprobe: warning: TEXT``)."""

    text: str


@dataclass(frozen=True)
class Stderr:
    """A part printed on stderr instead of stdout."""

    part: RenderableType | Line


Part = RenderableType | Line | Warn | Stderr
