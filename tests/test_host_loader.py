"""`--installed` judges against this host's own loader: LD_LIBRARY_PATH, its cache, its system search
path (by file name), ld.so.conf only to say that a library is there but not cached."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cbuild import build_shared
from support.checkdoc import verdicts_of
from support.tools import system_tool
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.host.ldconfig import profile_from_host
from abiprobe.host.loader_inputs import HostLoader, read_ld_conf

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
EMPTY = Path("/nonexistent/abiprobe")


def _lib(out: Path, filename: str, soname: str) -> Path:
    return build_shared(out, filename, "int hostdep_go(void) { return 7; }", soname=soname)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A venv whose one extension needs libhostdep.so.7, a library no wheel ships: it lives in a
    directory of its own (the venv's python, the library's directory)."""
    root = tmp_path_factory.mktemp("hostenv")
    libdir = root / "syslib"
    lib = _lib(libdir, "libhostdep.so.7", "libhostdep.so.7")
    src = "int hostdep_go(void);\nint call(void) { return hostdep_go(); }\n"
    src += "void *PyInit__ext(void) { return 0; }\n"
    ext = build_shared(root / "b", f"_ext{SUFFIX}", src, link=[lib])
    files: dict[str, bytes | Path] = {"hostdep/__init__.py": b"from . import _ext\n"}
    files[f"hostdep/_ext{SUFFIX}"] = ext
    wheel = build_wheel(root / "w", "hostdep", "1.0", files, tag=f"{TAG}-{TAG}-manylinux_2_28_x86_64")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip_env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    pip_env["PIP_CONFIG_FILE"] = os.devnull
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        check=True, env=pip_env, capture_output=True,
    )  # fmt: skip
    return python, libdir


def _check(python: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["check", "--installed", "--python", str(python), "--package", "hostdep", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_library_on_ld_library_path_is_found_for_the_installed_environment(
    env: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an installed extension needing libhostdep.so.7, which LD_LIBRARY_PATH reaches on this host
    python, libdir = env
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libdir))
    # WHEN the environment is checked for this host (no --profile)
    code, data = _check(python, capsys)
    # THEN the host's loader finds it: the profile is the host, and the extension loads
    assert (code, data["profile"], verdicts_of(data, "sonames")) == (
        0,
        "host",
        [("ok", "every needed library is found")],
    )


def test_library_the_host_does_not_have_is_missing(
    env: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the same environment and no path that reaches the library
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    code, data = _check(env[0], capsys)
    assert code & 4 and verdicts_of(data, "sonames")[0][0] == "fail"


def test_library_found_by_file_name_in_the_system_search_path(tmp_path: Path) -> None:
    # GIVEN a DT_NEEDED naming a full file name (libgomp.so.1.0.0 style), present in a system directory
    _lib(tmp_path, "libompish.so.1.0.0", "libompish.so.1")
    loader = HostLoader(cache=EMPTY, conf=EMPTY, library_path=None, system_dirs=(tmp_path,))
    # WHEN the host's libraries are read THEN it is found by that name, read from its bytes
    lib = profile_from_host(["libompish.so.1.0.0"], loader=loader).library("libompish.so.1.0.0")
    assert lib is not None and lib.provides("hostdep_go", None) is True


def test_library_in_the_loader_cache_is_found(tmp_path: Path) -> None:
    # GIVEN a library in a directory of an ld.so.conf (reached by an include glob) and a cache that
    # the real ldconfig built from it
    _lib(tmp_path / "opt", "libcachedep.so.3", "libcachedep.so.3")
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "x.conf").write_text(f"# a comment\n{tmp_path / 'opt'}\n")
    (tmp_path / "ld.so.conf").write_text("include conf.d/*.conf\n")
    cache = tmp_path / "ld.so.cache"
    ldconfig = system_tool("ldconfig", "/sbin/ldconfig", hint="glibc's ldconfig (package libc-bin)")
    subprocess.run([ldconfig, "-X", "-C", str(cache), "-f", str(tmp_path / "ld.so.conf")], check=True)
    loader = HostLoader(cache=cache, conf=tmp_path / "ld.so.conf", library_path=None, system_dirs=())
    # THEN the cache names it, as ld.so would find it
    assert loader.find("libcachedep.so.3") == (tmp_path / "opt" / "libcachedep.so.3", str(cache))
    assert read_ld_conf(tmp_path / "ld.so.conf") == [tmp_path / "opt"]


def test_library_in_ld_so_conf_but_not_in_the_cache_is_not_found_and_says_why(tmp_path: Path) -> None:
    # GIVEN a library in an ld.so.conf directory, but no cache rebuilt since (ld.so reads only the cache)
    _lib(tmp_path / "opt", "libstaledep.so.2", "libstaledep.so.2")
    (tmp_path / "ld.so.conf").write_text(f"{tmp_path / 'opt'}\n")
    loader = HostLoader(cache=EMPTY, conf=tmp_path / "ld.so.conf", library_path=None, system_dirs=())
    profile = profile_from_host(["libstaledep.so.2"], loader=loader)
    # THEN it is not a library of the host, and the profile says ldconfig would make it one
    note = profile.note("libstaledep.so.2") or ""
    assert profile.library("libstaledep.so.2") is None and "until ldconfig is run" in note


def test_version_node_named_like_the_soname_is_one_the_library_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a host library whose symbols are versioned under a node named like its soname (as the CUDA
    # toolkit's libcudart.so.13 is), and an installed extension bound to that node
    libdir = tmp_path / "syslib"
    lib = build_shared(
        libdir, "libverdep.so.2", "int hostdep_go(void) { return 2; }", soname="libverdep.so.2",
        version_script="libverdep.so.2 { global: hostdep_go; local: *; };",
    )  # fmt: skip
    src = "int hostdep_go(void);\nint call(void) { return hostdep_go(); }\n"
    src += "void *PyInit__ext(void) { return 0; }\n"
    ext = build_shared(tmp_path / "b", f"_ext{SUFFIX}", src, link=[lib])
    files: dict[str, bytes | Path] = {
        "verdep/__init__.py": b"from . import _ext\n",
        f"verdep/_ext{SUFFIX}": ext,
    }
    wheel = build_wheel(tmp_path / "w", "verdep", "1.0", files, tag=f"{TAG}-{TAG}-manylinux_2_28_x86_64")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libdir))
    # WHEN it is checked for this host
    capsys.readouterr()
    code = main(["check", str(wheel), "--no-deps", "--json", "-qq"])
    data = json.loads(capsys.readouterr().out)
    # THEN the node is found, as the real loader finds it (ctypes opens the extension)
    real = subprocess.run(
        [sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(ext)!r})"], capture_output=True
    )
    assert real.returncode == 0, real.stderr
    assert code == 0 and [s for s, _ in verdicts_of(data, "symbol_versions")] == ["ok"]
