"""The one line an incomplete answer (exit 3) ends with: every wheel that could not be read, grouped by
the host that did not serve it, the indexes that did not answer in full, and where the whole list is."""

from __future__ import annotations

from collections.abc import Sequence

from abiprobe.solve.unread import UnreadWheel


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def incomplete_line(
    unread: Sequence[UnreadWheel],
    indexes: Sequence[str] = (),
    others: int = 0,
    where: str | None = None,
    unknown: int = 0,
) -> str:
    """``the answer is incomplete: 11 wheels could not be read (host: 9: a.whl, ...; other: 2: ...)``; the
    indexes that did not answer in full, other problems and ``unknown`` checks counted, and ``where`` the
    full list is."""
    parts: list[str] = []
    if unread:
        hosts: dict[str, list[str]] = {}
        for wheel in unread:
            names = hosts.setdefault(wheel.host, [])
            if wheel.filename not in names:
                names.append(wheel.filename)
        total = sum(len(names) for names in hosts.values())
        grouped = "; ".join(f"{host}: {len(names)}: {', '.join(names)}" for host, names in hosts.items())
        parts.append(f"{_count(total, 'wheel', 'wheels')} could not be read ({grouped})")
    if indexes:
        did = _count(len(indexes), "index", "indexes")
        parts.append(f"{did} did not answer in full ({', '.join(indexes)})")
    if others:
        parts.append(_count(others, "other problem", "other problems"))
    if unknown:
        parts.append(_count(unknown, "check is unknown", "checks are unknown"))
    text = "the answer is incomplete: " + ("; ".join(parts) or "some bytes were not read")
    return f"{text}; reasons in {where}" if where else text
