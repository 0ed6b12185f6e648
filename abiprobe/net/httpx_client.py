"""The parts of the HTTP client that need httpx itself: credentials, per-scheme transports, the client.

Imported when :class:`abiprobe.net.http.Http` makes its first request, so that a run answered from the
cache never imports httpx (a tenth of the start-up of a warm solve).
"""

from __future__ import annotations

import base64
import netrc
import ssl
import threading
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from abiprobe import __version__
from abiprobe.net.filetransport import FileTransport
from abiprobe.net.names import HostNames
from abiprobe.net.settings import Credential, NetworkSettings
from abiprobe.net.urls import strip_credentials


class CredentialsAuth(httpx.Auth):
    """Basic auth: the URL's userinfo (remembered for later URLs of that host), a configured credential
    for the URL's index, netrc; after a 401 with none of them, keyring (when enabled)."""

    def __init__(
        self, netrc_path: Path | None, configured: tuple[Credential, ...] = (), keyring: bool = False
    ) -> None:
        self._netrc_path = netrc_path
        self._configured = sorted(configured, key=lambda c: -len(c.prefix))
        self._keyring = keyring
        self._seen: dict[str, tuple[str, str]] = {}
        self._netrc: netrc.netrc | None = None
        self._loaded = False
        self._lock = threading.Lock()

    def _lookup(self, host: str) -> tuple[str, str] | None:
        with self._lock:
            if not self._loaded:
                self._loaded = True
                if self._netrc_path is not None and self._netrc_path.is_file():
                    try:
                        self._netrc = netrc.netrc(str(self._netrc_path))
                    except (netrc.NetrcParseError, OSError):
                        self._netrc = None
        if self._netrc is None:
            return None
        entry = self._netrc.authenticators(host)
        if entry is None:
            return None
        login, _account, password = entry
        return (login or "", password or "")

    def _configured_for(self, url: str) -> tuple[str, str] | None:
        shown = strip_credentials(url)
        for cred in self._configured:
            if shown.startswith(strip_credentials(cred.prefix).rstrip("/")):
                return (cred.username, cred.password)
        return None

    @staticmethod
    def _set(request: httpx.Request, creds: tuple[str, str]) -> None:
        token = base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
        request.headers["Authorization"] = f"Basic {token}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if "authorization" not in request.headers:
            user, password = request.url.username, request.url.password
            origin = f"{request.url.host}:{request.url.port}"
            if user or password:
                self._seen[origin] = (user, password)
            creds = (
                self._seen.get(origin)
                or self._configured_for(str(request.url))
                or self._lookup(request.url.host)
            )
            if creds is not None:
                self._set(request, creds)
        response = yield request
        if response.status_code == 401 and self._keyring and "authorization" not in request.headers:
            found = keyring_credentials(str(request.url))
            if found is not None:
                self._set(request, found)
                yield request


def keyring_credentials(url: str) -> tuple[str, str] | None:
    """(username, password) keyring holds for the URL, else for its host (pip's two lookups)."""
    import keyring

    parts = urlsplit(strip_credentials(url))
    for service in (f"{parts.scheme}://{parts.netloc}{parts.path}", parts.netloc):
        try:
            cred = keyring.get_credential(service, None)
        except Exception:  # a keyring backend may fail in any way; the answer is then "none"
            return None
        if cred is not None:
            return (cred.username or "", cred.password or "")
    return None


class ResolvedOnce(httpcore.NetworkBackend):
    """Connects as ``inner`` does, to the addresses ``names`` holds for the host (looked up once for all
    the client's connections: :mod:`abiprobe.net.names`). TLS still names the host: the connection layer
    passes it apart, for the certificate and SNI."""

    def __init__(self, inner: httpcore.NetworkBackend, names: HostNames) -> None:
        self._inner, self._names = inner, names

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = self._names.addresses(host, port)
        except OSError as exc:  # the resolver's words, as the connection error's cause
            raise httpcore.ConnectError(str(exc)) from exc
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in addresses:  # in the resolver's order, as a connection by name tries them
            try:
                return self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # getaddrinfo names at least one address or raises
        raise failure

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return self._inner.connect_unix_socket(path, timeout, socket_options)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def http_transport(
    verify: ssl.SSLContext, limits: httpx.Limits, names: HostNames, proxy: str | None = None
) -> httpx.HTTPTransport:
    """An httpx transport whose connections look their host up once (:class:`ResolvedOnce`). Where
    httpx keeps its connection pool otherwise than this version does, it is left as httpx made it."""
    transport = httpx.HTTPTransport(verify=verify, limits=limits, proxy=proxy)
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if isinstance(inner, httpcore.NetworkBackend):
        pool._network_backend = ResolvedOnce(inner, names)  # type: ignore[union-attr]
    return transport


def _mounts(
    net: NetworkSettings, verify: ssl.SSLContext, limits: httpx.Limits, names: HostNames
) -> dict[str, httpx.BaseTransport | None]:
    """Per-scheme transports: proxies (and their NO_PROXY exceptions), and ``file://`` from disk."""
    mounts: dict[str, httpx.BaseTransport | None] = {"file://": FileTransport()}
    proxies = dict(net.proxies or {})
    exempt = [h.strip() for h in (net.no_proxy.value if net.no_proxy else "").split(",") if h.strip()]
    if net.trusted_hosts:  # pip's trusted-host / uv's allow-insecure-host: TLS unverified for that host
        unverified = net.unverified_context()
        https = proxies.get("https") if "*" not in exempt else None
        for trusted in net.trusted_hosts:
            via = https.value if https is not None else None
            mounts[f"all://{trusted.value}"] = http_transport(unverified, limits, names, via)
    if "*" in exempt:
        return mounts
    for scheme, proxy in proxies.items():
        mounts[f"{scheme}://"] = http_transport(verify, limits, names, proxy.value)
    if proxies:
        for host in exempt:
            pattern = host if "://" in host else f"all://{'' if host[0].isdigit() else '*'}{host.lstrip('.')}"
            mounts[pattern] = http_transport(verify, limits, names)
    return mounts


def make_client(
    net: NetworkSettings,
    *,
    timeout: float,
    max_workers: int,
    max_redirects: int,
    netrc_path: Path | None,
    transport: httpx.BaseTransport | None,
    names: HostNames | None = None,
) -> httpx.Client:
    """The one ``httpx.Client`` of an :class:`~abiprobe.net.http.Http`: TLS, proxies, credentials, limits."""
    verify = net.ssl_context()
    limits = httpx.Limits(max_connections=max_workers * 2, max_keepalive_connections=max_workers)
    names = names if names is not None else HostNames()
    mounts = _mounts(net if transport is None else NetworkSettings(), verify, limits, names)
    return httpx.Client(
        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        follow_redirects=True,
        max_redirects=max_redirects,
        auth=CredentialsAuth(netrc_path or net.netrc, net.credentials, net.keyring == "on"),
        headers={"User-Agent": f"abiprobe/{__version__}"},
        verify=verify,
        limits=limits,
        transport=transport if transport is not None else http_transport(verify, limits, names),
        mounts=mounts,
        trust_env=False,
    )
