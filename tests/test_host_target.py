"""A check naming no ``--platform`` (nor ``--profile``) is a check for this machine: its platform tag picks
the wheels, and its own loader is the system they load on. A library this host has beyond what its
platform promises loads (a warning says a host of that platform may lack it); one it lacks fails, as the
real import here does. Each fixture is compiled here and imported for real with and without the library
on the loader's path."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cbuild import build_shared
from support.checkdoc import verdicts_of
from support.venvs import import_in_venv
from support.wheelbuild import build_wheel

from abiprobe.cli import main

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TAG = f"{PY}-{PY}-manylinux_2_28_x86_64"
LINKED = "libhosttarget.so.4"  # a DT_NEEDED of the package's own library
BY_NAME = "libhostbyname.so.2"  # loaded by the package's Python, ctypes.CDLL by soname


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(directory of the two host libraries, wheel of a library needing one, wheel whose __init__ loads
    the other by name after a library of its own); no wheel ships either host library."""
    root = tmp_path_factory.mktemp("hosttarget")
    libdir = root / "syslib"
    linked = build_shared(libdir, LINKED, "int hosttarget_go(void) { return 4; }", soname=LINKED)
    build_shared(libdir, BY_NAME, "int hostbyname_go(void) { return 2; }", soname=BY_NAME)
    src = "int hosttarget_go(void);\nint hostlinked_call(void) { return hosttarget_go(); }\n"
    own = build_shared(root / "b", "libhostlinked.so", src, link=[linked])
    opens = "import ctypes\nimport os\n\n_here = os.path.dirname(__file__)\n"
    init = f"{opens}_lib = ctypes.CDLL(os.path.join(_here, 'libhostlinked.so'))\n".encode()
    ext_wheel = build_wheel(
        root / "w",
        "hostlinked",
        "1.0",
        {"hostlinked/__init__.py": init, "hostlinked/libhostlinked.so": own},
        tag=TAG,
    )
    plain = build_shared(root / "b2", "libhostown.so", "int hostown_go(void) { return 1; }")
    init = f"{opens}_own = ctypes.CDLL(os.path.join(_here, 'libhostown.so'))\n"
    init += f"try:\n    _lib = ctypes.CDLL({BY_NAME!r})\nexcept OSError as exc:\n"
    init += f"    raise ImportError('hostbyname needs {BY_NAME}') from exc\n"
    name_wheel = build_wheel(
        root / "w",
        "hostbyname",
        "1.0",
        {"hostbyname/__init__.py": init.encode(), "hostbyname/libhostown.so": plain},
        tag=TAG,
    )
    return libdir, ext_wheel, name_wheel


def _check(wheel: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["check", str(wheel), "--no-deps", "--json", "-qq", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_library_this_host_has_beyond_its_platform_loads_with_a_warning(
    built: tuple[Path, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a package's library needing a library this host's loader finds (LD_LIBRARY_PATH reaches it)
    libdir, wheel, _ = built
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libdir))
    # WHEN it is checked with no --platform: the target is this host
    code, data = _check(wheel, capsys)
    # THEN it loads, as the real import here does, and says a host of the platform may lack the library
    assert import_in_venv(tmp_path / "venv", [wheel], "hostlinked") == (0, "")
    [(status, text)] = verdicts_of(data, "sonames")
    assert (code, data["profile"], status) == (0, "host", "warn")
    assert f"{LINKED} is found on this host ({libdir / LINKED})" in text
    assert "not a system library of manylinux_2_" in text


def test_the_same_library_fails_for_a_named_platform(
    built: tuple[Path, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the same host, but the check names a platform: the target is any host of it
    libdir, wheel, _ = built
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libdir))
    code, data = _check(wheel, capsys, "--platform", "manylinux_2_28_x86_64")
    # THEN the library is not one that platform has: the import fails, as it does on a host without it
    monkeypatch.delenv("LD_LIBRARY_PATH")
    rc, line = import_in_venv(tmp_path / "venv", [wheel], "hostlinked")
    assert rc != 0 and f"{LINKED}: cannot open shared object file" in line
    assert code & 4 and data["profile"] == "manylinux_2_28_x86_64"
    assert [s for s, _ in verdicts_of(data, "sonames")] == ["fail"]


def test_library_this_host_lacks_fails_naming_its_loader(
    built: tuple[Path, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN no path on this host that reaches the library
    _, wheel, _ = built
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    code, data = _check(wheel, capsys)
    rc, line = import_in_venv(tmp_path / "venv", [wheel], "hostlinked")
    # THEN the check fails as the import does, with the loader's own words
    assert rc != 0 and f"{LINKED}: cannot open shared object file" in line
    [(status, text)] = verdicts_of(data, "sonames")
    assert code & 4 and status == "fail" and f"{LINKED} not found by this host's loader" in text
    assert data["import_status"] == "fail"


@pytest.mark.parametrize("reachable", [True, False])
def test_library_loaded_by_name_follows_this_host(
    reachable: bool,
    built: tuple[Path, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a package whose __init__ loads a library by its soname, which no DT_NEEDED names, and raises
    # its own error when it does not load
    libdir, _, wheel = built
    if reachable:
        monkeypatch.setenv("LD_LIBRARY_PATH", str(libdir))
    else:
        monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    code, data = _check(wheel, capsys)
    rc, line = import_in_venv(tmp_path / "venv", [wheel], "hostbyname")
    # THEN the verdict at import is the real import's on this host, either way
    assert (rc == 0) is reachable
    assert data["import_status"] == ("ok" if reachable else "fail")
    assert (code == 0) is reachable
    if not reachable:
        assert line == f"ImportError: hostbyname needs {BY_NAME}"
