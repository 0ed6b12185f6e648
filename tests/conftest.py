"""Shared pytest setup: fixture builders live in tests/support/ and build real binaries at test time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test reads or writes the repository's wheel_index_cache/ or the user's caches by default."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ABIPROBE_CACHE_DIR", str(tmp_path_factory.mktemp("abiprobe-cache")))
    mp.setenv("ABIPROBE_LOCAL_DIR", str(tmp_path_factory.mktemp("abiprobe-local")))
    yield
    mp.undo()
