"""Rich rendering of one probe result: its outcome, the versions imported, how it ran."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table


class ProbeView(Protocol):
    """What the rendering reads of a probe result (``abiprobe.probe.ProbeResult`` has it)."""

    @property
    def label(self) -> str: ...
    @property
    def outcome(self) -> str: ...
    @property
    def expected(self) -> str | None: ...
    @property
    def disagrees(self) -> bool: ...
    @property
    def versions(self) -> Sequence[tuple[str, str | None]]: ...
    @property
    def loaded(self) -> Sequence[str]: ...
    @property
    def stubbed(self) -> bool: ...
    @property
    def python(self) -> str: ...
    @property
    def installer(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def duration(self) -> float: ...
    @property
    def smoke(self) -> Mapping[str, Any]: ...
    @property
    def temp_root(self) -> str | None: ...
    def explanation(self) -> str: ...


def render_result(result: ProbeView) -> list[RenderableType]:
    style = "green" if result.outcome == "ok" else "red"
    parts: list[RenderableType] = []
    if result.disagrees:
        parts.append(
            f"[bold white on red] DISAGREEMENT [/] static verdict said {escape(repr(result.expected))}"
        )
    parts.append(f"[bold {style}]{result.outcome}[/] {escape(result.label)}")
    parts.append(f"  {escape(result.explanation())}")
    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("distribution")
    table.add_column("version imported")
    for name, version in result.versions:
        table.add_row(escape(name), escape(version or "-"))
    parts.append(table)
    facts: dict[str, Any] = {
        "python": result.python,
        "installer": result.installer,
        "mode": result.mode,
        "driver": "stubbed (no CUDA driver on this host)" if result.stubbed else "real or not needed",
        "seconds": f"{result.duration:.2f}",
    }
    for key, value in facts.items():
        parts.append(f"  {key}: {escape(str(value))}")
    if result.loaded:
        parts.append("  loaded: " + escape(", ".join(result.loaded)))
    if result.smoke:
        parts.append(f"  smoke: {escape(json.dumps(result.smoke, sort_keys=True))}")
    if result.temp_root:
        parts.append(f"  kept: {escape(result.temp_root)}")
    return parts
