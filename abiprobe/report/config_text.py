"""Rich rendering of the ``abiprobe config`` document: the indexes in lookup order, TLS, proxies, files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import RenderableType
from rich.table import Table


def render_config(doc: dict[str, Any], proxy_urls: Mapping[str, str]) -> list[RenderableType]:
    """The parts to print on a console without markup; ``proxy_urls`` are the proxies' URLs as shown
    (credentials hidden), by scheme."""
    table = Table(title=f"indexes ({doc['strategy']}, in lookup order)")
    for column in ("index", "kind", "from", "credentials"):
        table.add_column(column, overflow="fold")
    for entry in doc["indexes"]:
        table.add_row(entry["url"], entry["kind"], entry["origin"], entry["credentials"])
    parts: list[RenderableType] = [table]
    parts.extend(f"  {note}" for note in doc["notes"])
    tls = doc["tls"]
    parts.append(f"TLS trust: {tls['trust']}")
    cert = tls["client_cert"]
    parts.append(
        f"TLS client certificate: {cert['value'] + ' (from ' + cert['origin'] + ')' if cert else 'none'}"
    )
    parts.extend(f"  not used: {line}" for line in tls["overridden"])
    proxies = doc["proxies"]["proxies"]
    if not proxies:
        parts.append("proxy: none")
    for scheme, proxy in proxies.items():
        parts.append(f"proxy for {scheme}: {proxy_urls[scheme]} (from {proxy['origin']})")
    if doc["proxies"]["no_proxy"]:
        np = doc["proxies"]["no_proxy"]
        parts.append(f"no proxy for: {np['value']} (from {np['origin']})")
    parts.append(f"keyring: {doc['keyring']}")
    parts.extend(_install_lines(doc["install"]))
    if "published_facts" in doc:
        published = doc["published_facts"]
        if published["value"]:
            parts.append(f"published facts: {published['value']} (from {published['origin']})")
        else:
            parts.append(f"published facts: none ({published['origin']})")
    parts.append(f"pip config files read: {', '.join(doc['files']['pip']) or 'none'}")
    parts.append(f"uv config files read: {', '.join(doc['files']['uv']) or 'none'}")
    return parts


def _install_lines(install: Mapping[str, Any]) -> list[str]:
    """What the installer applies beyond its indexes: constraints, overrides, trusted hosts, strategy."""
    lines = [f"install settings of {install['installer']}:"]
    lines += [f"  constraint: {c['value']} (from {c['origin']})" for c in install["constraints"]]
    lines += [f"  override: {o['value']} (from {o['origin']})" for o in install["overrides"]]
    lines += [f"  TLS not verified for: {h['value']} (from {h['origin']})" for h in install["trusted_hosts"]]
    for key, words in (("index_strategy", "index strategy"), ("keyring_provider", "keyring provider")):
        if install[key]:
            lines.append(f"  {words}: {install[key]['value']} (from {install[key]['origin']})")
    return lines if len(lines) > 1 else [f"install settings of {install['installer']}: none"]
