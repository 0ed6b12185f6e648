"""PEP 503 HTML simple pages and flat find-links pages -> ProjectPage (pure: bytes in, dataclass out)."""

from __future__ import annotations

import hashlib
import posixpath
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from abiprobe.model.candidate import IndexFile, ProjectPage, mark_duplicates, parse_hash_fragment

_DIST_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz", ".egg")


class _AnchorCollector(HTMLParser):
    """Collects ``<a>`` attributes and text, and the first ``<base href>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.anchors: list[tuple[dict[str, str | None], str]] = []
        self.unclosed = 0  # <a> elements never closed before the next one or the end
        self._current: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base" and self.base is None:
            href = dict(attrs).get("href")
            if href:
                self.base = href
        elif tag == "a":
            if self._current is not None:
                self.unclosed += 1
            self._finish()
            self._current = dict(attrs)
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._finish()

    def handle_data(self, data: str) -> None:
        if self._current is not None:
            self._text.append(data)

    def close(self) -> None:
        if self.rawdata.lstrip().startswith("<"):  # the body ends inside a tag
            self.unclosed += 1
        super().close()
        if self._current is not None:
            self.unclosed += 1
        self._finish()

    def _finish(self) -> None:
        if self._current is not None:
            self.anchors.append((self._current, "".join(self._text).strip()))
        self._current = None


def _metadata_attr(value: str | None) -> bool | dict[str, str]:
    """``data-core-metadata`` value -> False, True, or the hash it names."""
    if value is None or value.strip().lower() == "false":
        return False
    hashes = parse_hash_fragment(value)
    return hashes or True


def _filename(href: str, text: str) -> str:
    path = urlsplit(href).path
    base = unquote(posixpath.basename(path))
    if text and unquote(text).endswith(_DIST_SUFFIXES):
        return unquote(text)
    return base or unquote(text)


def parse_html_page(
    body: bytes, page_url: str, *, index_url: str = "", project: str | None = None
) -> ProjectPage:
    """Parse a PEP 503 project page or a find-links page; every anchor that names a file becomes one."""
    parser = _AnchorCollector()
    text = body.decode("utf-8", errors="replace")
    parser.feed(text)
    parser.close()
    problems = _markup_problems(text, parser, page_url)
    try:
        base = urljoin(page_url, parser.base) if parser.base else page_url
    except ValueError:
        problems.append(f"{page_url}: <base href> is not a valid URL")
        base = page_url
    files: list[IndexFile] = []
    notes: list[str] = []
    bad_links = 0
    for attrs, anchor_text in parser.anchors:
        href = attrs.get("href")
        if not href:
            bad_links += 1
            continue
        try:
            absolute = urljoin(base, href.strip())
            url, fragment = urldefrag(absolute)
            filename = _filename(url, anchor_text)
        except ValueError:
            bad_links += 1
            continue
        if not filename.endswith(_DIST_SUFFIXES):
            continue
        malformed = _malformed_attributes(fragment, attrs)
        if malformed:
            problems.append(f"{filename} on {page_url}: malformed {', '.join(malformed)}")
        core = _metadata_attr(attrs.get("data-core-metadata"))
        if core is False:
            core = _metadata_attr(attrs.get("data-dist-info-metadata"))
        yanked_attr = attrs.get("data-yanked")
        yanked: bool | str = False if "data-yanked" not in attrs else (yanked_attr or True)
        files.append(
            IndexFile(
                filename=filename,
                url=url,
                hashes=parse_hash_fragment(fragment),
                requires_python=(attrs.get("data-requires-python") or None),
                yanked=yanked,
                core_metadata=core,
                # not in PEP 503, but PyTorch's index writes it (pytorch/test-infra manage_v2.py)
                upload_time=(attrs.get("data-upload-time") or None),
                index_url=index_url,
            )
        )
    if bad_links:
        problems.append(f"skipped {bad_links} link(s) without a usable href on {page_url}")
    if project is not None and not files and not problems:
        problems.append(f"{page_url} lists no files")
    marked = mark_duplicates(files)
    dupes = sorted({f.filename for f in marked if f.duplicate})
    notes += [f"{name} is listed more than once with different hashes" for name in dupes]
    return ProjectPage(
        url=page_url, files=marked, notes=(*problems, *notes), project=project, problems=tuple(problems)
    )


def _malformed_attributes(fragment: str, attrs: dict[str, str | None]) -> list[str]:
    """What of a file link's hash fragment and data attributes does not say what PEP 503 / 658 / 592
    spell: such a page is answered as it is, but never stored as sound (it is asked for again)."""
    bad = []
    if not _hash_is_sound(fragment):
        bad.append("hash fragment")
    for name in ("data-core-metadata", "data-dist-info-metadata"):
        value = attrs.get(name)
        if value is not None and value.strip().lower() not in ("true", "false") and not _hash_is_sound(value):
            bad.append(name)
    spec = attrs.get("data-requires-python")
    if spec:
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            bad.append("data-requires-python")
    return bad


def _hash_is_sound(text: str) -> bool:
    """A ``name=hexdigest`` of a known algorithm with a digest of its length; or no hash at all."""
    name, sep, value = text.partition("=")
    name = name.strip().lower()
    if not sep:
        return name not in hashlib.algorithms_available
    if name not in hashlib.algorithms_available:
        return True  # another fragment (#egg=...), not a hash
    try:
        size = hashlib.new(name).digest_size
    except (ValueError, TypeError):  # a variable-length digest (shake_*): any hex is as good
        size = 0
    value = value.strip().lower()
    hex_ok = bool(value) and all(c in "0123456789abcdef" for c in value)
    return hex_ok and (size == 0 or len(value) == 2 * size)


def _markup_problems(text: str, parser: _AnchorCollector, page_url: str) -> list[str]:
    """What says a page is not the HTML it was labelled: no markup at all, or unclosed links."""
    problems: list[str] = []
    head = text.lstrip()[:1]
    if head in ("{", "["):
        problems.append(f"{page_url} was served as HTML but its body looks like JSON")
    elif text.strip() and "<" not in text:
        problems.append(f"{page_url} was served as HTML but holds no markup")
    if parser.unclosed:
        problems.append(f"{page_url}: {parser.unclosed} element(s) not closed")
    return problems
