"""URLs as they may be shown, logged and used as keys: credentials removed, scheme and host lower-cased."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

_SECRET_QUERY_NAME = re.compile(
    r"(?i)(.*token.*|.*secret.*|.*passw.*|.*auth.*|.*credential.*|api[-_]?key|access[-_]?key.*|key|"
    r"sig|signature|x-amz-.*|x-goog-.*)"
)


# A URL that strip_credentials gives back as it is: lower-case scheme and host, a valid port without a
# leading zero, no userinfo, no query, no characters urlsplit drops or treats apart (an index page lists
# thousands of such file URLs, and every one is keyed through here).
_PLAIN_URL = re.compile(
    r"(?:https?|file)://[a-z0-9.\-]*(?::([1-9][0-9]{0,4}))?"  # scheme, host, port
    r"(?:/(?!/)[^\s?#@\[\]\\]*)?(?:#[^\s#?@\\]+)?"  # path (not "//..."), fragment
)


def strip_credentials(url: str) -> str:
    """``url`` without userinfo and without query parameters that look like secrets (token=, sig=, ...).

    Scheme and host are lower-cased so that one page has one key however it was spelled.
    """
    plain = _PLAIN_URL.fullmatch(url)
    if plain is not None and (plain.group(1) is None or int(plain.group(1)) <= 65535):
        return url
    return _strip_credentials_parsed(url)


def _strip_credentials_parsed(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.rpartition("@")[2] if "@" in url.partition("/")[0] else url
    netloc = parts.netloc.rpartition("@")[2]
    if parts.hostname:
        host = parts.hostname
        if ":" in host:
            host = f"[{host}]"
        try:
            port = parts.port
        except ValueError:
            port = None
        netloc = host if port is None else f"{host}:{port}"
    query = "&".join(
        item
        for item in parts.query.split("&")
        if item and not _SECRET_QUERY_NAME.fullmatch(unquote(item.partition("=")[0]))
    )
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, query, parts.fragment))
