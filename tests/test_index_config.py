"""Index configuration precedence: CLI, environment, abiprobe.toml / pyproject, pip and uv, pip's default."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from abiprobe.errors import UsageError
from abiprobe.index.config import default_index, load_index_config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A stand-in for / so that the machine's /etc/pip.conf does not leak into tests."""
    path = tmp_path / "root"
    path.mkdir()
    return path


def _urls(cwd: Path, root: Path, env: dict[str, str], **cli: object) -> list[str]:
    config = load_index_config(environ=env, cwd=cwd, root=root, **cli)  # type: ignore[arg-type]
    return [s.url for s in config.sources]


def test_cli_index_beats_environment_and_toml(cwd: Path, root: Path, home: Path) -> None:
    (cwd / "abiprobe.toml").write_text('index-url = "https://toml.example/simple/"\n')
    env = {"HOME": str(home), "ABIPROBE_INDEX_URL": "https://env.example/simple/"}
    assert _urls(cwd, root, env, cli_indexes=["https://cli.example/simple/"]) == [
        "https://cli.example/simple/"
    ]


def test_environment_beats_toml(cwd: Path, root: Path, home: Path) -> None:
    (cwd / "abiprobe.toml").write_text('index-url = "https://toml.example/simple/"\n')
    env = {"HOME": str(home), "ABIPROBE_INDEX_URL": "https://env.example/simple/"}
    assert _urls(cwd, root, env) == ["https://env.example/simple/"]


def test_toml_primary_with_named_indexes_and_extras_in_lookup_order(
    cwd: Path, root: Path, home: Path
) -> None:
    (cwd / "abiprobe.toml").write_text(
        'index-url = "https://primary.example/simple/"\n'
        'extra-index-url = ["https://extra.example/simple/"]\n'
        'indexes = [{name = "pytorch", url = "https://download.pytorch.org/whl/cu130/"}]\n'
    )
    env = {"HOME": str(home), "ABIPROBE_EXTRA_INDEX_URL": "https://envextra.example/simple/"}
    assert _urls(cwd, root, env) == [
        "https://download.pytorch.org/whl/cu130/",
        "https://envextra.example/simple/",
        "https://extra.example/simple/",
        "https://primary.example/simple/",
    ]


def test_pyproject_tool_section_is_read_with_strategy_and_pins(cwd: Path, root: Path, home: Path) -> None:
    (cwd / "pyproject.toml").write_text(
        "[tool.abiprobe]\n"
        'index-url = "https://primary.example/simple/"\n'
        'index-strategy = "best-match"\n'
        'indexes = [{name = "sglang", url = "https://docs.sglang.ai/whl/cu130/"}]\n'
        'pin = { "SGL_Kernel" = "sglang" }\n'
    )
    config = load_index_config(environ={"HOME": str(home)}, cwd=cwd, root=root)
    assert config.strategy == "best-match"
    assert dict(config.pins) == {"sgl-kernel": "sglang"}
    assert [s.name for s in config.sources] == ["sglang", "primary.example/simple"]


def test_abiprobe_toml_wins_over_pyproject(cwd: Path, root: Path, home: Path) -> None:
    (cwd / "pyproject.toml").write_text('[tool.abiprobe]\nindex-url = "https://py.example/simple/"\n')
    (cwd / "abiprobe.toml").write_text('index-url = "https://own.example/simple/"\n')
    assert _urls(cwd, root, {"HOME": str(home)}) == ["https://own.example/simple/"]


def test_pip_index_url_environment_sets_the_default(cwd: Path, root: Path, home: Path) -> None:
    env = {"HOME": str(home), "PIP_INDEX_URL": "https://pipenv.example/simple/"}
    assert default_index(env, cwd, root) == ("https://pipenv.example/simple/", "PIP_INDEX_URL")


def test_user_pip_conf_sets_the_default(cwd: Path, root: Path, home: Path) -> None:
    conf = home / ".config" / "pip" / "pip.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("[global]\nindex-url = https://userpip.example/simple/\n")
    url, origin = default_index({"HOME": str(home)}, cwd, root)
    assert (url, origin) == ("https://userpip.example/simple/", f"{conf} [global] index-url")


def test_pip_config_file_variable_overrides_user_pip_conf(cwd: Path, root: Path, home: Path) -> None:
    (home / ".pip").mkdir()
    (home / ".pip" / "pip.conf").write_text("[global]\nindex-url = https://legacy.example/simple/\n")
    explicit = home / "explicit.conf"
    explicit.write_text("[global]\nindex-url = https://explicit.example/simple/\n")
    env = {"HOME": str(home), "PIP_CONFIG_FILE": str(explicit)}
    assert default_index(env, cwd, root)[0] == "https://explicit.example/simple/"


def test_system_pip_conf_under_root_is_read(cwd: Path, root: Path, home: Path) -> None:
    (root / "etc").mkdir()
    (root / "etc" / "pip.conf").write_text("[global]\nindex-url = https://system.example/simple/\n")
    assert default_index({"HOME": str(home)}, cwd, root)[0] == "https://system.example/simple/"


def test_uv_toml_default_index_is_used_when_pip_has_none(cwd: Path, root: Path, home: Path) -> None:
    (cwd / "uv.toml").write_text(
        '[[index]]\nname = "x"\nurl = "https://notdefault.example/simple/"\n\n'
        '[[index]]\nname = "y"\nurl = "https://uvdefault.example/simple/"\ndefault = true\n'
    )
    assert default_index({"HOME": str(home)}, cwd, root) == (
        "https://uvdefault.example/simple/",
        str(cwd / "uv.toml"),
    )


def test_tool_uv_index_url_in_pyproject(cwd: Path, root: Path, home: Path) -> None:
    (cwd / "pyproject.toml").write_text('[tool.uv]\nindex-url = "https://tooluv.example/simple/"\n')
    assert default_index({"HOME": str(home)}, cwd, root)[0] == "https://tooluv.example/simple/"


def test_uv_default_index_variable(cwd: Path, root: Path, home: Path) -> None:
    env = {"HOME": str(home), "UV_DEFAULT_INDEX": "https://uvenv.example/simple/"}
    assert default_index(env, cwd, root) == ("https://uvenv.example/simple/", "UV_DEFAULT_INDEX")


def test_builtin_default_equals_what_pip_reports(cwd: Path, root: Path, home: Path) -> None:
    # GIVEN no installer configuration at all
    reported = subprocess.run(
        [sys.executable, "-c", "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # THEN the default is pip's own built-in one
    assert default_index({"HOME": str(home), "PIP_CONFIG_FILE": "/dev/null"}, cwd, root) == (
        reported,
        "pip's built-in default",
    )


def test_unknown_strategy_is_a_usage_error(cwd: Path, root: Path, home: Path) -> None:
    with pytest.raises(UsageError, match="unknown index strategy 'fastest'"):
        load_index_config(
            cli_indexes=["https://a.example/"], cli_strategy="fastest", environ={}, cwd=cwd, root=root
        )


def test_pin_to_unknown_index_is_a_usage_error(cwd: Path, root: Path) -> None:
    with pytest.raises(UsageError, match="pin torch = 'nowhere' names no configured index"):
        load_index_config(
            cli_indexes=["https://a.example/"], cli_pins={"torch": "nowhere"}, environ={}, cwd=cwd, root=root
        )


def test_broken_toml_is_a_usage_error(cwd: Path, root: Path) -> None:
    (cwd / "abiprobe.toml").write_text("index-url = [unclosed\n")
    with pytest.raises(UsageError, match=r"abiprobe\.toml: invalid TOML"):
        load_index_config(environ={}, cwd=cwd, root=root)
