"""The parts of the HTTP client that need httpx itself: credentials, per-scheme transports, the client.

Imported when :class:`abiprobe.net.http.Http` makes its first request, so that a run answered from the
cache never imports httpx (a tenth of the start-up of a warm solve).
"""

from __future__ import annotations

import base64
import netrc
import ssl
import threading
from collections.abc import Generator
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from abiprobe import __version__
from abiprobe.net.filetransport import FileTransport
from abiprobe.net.settings import Credential, NetworkSettings
from abiprobe.store.primitives import strip_credentials


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


def _mounts(
    net: NetworkSettings, verify: ssl.SSLContext, limits: httpx.Limits
) -> dict[str, httpx.BaseTransport | None]:
    """Per-scheme transports: proxies (and their NO_PROXY exceptions), and ``file://`` from disk."""
    mounts: dict[str, httpx.BaseTransport | None] = {"file://": FileTransport()}
    proxies = dict(net.proxies or {})
    exempt = [h.strip() for h in (net.no_proxy.value if net.no_proxy else "").split(",") if h.strip()]
    if "*" in exempt:
        return mounts
    for scheme, proxy in proxies.items():
        mounts[f"{scheme}://"] = httpx.HTTPTransport(verify=verify, limits=limits, proxy=proxy.value)
    if proxies:
        for host in exempt:
            pattern = host if "://" in host else f"all://{'' if host[0].isdigit() else '*'}{host.lstrip('.')}"
            mounts[pattern] = httpx.HTTPTransport(verify=verify, limits=limits)
    return mounts


def make_client(
    net: NetworkSettings,
    *,
    timeout: float,
    max_workers: int,
    max_redirects: int,
    netrc_path: Path | None,
    transport: httpx.BaseTransport | None,
) -> httpx.Client:
    """The one ``httpx.Client`` of an :class:`~abiprobe.net.http.Http`: TLS, proxies, credentials, limits."""
    verify = net.ssl_context()
    limits = httpx.Limits(max_connections=max_workers * 2, max_keepalive_connections=max_workers)
    mounts = _mounts(net if transport is None else NetworkSettings(), verify, limits)
    return httpx.Client(
        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        follow_redirects=True,
        max_redirects=max_redirects,
        auth=CredentialsAuth(netrc_path or net.netrc, net.credentials, net.keyring == "on"),
        headers={"User-Agent": f"abiprobe/{__version__}"},
        verify=verify,
        limits=limits,
        transport=transport,
        mounts=mounts,
        trust_env=False,
    )
