"""Real index pages (``tests/data/index-pages``, saved byte for byte) served by the local index server.

Their wheel links point at hosts these machines cannot reach, so each href is rewritten: to the fixture
wheel with the same filename when there is one, else to a local path that answers 404. Everything else
of the page stays as saved. A filename the page lists several times (an append-mode page) keeps its
listed hashes, except that the last listing gets the fixture's sha256: the asset at that URL was
replaced by the later upload, so only the newest hash matches what is served.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote, unquote

from support.indexserver import IndexServer, ServedFile

PAGES = Path(__file__).resolve().parents[1] / "data" / "index-pages"
_HREF = re.compile(r'href="([^"]*)"')


def rewrite(page: str, server: IndexServer, wheels: Mapping[str, ServedFile], dead: str | None = None) -> str:
    """``page`` with its wheel hrefs pointing at ``server`` (see the module docstring); with ``dead`` (a
    base URL nothing answers on) the links without a fixture point there instead of a 404."""
    links = [m.group(1) for m in _HREF.finditer(page)]
    last = {_filename(h): i for i, h in enumerate(links)}
    counter = iter(range(len(links)))

    def one(match: re.Match[str]) -> str:
        i = next(counter)
        href = match.group(1)
        fragment = href.partition("#")[2]
        name = _filename(href)
        if not name.endswith(".whl"):
            return match.group(0)
        served = wheels.get(name)
        if served is None:
            target = f"{dead or server.url}/gone/{quote(name)}"
        else:
            target = server.served_url(served)
            if last[name] == i:
                fragment = f"sha256={served.sha256}"
        return f'href="{target}{"#" + fragment if fragment else ""}"'

    return _HREF.sub(one, page)


def _filename(href: str) -> str:
    return unquote(href.partition("#")[0].rstrip("/").rsplit("/", 1)[-1])


def serve_saved(
    server: IndexServer, page: str, at: str, wheels: Mapping[str, ServedFile], dead: str | None = None
) -> str:
    """Serve the saved ``page`` (a path under ``PAGES``) at ``at``; returns its URL."""
    text = (PAGES / page).read_text(encoding="utf-8")
    return server.add_page(at, rewrite(text, server, wheels, dead).encode())
