"""Shared pytest setup: fixture builders live in tests/support/ and build real binaries at test time."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# The machine's installer and proxy settings must not reach abiprobe in a test: each configuration test
# sets exactly what it means to (tests/test_config_sources.py).
ISOLATED_PREFIXES = ("PIP_", "UV_")
ISOLATED_NAMES = (
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "requests_ca_bundle",
    "curl_ca_bundle",
)


@pytest.fixture(autouse=True, scope="session")
def _private_cache_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test reads or writes the repository's wheel_index_cache/ or the user's caches by default."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ABIPROBE_CACHE_DIR", str(tmp_path_factory.mktemp("abiprobe-cache")))
    mp.setenv("ABIPROBE_LOCAL_DIR", str(tmp_path_factory.mktemp("abiprobe-local")))
    for name in list(os.environ):
        if name.startswith(ISOLATED_PREFIXES) or name.lower() in ISOLATED_NAMES:
            mp.delenv(name)
    mp.setenv("PIP_CONFIG_FILE", os.devnull)
    mp.setenv("UV_NO_CONFIG", "1")
    yield
    mp.undo()
