"""``abiprobe config``: the indexes, credentials sources, TLS and proxy settings abiprobe will use, and
where each came from (a file and section, a variable, an option, or a built-in default)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from abiprobe.commands.options import add_index_options
from abiprobe.installers.pip import config_files
from abiprobe.installers.uv import uv_config_files
from abiprobe.net.http import display_url
from abiprobe.net.settings import NetworkSettings, credential_source, network_settings
from abiprobe.report.config_text import render_config
from abiprobe.report.jsondoc import json_text
from abiprobe.store.published import published_setting
from abiprobe.ui.console import make_console, print_all

CONFIG_SCHEMA_VERSION = 1

EPILOG = """\
example:
  abiprobe config --cuda 13.0          # what `abiprobe solve --cuda 13.0` would read
  PIP_CONFIG_FILE=/dev/null UV_NO_CONFIG=1 abiprobe config --json

exit codes: 0 shown; 2 a configuration file or value cannot be used (the message names it)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "config",
        help="show the indexes, credentials, TLS and proxy settings in use, and where each came from",
        description="What abiprobe reads from its own settings, pip's configuration (files and PIP_* "
        "variables) and uv's (uv.toml, [tool.uv], UV_* variables), and the environment.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--cuda",
        default="13.0",
        help="include the CUDA indexes `solve --cuda` reads (default: %(default)s); 'none' for none",
    )
    add_index_options(p, index_help="as `solve --index`", lookups=False)
    p.add_argument(
        "--json", action="store_true", help="print JSON (schema: abiprobe/schemas/config.schema.json)"
    )
    p.set_defaults(func=run)


def _setting(value: Any) -> dict[str, str] | None:
    return None if value is None else {"value": value.value, "origin": value.origin}


def config_document(args: argparse.Namespace) -> dict[str, Any]:
    from abiprobe.commands.options import target_of
    from abiprobe.commands.solve import index_config
    from abiprobe.model.target import Target

    net = network_settings()
    if args.cuda == "none":
        from abiprobe.index.config import load_index_config

        config = load_index_config(cli_indexes=args.index, cli_extra_indexes=args.extra_index)
    else:
        target = target_of(args, base=Target())
        config = index_config(target, indexes=args.index, extra_indexes=args.extra_index)
    return {
        "kind": "abiprobe-config",
        "schema_version": CONFIG_SCHEMA_VERSION,
        "installer": config.installer or None,
        "strategy": config.strategy,
        "pins": dict(config.pins),
        "indexes": [
            {
                "url": display_url(s.url),
                "name": s.name,
                "kind": s.kind,
                "origin": s.origin,
                "credentials": credential_source(s.url, net),
            }
            for s in config.sources
        ],
        "notes": list(config.origins),
        "tls": _tls(net),
        "proxies": {
            "proxies": {scheme: _setting(p) for scheme, p in (net.proxies or {}).items()},
            "no_proxy": _setting(net.no_proxy),
        },
        "keyring": net.keyring,
        "netrc": str(net.netrc) if net.netrc is not None else None,
        "install": {
            "installer": config.install.installer,
            "constraints": [_setting(c) for c in config.install.constraints],
            "overrides": [_setting(o) for o in config.install.overrides],
            "trusted_hosts": [_setting(h) for h in net.trusted_hosts],
            "index_strategy": _setting(config.install.index_strategy),
            "keyring_provider": _setting(config.install.keyring_provider),
        },
        "published_facts": published_setting().to_json(),
        "files": {"pip": config_files(), "uv": [str(p) for p in uv_config_files_here()]},
    }


def uv_config_files_here() -> list[Path]:
    import os

    return uv_config_files(os.environ, Path.cwd())


def _tls(net: NetworkSettings) -> dict[str, Any]:
    return {
        "trust": net.trust_label(),
        "ca": _setting(net.ca),
        "native_tls": _setting(net.native_tls),
        "client_cert": _setting(net.client_cert),
        "overridden": list(net.ignored),
    }


def run(args: argparse.Namespace) -> int:
    doc = config_document(args)
    if args.json:
        sys.stdout.write(json_text(doc))
        return 0
    proxy_urls = {scheme: display_url(p["value"]) for scheme, p in doc["proxies"]["proxies"].items()}
    print_all(render_config(doc, proxy_urls), make_console(markup=False))
    return 0
