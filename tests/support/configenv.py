"""A clean user for configuration tests: its own HOME, XDG folders and working folder, nothing configured.

conftest.py points pip at /dev/null and sets UV_NO_CONFIG for every test; these users lift both so that
the files they write are read the way pip and uv read them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class ConfigUser:
    home: Path
    project: Path  # the working folder, two levels below ``workspace``
    workspace: Path
    xdg_dirs: Path

    @property
    def pip_conf(self) -> Path:
        return self.home / ".config" / "pip" / "pip.conf"

    @property
    def user_uv_toml(self) -> Path:
        return self.home / ".config" / "uv" / "uv.toml"

    def write(self, path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


def config_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, files: bool = True) -> ConfigUser:
    """``files``: let pip and uv read config files (else pip reads none and uv is told UV_NO_CONFIG)."""
    user = ConfigUser(tmp_path / "home", tmp_path / "ws" / "a" / "b", tmp_path / "ws", tmp_path / "xdg")
    for folder in (user.home, user.project, user.xdg_dirs):
        folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(user.home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user.home / ".config"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(user.xdg_dirs))
    monkeypatch.delenv("NETRC", raising=False)
    if files:
        monkeypatch.delenv("PIP_CONFIG_FILE", raising=False)
        monkeypatch.delenv("UV_NO_CONFIG", raising=False)
    monkeypatch.chdir(user.project)
    assert os.environ.get("PIP_INDEX_URL") is None
    return user
