"""pip's configuration read without importing pip: the same files pip's own API lists, and the same index
list whether pip is importable in abiprobe's interpreter or only installed elsewhere on the machine."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.configenv import ConfigUser, config_user

from abiprobe.cli import main
from abiprobe.errors import UsageError
from abiprobe.installers import registry
from abiprobe.installers.indexes import installer_indexes
from abiprobe.installers.pip import pip_variant_files
from abiprobe.model import hosts

VENV_BIN = str(Path(sys.executable).parent)


@pytest.fixture
def user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ConfigUser:
    return config_user(monkeypatch, tmp_path)


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    """The registry asked anew in the test, and again after it (it is cached per process)."""
    registry.pip_registry.cache_clear()
    hosts._pairs.cache_clear()
    yield
    registry.pip_registry.cache_clear()
    hosts._pairs.cache_clear()


def no_pip_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """This interpreter cannot import pip (as in a tool's environment); a pip elsewhere still can be run."""
    monkeypatch.setitem(sys.modules, "pip", None)


def pips_files(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    from pip._internal.configuration import Configuration

    return [(str(kind), list(files)) for kind, files in Configuration(isolated=False).iter_config_files()]


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"XDG_CONFIG_DIRS": "/opt/a:/opt/b"},
        {"XDG_CONFIG_DIRS": "relative:/opt/b", "XDG_CONFIG_HOME": "not/absolute"},
        {"XDG_CONFIG_DIRS": "", "XDG_CONFIG_HOME": ""},
        {"PIP_CONFIG_FILE": "/nonexistent/pip.conf"},
        {"PIP_CONFIG_FILE": "EXISTING"},
    ],
    ids=["plain", "xdg-dirs", "xdg-relative", "xdg-empty", "missing-config-file", "existing-config-file"],
)
def test_the_config_files_are_the_ones_pips_own_api_lists(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    # GIVEN a user environment (XDG folders, PIP_CONFIG_FILE set or not)
    for name in ("XDG_CONFIG_DIRS", "XDG_CONFIG_HOME", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        if value == "EXISTING":
            value = str(user.write(user.home / "explicit.conf", "[global]\n"))
        monkeypatch.setenv(name, value)
    # WHEN abiprobe lists pip's files without pip, and pip lists them through its Configuration API
    # THEN both name the same files for the same variants
    assert pip_variant_files(os.environ) == pips_files(monkeypatch)


def _indexes_both_ways(monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    importable = installer_indexes(os.environ, Path.cwd())
    registry.pip_registry.cache_clear()
    no_pip_here(monkeypatch)
    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    elsewhere = installer_indexes(os.environ, Path.cwd())
    return importable, elsewhere


def test_pip_extras_give_the_same_index_list_with_and_without_pip_importable(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    # GIVEN pip configured with an extra index in its user file and find-links in a variable, no index-url
    user.write(user.pip_conf, "[global]\nextra-index-url = https://extra.example/simple/\n")
    monkeypatch.setenv("PIP_FIND_LINKS", "https://links.example/wheels/")
    # WHEN the index list is read with pip importable, then with pip only installed elsewhere
    importable, elsewhere = _indexes_both_ways(monkeypatch)
    # THEN the two lists agree field by field, the built-in default included
    assert dataclasses.asdict(importable) == dataclasses.asdict(elsewhere)  # type: ignore[call-overload]
    assert importable.indexes[-1].origin == "pip's built-in default"  # type: ignore[attr-defined]


def test_uv_indexes_give_the_same_index_list_with_and_without_pip_importable(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    # GIVEN uv configured with one index and no default index
    monkeypatch.setenv("UV_INDEX", "first=https://first.example/simple/")
    importable, elsewhere = _indexes_both_ways(monkeypatch)
    assert dataclasses.asdict(importable) == dataclasses.asdict(elsewhere)  # type: ignore[call-overload]


def test_the_registry_hosts_are_the_same_from_a_pip_elsewhere(
    monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    here = registry.from_this_interpreter()
    assert here is not None
    no_pip_here(monkeypatch)
    assert registry.from_this_interpreter() is None
    elsewhere = registry.from_interpreter(sys.executable)
    assert elsewhere is not None
    assert (here.simple_url, here.index_host, here.files_host) == (
        elsewhere.simple_url,
        elsewhere.index_host,
        elsewhere.files_host,
    )


def test_without_any_pip_on_the_machine_the_default_index_is_one_clear_error(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fresh_registry: None
) -> None:
    # GIVEN no pip importable and no interpreter on PATH, and no index configured
    no_pip_here(monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    # WHEN the default index is needed; THEN one usage error says what to pass or set
    with pytest.raises(UsageError, match=r"pass --index-url URL, or set PIP_INDEX_URL or UV_DEFAULT_INDEX"):
        installer_indexes(os.environ, Path.cwd())


def test_without_any_pip_a_configured_index_needs_no_pip(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fresh_registry: None
) -> None:
    # GIVEN no pip anywhere, and UV_DEFAULT_INDEX set
    no_pip_here(monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("UV_DEFAULT_INDEX", "https://mirror.example/simple/")
    # THEN the index list is that index alone
    found = installer_indexes(os.environ, Path.cwd())
    assert [s.value for s in found.indexes] == ["https://mirror.example/simple/"]


def test_the_cli_says_the_missing_index_in_one_line(
    user: ConfigUser,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    fresh_registry: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    no_pip_here(monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    code = main(["index", "ls", "demo", "--no-cache", "--json"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "UV_DEFAULT_INDEX" in err[0] and "Traceback" not in err[0]
