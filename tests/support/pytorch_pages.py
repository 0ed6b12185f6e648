"""Project pages in the shape PyTorch's index generator writes them (pytorch/test-infra
``s3_management/manage_v2.py``, ``to_simple_package_html``), for the local index server.

Each anchor: ``href="<base>/<key>#sha256=<digest>"`` where the key spells ``+`` as ``%2B`` and ``<base>``
is empty (same host) or another host (torch's wheels live on a second one); ``data-dist-info-metadata``
and ``data-core-metadata`` name the PEP 658 file's sha256; ``data-upload-time`` is non-standard; nightly
anchors carry no hash; the text is the filename with a literal ``+``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import quote

from support.indexserver import ServedFile


@dataclass(frozen=True)
class Anchor:
    served: ServedFile
    base: str = ""  # "" for a root-relative link, else the other host's URL
    upload_time: str | None = None
    nightly: bool = False


def key_of(served: ServedFile) -> str:
    """The link's path as the generator writes it: ``+`` escaped as ``%2B`` (the rest as it is)."""
    return quote(served.path, safe="/+").replace("+", "%2B")


def pytorch_page(project: str, anchors: list[Anchor]) -> bytes:
    lines = ["<!DOCTYPE html>", "<html>", "  <body>", f"    <h1>Links for {project}</h1>"]
    for a in anchors:
        fragment = "" if a.nightly else f"#sha256={a.served.sha256}"
        attrs = ""
        if a.served.metadata is not None:
            meta = "sha256=" + hashlib.sha256(a.served.metadata).hexdigest()
            attrs = f' data-dist-info-metadata="{meta}" data-core-metadata="{meta}"'
        if a.upload_time:
            attrs += f' data-upload-time="{a.upload_time}"'
        lines.append(
            f'    <a href="{a.base}{key_of(a.served)}{fragment}"{attrs}>{a.served.filename}</a><br/>'
        )
    lines += ["  </body>", "</html>", "<!--TIMESTAMP 1767225600-->"]
    return "\n".join(lines).encode()
