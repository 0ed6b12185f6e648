"""Index configuration precedence: CLI, environment, abiprobe.toml / pyproject, pip's or uv's, the default."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.configenv import ConfigUser, config_user

from abiprobe.errors import UsageError
from abiprobe.index.config import default_index, load_index_config
from abiprobe.installers.pip import pip_settings


@pytest.fixture
def user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ConfigUser:
    return config_user(monkeypatch, tmp_path)


def _urls(**cli: object) -> list[str]:
    return [s.url for s in load_index_config(**cli).sources]  # type: ignore[arg-type]


def _default() -> tuple[str, str]:
    return default_index(__import__("os").environ, Path.cwd())


def test_cli_index_beats_environment_and_toml(user: ConfigUser, monkeypatch: pytest.MonkeyPatch) -> None:
    (user.project / "abiprobe.toml").write_text('index-url = "https://toml.example/simple/"\n')
    monkeypatch.setenv("ABIPROBE_INDEX_URL", "https://env.example/simple/")
    assert _urls(cli_indexes=["https://cli.example/simple/"]) == ["https://cli.example/simple/"]


def test_environment_beats_toml(user: ConfigUser, monkeypatch: pytest.MonkeyPatch) -> None:
    (user.project / "abiprobe.toml").write_text('index-url = "https://toml.example/simple/"\n')
    monkeypatch.setenv("ABIPROBE_INDEX_URL", "https://env.example/simple/")
    assert _urls() == ["https://env.example/simple/"]


def test_toml_primary_with_named_indexes_and_extras_in_lookup_order(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    (user.project / "abiprobe.toml").write_text(
        'index-url = "https://primary.example/simple/"\n'
        'extra-index-url = ["https://extra.example/simple/"]\n'
        'indexes = [{name = "pytorch", url = "https://download.pytorch.org/whl/cu130/"}]\n'
    )
    monkeypatch.setenv("ABIPROBE_EXTRA_INDEX_URL", "https://envextra.example/simple/")
    assert _urls() == [
        "https://download.pytorch.org/whl/cu130/",
        "https://envextra.example/simple/",
        "https://extra.example/simple/",
        "https://primary.example/simple/",
    ]


def test_pyproject_tool_section_is_read_with_strategy_and_pins(user: ConfigUser) -> None:
    (user.project / "pyproject.toml").write_text(
        "[tool.abiprobe]\n"
        'index-url = "https://primary.example/simple/"\n'
        'index-strategy = "best-match"\n'
        'indexes = [{name = "sglang", url = "https://docs.sglang.ai/whl/cu130/"}]\n'
        'pin = { "SGL_Kernel" = "sglang" }\n'
    )
    config = load_index_config()
    assert config.strategy == "best-match"
    assert dict(config.pins) == {"sgl-kernel": "sglang"}
    assert [s.name for s in config.sources] == ["sglang", "primary.example/simple"]


def test_abiprobe_toml_wins_over_pyproject(user: ConfigUser) -> None:
    (user.project / "pyproject.toml").write_text(
        '[tool.abiprobe]\nindex-url = "https://py.example/simple/"\n'
    )
    (user.project / "abiprobe.toml").write_text('index-url = "https://own.example/simple/"\n')
    assert _urls() == ["https://own.example/simple/"]


def test_pip_index_url_environment_sets_the_default(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "https://pipenv.example/simple/")
    assert _default() == ("https://pipenv.example/simple/", "PIP_INDEX_URL")


def test_user_pip_conf_sets_the_default(user: ConfigUser) -> None:
    user.write(user.pip_conf, "[global]\nindex-url = https://userpip.example/simple/\n")
    assert _default() == ("https://userpip.example/simple/", f"{user.pip_conf} [global] index-url")


def test_install_section_beats_global_and_the_variable_beats_both(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    user.write(
        user.pip_conf,
        "[install]\nindex-url = https://install.example/simple/\n"
        "[global]\nindex-url = https://global.example/simple/\n",
    )
    assert _default()[0] == "https://install.example/simple/"
    monkeypatch.setenv("PIP_INDEX_URL", "https://variable.example/simple/")
    assert _default()[0] == "https://variable.example/simple/"


def test_pip_config_file_variable_hides_the_user_files(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an index in the user's pip.conf and only extra settings in $PIP_CONFIG_FILE
    user.write(user.pip_conf, "[global]\nindex-url = https://user.example/simple/\n")
    explicit = user.write(user.home / "explicit.conf", "[global]\ntimeout = 5\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(explicit))
    # THEN, as in pip, an existing PIP_CONFIG_FILE means the user files are not read at all
    assert _default() == (_builtin(), "pip's built-in default")


def test_pip_config_file_dev_null_reads_no_file(user: ConfigUser, monkeypatch: pytest.MonkeyPatch) -> None:
    (user.xdg_dirs / "pip").mkdir()
    (user.xdg_dirs / "pip" / "pip.conf").write_text("[global]\nindex-url = https://site.example/simple/\n")
    assert _default()[0] == "https://site.example/simple/"
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    assert _default()[0] == _builtin()
    # and pip itself, asked the same, lists nothing from that file either (abiprobe answers this case
    # without importing pip's configuration module)
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    assert "index-url" not in listed


def test_every_pip_value_equals_what_pip_config_list_reports(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN settings spread over a global file, the user file, a [install] section and the environment
    (user.xdg_dirs / "pip").mkdir()
    (user.xdg_dirs / "pip" / "pip.conf").write_text("[global]\nextra-index-url = https://g.example/simple/\n")
    user.write(
        user.pip_conf, "[install]\nfind-links = /srv/wheels\n[global]\nproxy = http://p.example:3128\n"
    )
    monkeypatch.setenv("PIP_NO_INDEX", "yes")
    # WHEN pip itself lists its configuration
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    reported = {
        line.split("=", 1)[0].split(".", 1)[1]: line.split("=", 1)[1].strip("'")
        for line in listed.splitlines()
    }
    ours = {k: s.value for k, s in pip_settings().items()}
    # THEN every option pip reports has the same value here
    for key in ("extra-index-url", "find-links", "proxy", "no-index"):
        assert ours[key] == reported[key], key


def test_uv_toml_default_index_is_used_when_pip_has_none(user: ConfigUser) -> None:
    uv_toml = user.write(
        user.project / "uv.toml",
        '[[index]]\nname = "x"\nurl = "https://notdefault.example/simple/"\n\n'
        '[[index]]\nname = "y"\nurl = "https://uvdefault.example/simple/"\ndefault = true\n',
    )
    assert _default() == ("https://uvdefault.example/simple/", f"{uv_toml} [[index]] y")
    # AND the non-default entry comes first, as uv looks it up first
    assert _urls() == ["https://notdefault.example/simple/", "https://uvdefault.example/simple/"]


def test_uv_toml_in_a_parent_folder_is_found(user: ConfigUser) -> None:
    user.write(user.workspace / "uv.toml", '[[index]]\nname = "team"\nurl = "https://team.example/simple/"\n')
    assert _urls() == ["https://team.example/simple/", _builtin()]


def test_pyproject_without_tool_uv_does_not_stop_the_search(user: ConfigUser) -> None:
    user.write(user.project / "pyproject.toml", "[project]\nname = 'x'\n")
    user.write(user.workspace / "uv.toml", 'index-url = "https://up.example/simple/"\n')
    assert _default()[0] == "https://up.example/simple/"


def test_uv_config_file_replaces_discovery_and_uv_no_config_reads_none(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    user.write(user.workspace / "uv.toml", 'index-url = "https://found.example/simple/"\n')
    chosen = user.write(user.home / "chosen.toml", 'index-url = "https://chosen.example/simple/"\n')
    monkeypatch.setenv("UV_CONFIG_FILE", str(chosen))
    assert _default()[0] == "https://chosen.example/simple/"
    monkeypatch.delenv("UV_CONFIG_FILE")
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    assert _default()[0] == _builtin()


def test_uv_index_variable_comes_before_file_indexes_and_explicit_ones_are_left_out(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    user.write(
        user.user_uv_toml,
        '[[index]]\nname = "pinned"\nurl = "https://pinned.example/simple/"\nexplicit = true\n\n'
        '[[index]]\nname = "flat"\nurl = "https://flat.example/links/"\nformat = "flat"\n',
    )
    monkeypatch.setenv("UV_INDEX", "mirror=https://mirror.example/simple/ https://anon.example/simple/")
    config = load_index_config()
    assert [(s.url, s.kind) for s in config.sources] == [
        ("https://mirror.example/simple/", "simple"),
        ("https://anon.example/simple/", "simple"),
        (_builtin(), "simple"),
        ("https://flat.example/links/", "find-links"),
    ]
    assert any("pinned: explicit" in line for line in config.origins)


def test_tool_uv_index_url_in_pyproject(user: ConfigUser) -> None:
    user.write(user.project / "pyproject.toml", '[tool.uv]\nindex-url = "https://tooluv.example/simple/"\n')
    assert _default()[0] == "https://tooluv.example/simple/"


def test_uv_default_index_variable(user: ConfigUser, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_DEFAULT_INDEX", "https://uvenv.example/simple/")
    assert _default() == ("https://uvenv.example/simple/", "UV_DEFAULT_INDEX")


def test_pip_settings_win_over_uv_unless_abiprobe_is_told_otherwise(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "https://pip.example/simple/")
    monkeypatch.setenv("UV_DEFAULT_INDEX", "https://uv.example/simple/")
    assert _urls() == ["https://pip.example/simple/"]
    monkeypatch.setenv("ABIPROBE_INSTALLER", "uv")
    assert _urls() == ["https://uv.example/simple/"]


def test_pip_no_index_keeps_only_find_links(user: ConfigUser, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "https://pip.example/simple/")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://extra.example/simple/")
    monkeypatch.setenv("PIP_FIND_LINKS", "https://links.example/ ~/wheels")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    config = load_index_config()
    assert [(s.url, s.kind) for s in config.sources] == [
        ("https://links.example/", "find-links"),
        ((user.home / "wheels").as_uri(), "find-links"),
    ]


def _builtin() -> str:
    return subprocess.run(
        [sys.executable, "-c", "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_builtin_default_equals_what_pip_reports(user: ConfigUser, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    assert _default() == (_builtin(), "pip's built-in default")


def test_unknown_strategy_is_a_usage_error(user: ConfigUser) -> None:
    with pytest.raises(UsageError, match="unknown index strategy 'fastest'"):
        load_index_config(cli_indexes=["https://a.example/"], cli_strategy="fastest")


def test_pin_to_unknown_index_is_a_usage_error(user: ConfigUser) -> None:
    with pytest.raises(UsageError, match="pin torch = 'nowhere' names no configured index"):
        load_index_config(cli_indexes=["https://a.example/"], cli_pins={"torch": "nowhere"})


def test_broken_toml_is_a_usage_error(user: ConfigUser) -> None:
    (user.project / "abiprobe.toml").write_text("index-url = [unclosed\n")
    with pytest.raises(UsageError, match=r"abiprobe\.toml: invalid TOML"):
        load_index_config()


def test_broken_pip_conf_is_a_usage_error_naming_the_file(user: ConfigUser) -> None:
    user.write(user.pip_conf, "index-url = no section header\n")
    with pytest.raises(UsageError, match=f"cannot parse pip config {user.pip_conf}"):
        load_index_config()
