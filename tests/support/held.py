"""The ``FullFacts`` port of a test whose wheels' facts are all held in memory (``WheelInfo.of``)."""

from __future__ import annotations

from abiprobe.model.facts import WheelFacts, WheelInfo


class HeldFacts:
    """Full facts as each info holds them; an info that holds none is a mistake of the test."""

    def full(self, info: WheelInfo) -> WheelFacts | None:
        assert info.held is not None, f"{info.summary.filename}: no facts held"
        return info.held


HELD = HeldFacts()


def _built_in_unread() -> frozenset[str]:
    from abiprobe.model.stack import default_stack

    return default_stack().unread_sources()


# the packages whose Python sources a read under the built-in stack's rules leaves out
BUILT_IN_UNREAD = _built_in_unread()
