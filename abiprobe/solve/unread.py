"""A wheel whose bytes could not be read: what makes an answer incomplete, kept whole for the one line
that says so (grouped by the host that did not serve it)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class UnreadWheel:
    filename: str
    url: str
    reason: str

    @property
    def host(self) -> str:
        """The host the wheel was asked from (credentials left out), or the scheme for a local file."""
        parts = urlsplit(self.url)
        return parts.netloc.rpartition("@")[2] or f"{parts.scheme or 'local'}:"
