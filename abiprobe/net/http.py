"""The one HTTP client abiprobe uses: timeouts, bounded retries with backoff, credentials, byte counting.

TLS trust, client certificate, proxies and configured credentials come from the user's pip / uv /
environment settings (abiprobe.net.settings). Credentials come from the URL's userinfo, a configured index
credential, ~/.netrc (``$NETRC``), else keyring after a 401, and only ever travel in an Authorization
header; callers display and key URLs through ``display_url``. ``file://`` URLs are read from disk.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from abiprobe import log
from abiprobe.errors import FetchError
from abiprobe.net.names import HostNames
from abiprobe.net.settings import NetworkSettings, network_settings
from abiprobe.net.urls import strip_credentials
from abiprobe.ui.progress import DISPLAY

if TYPE_CHECKING:  # httpx is imported when the first request is made: a run answered from the cache never
    import httpx  # pays for it

T = TypeVar("T")
U = TypeVar("U")

RETRYABLE_STATUS = frozenset({500, 502, 503, 504, 429})
MAX_REDIRECTS = 10
RETRY_AFTER_LIMIT = 60.0  # the longest Retry-After honoured; a server asking for more is not waited for
MAX_BODY = 512 << 20  # the most bytes a whole-body GET (a page, a metadata file) may decode to
DEADLINE = 60.0  # a response still arriving after this many seconds must keep up MIN_RATE on average
MIN_RATE = 16 * 1024  # bytes per second


class RetryableError(Exception):
    """Raised inside a retried operation for a failure worth another attempt (5xx, short body …);
    ``retry_after`` is the wait the server asked for (Retry-After on 429/503), in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header (delay-seconds or an HTTP date) as seconds from now; None when absent/bad."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _status_error(response: httpx.Response) -> RetryableError:
    wait = retry_after_seconds(response.headers.get("retry-after"))
    if response.status_code not in (429, 503):
        wait = None
    suffix = f" (Retry-After {wait:.0f} s)" if wait is not None else ""
    return RetryableError(f"HTTP {response.status_code}{suffix}", wait)


def display_url(url: str) -> str:
    """``url`` without userinfo or secret-looking query parameters: safe to print, log and key on."""
    return strip_credentials(url)


@dataclass(frozen=True)
class Fetched:
    """A fully read response: status, headers, body, and the final URL after redirects."""

    status: int
    headers: Mapping[str, str]
    content: bytes
    url: str


class Http:
    """Thread-safe wrapper over one ``httpx.Client``; counts every body byte received."""

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_workers: int = 8,
        progress: bool = False,
        netrc_path: Path | None = None,
        transport: httpx.BaseTransport | None = None,
        deadline: float = DEADLINE,
        min_rate: float = MIN_RATE,
        retry_after_limit: float = RETRY_AFTER_LIMIT,
        network: NetworkSettings | None = None,
    ) -> None:
        self.retries = max(1, retries)
        self.backoff = backoff
        self.deadline, self.min_rate, self.retry_after_limit = deadline, min_rate, retry_after_limit
        self.max_workers = max(1, max_workers)
        self._bytes = 0
        self._lock = threading.Lock()
        self._progress = progress
        # set for a run whose every wheel read must be checked against its sha256 (read whole), as the
        # facts ``abiprobe cache publish`` publishes must be: range-read facts then answer for nothing
        self.verify_wheels = False
        if progress:
            DISPLAY.want(1)
        self.network = network if network is not None else network_settings()
        self._timeout, self._netrc_path, self._transport = timeout, netrc_path, transport
        self._client: httpx.Client | None = None  # made on the first request: an offline run makes none
        self.names = HostNames()  # looked up once, for the name check and every connection

    @property
    def client(self) -> httpx.Client:
        """The ``httpx.Client`` (its TLS context and transports are built the first time it is needed)."""
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def _make_client(self) -> httpx.Client:
        from abiprobe.net.httpx_client import make_client

        return make_client(
            self.network,
            timeout=self._timeout,
            max_workers=self.max_workers,
            max_redirects=MAX_REDIRECTS,
            netrc_path=self._netrc_path,
            transport=self._transport,
            names=self.names,
        )

    @property
    def bytes_received(self) -> int:
        return self._bytes

    def count(self, n: int) -> None:
        with self._lock:
            self._bytes += n
        DISPLAY.received(n)

    def progress(self, description: str, total: int | None) -> AbstractContextManager[Callable[[int], None]]:
        """A callback to advance a byte progress bar; a no-op when progress is off."""
        if not (self._progress and DISPLAY.enabled()):
            return nullcontext(lambda _n: None)
        return DISPLAY.file(description, total)

    def with_retries(self, what: str, operation: Callable[[], T]) -> T:
        """Run ``operation``; on transport errors or RetryableError retry with exponential backoff (or
        after the server's Retry-After, up to ``retry_after_limit``). Every other HTTP failure (a
        redirect loop, a body that does not decode, a bad URL) is one FetchError line at once."""
        shown = display_url(what)
        unresolved = self._unresolved(what)
        if unresolved is not None:  # the host name does not exist here: no client is made to be told so
            raise FetchError(f"{shown}: cannot connect ({unresolved})")
        import httpx

        last, wait = "", 0.0
        for attempt in range(self.retries):
            if attempt:
                time.sleep(max(wait, self.backoff * (2 ** (attempt - 1))))
            wait = 0.0
            try:
                return operation()
            except RetryableError as exc:
                last = str(exc)
                if exc.retry_after is not None:
                    if exc.retry_after > self.retry_after_limit:
                        raise FetchError(f"{shown}: {last}, longer than abiprobe waits") from None
                    wait = exc.retry_after
            except httpx.TimeoutException:
                last = "timed out"
            except httpx.TransportError as exc:
                last = _transport_reason(exc)
                if _name_not_resolved(exc):  # the host name does not exist here: asking again won't help
                    raise FetchError(f"{shown}: {last}") from None
            except httpx.TooManyRedirects:
                raise FetchError(f"{shown}: redirect loop (more than {MAX_REDIRECTS} redirects)") from None
            except httpx.DecodingError:
                raise FetchError(f"{shown}: the body does not decode as its Content-Encoding says") from None
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise FetchError(f"{shown}: {type(exc).__name__}: {_first_line(exc)}") from None
        raise FetchError(f"{shown}: {last} (after {self.retries} attempts)")

    def _unresolved(self, url: str) -> str | None:
        """Why ``url``'s host name does not resolve here (the resolver's words); None when it resolves,
        or when the name is not this host's to resolve: a proxy is configured (it resolves names
        itself), or a transport stands in for the network."""
        if self._transport is not None or self.network.proxies:
            return None
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError:
            return None  # httpx says what is wrong with the URL
        if parts.scheme not in ("http", "https") or not host:
            return None
        return self.names.unresolved(host, port or (443 if parts.scheme == "https" else 80))

    def _watch(self, what: str, started: float, received: int) -> None:
        """Give up on a response that has taken longer than ``deadline`` and is not arriving at
        ``min_rate`` on average (a slow drip): one line, not retried."""
        elapsed = time.monotonic() - started
        if elapsed > self.deadline and received < self.min_rate * elapsed:
            raise FetchError(
                f"{display_url(what)}: {received} bytes in {elapsed:.0f} s, too slow to finish "
                f"(deadline {self.deadline:.0f} s)"
            )

    @contextmanager
    def _send(self, url: str, headers: Mapping[str, str] | None) -> Iterator[httpx.Response]:
        """One GET, logged under -v with its status, the bytes read and the time taken."""
        started = time.monotonic()
        wanted = dict(headers or {})
        with self.client.stream("GET", _sendable(url), headers=wanted) as response:
            try:
                yield response
            finally:
                shown = display_url(url) + (f" [{wanted['Range']}]" if "Range" in wanted else "")
                elapsed = time.monotonic() - started
                log.request("GET", shown, response.status_code, response.num_bytes_downloaded, elapsed)

    def get(
        self, url: str, headers: Mapping[str, str] | None = None, *, max_bytes: int = MAX_BODY
    ) -> Fetched:
        """GET ``url`` and read the whole body (at most ``max_bytes`` once decoded); 5xx and broken
        connections are retried."""

        def once() -> Fetched:
            started = time.monotonic()
            with self._send(url, headers) as response:
                if response.status_code in RETRYABLE_STATUS:
                    response.read()
                    self.count(response.num_bytes_downloaded)
                    raise _status_error(response)
                parts: list[bytes] = []
                size = 0
                try:
                    for part in response.iter_bytes():
                        parts.append(part)
                        size += len(part)
                        if size > max_bytes:
                            raise FetchError(f"{display_url(url)}: body larger than {max_bytes} bytes")
                        self._watch(url, started, response.num_bytes_downloaded)
                finally:
                    self.count(response.num_bytes_downloaded)
                return Fetched(
                    response.status_code, dict(response.headers), b"".join(parts), str(response.url)
                )

        return self.with_retries(url, once)

    @contextmanager
    def stream(self, url: str, headers: Mapping[str, str] | None = None) -> Iterator[httpx.Response]:
        """Open a streamed GET; the caller reads it (``iter_chunks``) and retries through ``with_retries``."""
        with self._send(url, headers) as response:
            if response.status_code in RETRYABLE_STATUS:
                response.read()
                self.count(response.num_bytes_downloaded)
                raise _status_error(response)
            yield response

    def iter_chunks(self, response: httpx.Response) -> Iterator[bytes]:
        """Body chunks of a streamed response as they arrive, counted (and watched for a slow drip)."""
        started, received = time.monotonic(), 0
        for chunk in response.iter_raw():
            self.count(len(chunk))
            received += len(chunk)
            self._watch(str(response.url), started, received)
            yield chunk

    def map(self, fn: Callable[[U], T], items: Iterable[U]) -> list[T]:
        """``fn`` over ``items`` with at most ``max_workers`` in flight; results in input order."""
        items = list(items)
        if len(items) <= 1:
            return [fn(i) for i in items]
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(items))) as pool:
            return list(pool.map(fn, items))

    def close(self) -> None:
        if self._progress:
            self._progress = False
            DISPLAY.want(-1)
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> Http:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sendable(url: str) -> str:
    """``file:///path`` as ``file://localhost/path``: httpx takes a URL without a host for a relative one."""
    return "file://localhost/" + url[len("file:///") :] if url.startswith("file:///") else url


def _name_not_resolved(exc: httpx.TransportError) -> bool:
    """A failed DNS lookup (``socket.gaierror`` under the connect error), not a refused or lost connection."""
    import httpx

    if not isinstance(exc, httpx.ConnectError):
        return False
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, socket.gaierror):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _transport_reason(exc: httpx.TransportError) -> str:
    import httpx

    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect ({exc})" if str(exc) else "cannot connect"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection broke off ({exc})" if str(exc) else "connection broke off"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
