"""TLS trust, client certificate, proxies and credentials from the user's pip, uv and environment settings.

Trust, first that is set: pip's ``cert`` (``PIP_CERT``, pip.conf), ``REQUESTS_CA_BUNDLE`` /
``CURL_CA_BUNDLE`` (what pip's HTTP library reads), ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` (OpenSSL's, and
uv's), uv's ``native-tls`` (``UV_NATIVE_TLS``: the system store, through truststore when installed),
else the certifi bundle. Client certificate: pip's ``client-cert``, else ``SSL_CLIENT_CERT`` (uv's).
Proxies: pip's ``proxy`` (``PIP_PROXY``, pip.conf) for every scheme, else ``HTTPS_PROXY`` / ``HTTP_PROXY``
/ ``ALL_PROXY`` (lower case first), with ``NO_PROXY``. Credentials beyond URL userinfo and netrc:
``UV_INDEX_<NAME>_USERNAME`` / ``_PASSWORD`` for uv's named indexes, and keyring (optional extra) after
a 401 unless pip's ``keyring-provider`` is ``disabled``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abiprobe.errors import UsageError
from abiprobe.installers.install_settings import pip_install_settings, uv_install_settings
from abiprobe.installers.pip import Setting, pip_settings
from abiprobe.installers.uv import uv_settings

if TYPE_CHECKING:
    import ssl


@dataclass(frozen=True)
class Credential:
    """Credentials configured for every URL under ``prefix``; the secret is never printed."""

    prefix: str
    username: str
    password: str
    origin: str


@dataclass(frozen=True)
class NetworkSettings:
    ca: Setting | None = None  # a CA file or folder replacing the default trust
    native_tls: Setting | None = None
    client_cert: Setting | None = None
    proxies: Mapping[str, Setting] | None = None  # scheme ("http", "https") -> proxy URL
    no_proxy: Setting | None = None
    credentials: tuple[Credential, ...] = ()
    netrc: Path | None = None
    keyring: str = "off"  # "on" (importable and not disabled), "off: <why>"
    ignored: tuple[str, ...] = ()  # settings that lost to a higher one, for `abiprobe config`
    # pip's trusted-host and uv's allow-insecure-host: host or host:port whose certificate is not verified
    trusted_hosts: tuple[Setting, ...] = ()

    def trust_label(self) -> str:
        if self.ca is not None:
            return f"{self.ca.value} (from {self.ca.origin})"
        if self.native_tls is not None:
            via = " via truststore" if _truststore() else ""
            return f"the system store{via} (from {self.native_tls.origin})"
        return "the certifi bundle (default)"

    def ssl_context(self) -> ssl.SSLContext:
        """The context every connection uses; a missing or unreadable file is one readable error."""
        import ssl  # with the first connection: a run answered from the cache makes none

        try:
            if self.ca is not None:
                path = Path(self.ca.value)
                if path.is_dir():
                    context = ssl.create_default_context(capath=str(path))
                else:
                    context = ssl.create_default_context(cafile=str(path))
            elif self.native_tls is not None:
                module = _truststore()
                context = (
                    module.SSLContext(ssl.PROTOCOL_TLS_CLIENT) if module else ssl.create_default_context()
                )
            else:
                import certifi

                context = ssl.create_default_context(cafile=certifi.where())
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(
                f"CA certificates {self.ca.value if self.ca else ''} ({_origin(self.ca)}): {exc}"
            ) from None
        if self.client_cert is not None:
            try:
                context.load_cert_chain(self.client_cert.value)
            except (OSError, ssl.SSLError) as exc:
                raise UsageError(
                    f"client certificate {self.client_cert.value} ({self.client_cert.origin}): {exc}"
                ) from None
        return context

    def unverified_context(self) -> ssl.SSLContext:
        """The context for a trusted host: no certificate or name check (the client certificate kept)."""
        import ssl

        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if self.client_cert is not None:
            context.load_cert_chain(self.client_cert.value)
        return context


def _origin(setting: Setting | None) -> str:
    return setting.origin if setting is not None else "default"


def _truststore() -> Any:
    for name in ("truststore", "pip._vendor.truststore"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _env(environ: Mapping[str, str], *names: str) -> Setting | None:
    for name in names:
        if environ.get(name):
            return Setting(environ[name], name)
    return None


def _first(candidates: list[Setting | None]) -> tuple[Setting | None, list[str]]:
    present = [c for c in candidates if c is not None]
    if not present:
        return None, []
    return present[0], [f"{c.value} ({c.origin}), overridden by {present[0].origin}" for c in present[1:]]


def _proxies(environ: Mapping[str, str], pip: Mapping[str, Setting]) -> dict[str, Setting]:
    if pip.get("proxy") and pip["proxy"].value.strip():
        proxy = pip["proxy"]
        return {"http": proxy, "https": proxy}
    out: dict[str, Setting] = {}
    every = _env(environ, "all_proxy", "ALL_PROXY")
    for scheme in ("http", "https"):
        found = _env(environ, f"{scheme}_proxy", f"{scheme.upper()}_PROXY") or every
        if found is not None:
            out[scheme] = found
    return out


def _keyring_state(pip: Mapping[str, Setting], uv: Setting | None) -> str:
    """pip's keyring-provider ``disabled`` or uv's (``UV_KEYRING_PROVIDER``, default disabled, set
    explicitly) turn keyring off; otherwise it is asked after a 401 when the package is there."""
    provider = pip.get("keyring-provider")
    for said in (provider, uv):
        if said is not None and said.value.strip() == "disabled":
            return f"off: disabled ({said.origin})"
    try:  # found, not imported: only a 401 needs it
        found = importlib.util.find_spec("keyring") is not None
    except (ImportError, ValueError, AttributeError):  # blocked in sys.modules, or a broken spec
        found = False
    if not found:
        return "off: the keyring package is not installed (pip install 'abiprobe[keyring]')"
    return "on"


def default_netrc(environ: Mapping[str, str]) -> Path | None:
    if environ.get("NETRC"):
        return Path(environ["NETRC"])
    home = environ.get("HOME")
    return Path(home) / ".netrc" if home else None


def network_settings(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> NetworkSettings:
    env = os.environ if environ is None else environ
    pip = pip_settings(env)
    uv = uv_settings(env, cwd or Path.cwd())
    ca, ignored = _first(
        [
            pip.get("cert"),
            _env(env, "REQUESTS_CA_BUNDLE"),
            _env(env, "CURL_CA_BUNDLE"),
            _env(env, "SSL_CERT_FILE"),
            _env(env, "SSL_CERT_DIR"),
        ]
    )
    client, ignored_client = _first([pip.get("client-cert"), _env(env, "SSL_CLIENT_CERT")])
    if ca is not None and uv.native_tls is not None:
        ignored.append(f"native TLS ({uv.native_tls.origin}), overridden by {ca.origin}")
    creds = tuple(Credential(url, user, password, origin) for url, user, password, origin in uv.credentials)
    pip_hosts = pip_install_settings(env, rules=False).trusted_hosts
    uv_hosts = uv_install_settings(env, cwd or Path.cwd(), rules=False)
    uv_keyring = uv_hosts.keyring_provider
    return NetworkSettings(
        ca=ca,
        native_tls=uv.native_tls,
        client_cert=client,
        proxies=_proxies(env, pip),
        no_proxy=_env(env, "no_proxy", "NO_PROXY"),
        credentials=creds,
        netrc=default_netrc(env),
        keyring=_keyring_state(pip, uv_keyring),
        ignored=(*ignored, *ignored_client),
        trusted_hosts=(*pip_hosts, *uv_hosts.trusted_hosts),
    )


def _bare(url: str) -> str:
    """``scheme://host[:port]/path`` of a URL: no userinfo, query or fragment."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


def credential_source(url: str, settings: NetworkSettings) -> str:
    """Where the credentials for ``url`` would come from (never the secret itself)."""
    import netrc
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.username or parts.password:
        return "the URL's userinfo"
    for cred in sorted(settings.credentials, key=lambda c: -len(c.prefix)):
        if _bare(url).startswith(_bare(cred.prefix).rstrip("/")):
            return f"{cred.origin} (user {cred.username!r})"
    if settings.netrc is not None and settings.netrc.is_file() and parts.hostname:
        try:
            entry = netrc.netrc(str(settings.netrc)).authenticators(parts.hostname)
        except (netrc.NetrcParseError, OSError):
            entry = None
        if entry is not None:
            return f"netrc {settings.netrc} (machine {parts.hostname}, user {entry[0]!r})"
    if settings.keyring == "on":
        return "keyring, asked after a 401"
    return "none"
