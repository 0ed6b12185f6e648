"""PEP 691 JSON simple pages (``application/vnd.pypi.simple.v1+json``) -> ProjectPage (pure)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from abiprobe.errors import FetchError
from abiprobe.model.candidate import IndexFile, ProjectPage, mark_duplicates, parse_hash_fragment

JSON_CONTENT_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_CONTENT_TYPE = "application/vnd.pypi.simple.v1+html"
ACCEPT = f"{JSON_CONTENT_TYPE}, {HTML_CONTENT_TYPE};q=0.2, text/html;q=0.01"


def _metadata_value(value: object) -> bool | dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k).lower(): str(v).lower() for k, v in value.items()} or True
    return bool(value)


def _file(entry: Mapping[str, Any], page_url: str, index_url: str) -> IndexFile | None:
    href = entry.get("url")
    filename = entry.get("filename")
    if not isinstance(href, str) or not href:
        return None
    # registries list thousands of absolute file URLs: skip the costly join (and split) for them
    absolute = href if href.startswith(("https://", "http://")) else urljoin(page_url, href)
    url, fragment = urldefrag(absolute) if "#" in absolute else (absolute, "")
    if not isinstance(filename, str) or not filename:
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    hashes_raw = entry.get("hashes")
    hashes = (
        {str(k).lower(): str(v).lower() for k, v in hashes_raw.items()}
        if isinstance(hashes_raw, Mapping)
        else {}
    )
    if not hashes:
        hashes = parse_hash_fragment(fragment)
    core = entry.get("core-metadata", entry.get("dist-info-metadata", False))
    yanked_raw = entry.get("yanked", False)
    yanked: bool | str = yanked_raw if isinstance(yanked_raw, str) and yanked_raw else bool(yanked_raw)
    size = entry.get("size")
    upload_time = entry.get("upload-time")
    requires_python = entry.get("requires-python")
    return IndexFile(
        filename=filename,
        url=url,
        hashes=hashes,
        requires_python=requires_python if isinstance(requires_python, str) and requires_python else None,
        yanked=yanked,
        core_metadata=_metadata_value(core),
        upload_time=upload_time if isinstance(upload_time, str) else None,
        size=size if isinstance(size, int) and not isinstance(size, bool) else None,
        index_url=index_url,
    )


def parse_json_page(
    body: bytes, page_url: str, *, index_url: str = "", project: str | None = None
) -> ProjectPage:
    """Parse a PEP 691 project page; relative file URLs resolve against ``page_url``."""
    try:
        data = json.loads(body)
    except RecursionError:
        raise FetchError(f"{page_url}: not valid JSON (nested too deeply)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise FetchError(f"{page_url}: not valid JSON ({exc})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("files"), list):
        raise FetchError(f"{page_url}: JSON simple page has no 'files' list")
    files: list[IndexFile] = []
    notes: list[str] = []
    problems: list[str] = []
    for entry in data["files"]:
        try:
            parsed = _file(entry, page_url, index_url) if isinstance(entry, Mapping) else None
        except ValueError:  # a URL urllib cannot split (``//[::1/...``)
            parsed = None
        if parsed is None:
            problems.append(f"skipped a malformed file entry on {page_url}")
            continue
        files.append(parsed)
    marked = mark_duplicates(files)
    dupes = sorted({f.filename for f in marked if f.duplicate})
    notes += [f"{name} is listed more than once with different hashes" for name in dupes]
    name = data.get("name")
    return ProjectPage(
        url=page_url,
        files=marked,
        notes=(*problems, *notes),
        project=name if isinstance(name, str) else project,
        problems=tuple(problems),
    )


def is_json_content_type(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() == JSON_CONTENT_TYPE
