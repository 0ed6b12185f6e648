"""Installer settings that change what gets installed: pip's constraint files, uv's constraint and override
dependencies, trusted hosts and uv's index strategy, read from the user's configuration, applied to the
solve (against the local index server) and shown by `abiprobe config`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
from support.configenv import ConfigUser, config_user
from support.indexserver import IndexServer
from support.solve_stacks import SolveStack, serve, solve_argv, solve_stack
from support.tlsca import MadeCA, make_ca
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.errors import UsageError
from abiprobe.index.config import load_index_config
from abiprobe.installers.install_settings import requirement_lines

SCHEMA = json.loads((Path(__file__).parents[1] / "abiprobe" / "schemas" / "config.schema.json").read_text())


@pytest.fixture
def user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ConfigUser:
    return config_user(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("solve-stack"))


@pytest.fixture(scope="module")
def server(stack: SolveStack) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        serve(srv, stack)
        yield srv


def solved(server: IndexServer, tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    code = main([*solve_argv(server.index_url, tmp / "cache", tmp / "out"), "--json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0
    return doc


def locked(tmp: Path) -> str:
    (lock,) = (tmp / "out").glob("*.lock.txt")
    return lock.read_text()


def config_doc(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["config", "--cuda", "none", "--json"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    return doc


def test_pip_constraint_caps_the_torch_the_solve_chooses(
    user: ConfigUser,
    server: IndexServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a pip config whose constraint file caps torch below the newest passing 2.9.0
    caps = user.write(tmp_path / "caps.txt", "# the cluster's torch\ntorch<2.9\n")
    monkeypatch.setenv(
        "PIP_CONFIG_FILE", str(user.write(tmp_path / "pip.conf", f"[global]\nconstraint = {caps}\n"))
    )
    # WHEN abiprobe solves the stack on the local index server
    doc = solved(server, tmp_path, capsys)
    # THEN it chooses the set pip would install: torch 2.8.0 and the flashinfer that allows it
    chosen = set(doc["chosen"].values())
    assert {"torch==2.8.0", "flashinfer-python==0.5.2"} <= chosen, chosen


def test_uv_constraint_dependencies_bound_the_install_closure(
    user: ConfigUser, server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN uv's user config constraining a dependency that the chosen set's flashinfer brings in
    user.write(user.user_uv_toml, 'constraint-dependencies = ["tinydep<2"]\n')
    # WHEN abiprobe solves; THEN the lock file installs tinydep 1.0, not the newest allowed 2.0
    solved(server, tmp_path, capsys)
    text = locked(tmp_path)
    assert "tinydep-1.0-" in text and "tinydep-2.0-" not in text and "tinyextra" not in text


def test_uv_override_dependencies_replace_what_the_set_requires(
    user: ConfigUser, server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN uv overriding flashinfer's requirement tinydep<3 with tinydep>=3 (UV_OVERRIDE names a file)
    user.write(user.user_uv_toml, 'override-dependencies = ["tinydep>=3"]\n')
    # WHEN abiprobe solves; THEN the closure installs tinydep 3.0, which flashinfer's own bound excludes
    solved(server, tmp_path, capsys)
    assert "tinydep-3.0-" in locked(tmp_path)


def test_config_shows_each_install_setting_with_its_origin(
    user: ConfigUser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN uv configured with a constraint file, an override, an insecure host, a strategy, a keyring
    caps = user.write(tmp_path / "caps.txt", "torch<2.9\n")
    user.write(
        user.user_uv_toml,
        'override-dependencies = ["numpy<2"]\nindex-strategy = "unsafe-best-match"\n'
        'allow-insecure-host = ["mirror.example:8443"]\n',
    )
    monkeypatch.setenv("UV_CONSTRAINT", str(caps))
    monkeypatch.setenv("UV_KEYRING_PROVIDER", "disabled")
    monkeypatch.setenv("UV_INDEX", "https://mirror.example:8443/simple/")
    # WHEN `abiprobe config --json` and the text form run
    doc = config_doc(capsys)
    assert main(["config", "--cuda", "none"]) == 0
    text = capsys.readouterr().out
    # THEN each setting is there with where it came from
    install = doc["install"]
    origin = str(user.user_uv_toml)
    assert install["installer"] == "uv"
    assert install["constraints"] == [{"value": "torch<2.9", "origin": f"{caps}:1 via UV_CONSTRAINT"}]
    assert install["overrides"] == [{"value": "numpy<2", "origin": f"{origin} override-dependencies"}]
    assert install["trusted_hosts"] == [
        {"value": "mirror.example:8443", "origin": f"{origin} allow-insecure-host"}
    ]
    assert install["index_strategy"] == {"value": "unsafe-best-match", "origin": f"{origin} index-strategy"}
    assert install["keyring_provider"] == {"value": "disabled", "origin": "UV_KEYRING_PROVIDER"}
    assert doc["strategy"] == "best-match" and doc["keyring"].startswith(
        "off: disabled (UV_KEYRING_PROVIDER)"
    )
    for line in ("constraint: torch<2.9", "override: numpy<2", "TLS not verified for: mirror.example:8443"):
        assert line in text


@pytest.mark.parametrize(
    ("uv_strategy", "abiprobe_strategy"),
    [
        ("first-index", "first-index"),
        ("unsafe-best-match", "best-match"),
        ("unsafe-first-match", "best-match"),
    ],
)
def test_uvs_index_strategy_becomes_abiprobes(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch, uv_strategy: str, abiprobe_strategy: str
) -> None:
    monkeypatch.setenv("UV_INDEX", "https://first.example/simple/")
    monkeypatch.setenv("UV_INDEX_STRATEGY", uv_strategy)
    config = load_index_config()
    assert config.strategy == abiprobe_strategy
    assert any(uv_strategy in note for note in config.origins)


def test_uvs_index_strategy_takes_every_index_s_versions(
    user: ConfigUser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two uv indexes, the first with demo 1.0 and the second with demo 2.0, and unsafe-best-match
    with IndexServer() as first, IndexServer() as second:
        first.add_wheel(build_wheel(tmp_path / "a", "demo", "1.0", {"demo/__init__.py": b""}))
        second.add_wheel(build_wheel(tmp_path / "b", "demo", "2.0", {"demo/__init__.py": b""}))
        monkeypatch.setenv("UV_INDEX", f"{first.index_url} {second.index_url}")
        monkeypatch.setenv("UV_INDEX_STRATEGY", "unsafe-best-match")
        # WHEN abiprobe lists demo; THEN both versions are candidates (first-index would give 1.0 alone)
        capsys.readouterr()
        assert main(["index", "ls", "demo", "--no-cache", "--json"]) == 0
        versions = sorted(c["version"] for c in json.loads(capsys.readouterr().out)["candidates"])
    assert versions == ["1.0", "2.0"]


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> MadeCA:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.mark.parametrize("variable", ["PIP_TRUSTED_HOST", "UV_INSECURE_HOST"])
def test_a_trusted_host_is_read_without_verifying_its_certificate(
    user: ConfigUser,
    ca: MadeCA,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
) -> None:
    # GIVEN an index over TLS with a certificate no trust store here knows, named as a trusted host
    wheel = build_wheel(tmp_path / "w", "demo", "1.0", {"demo/__init__.py": b""})
    with IndexServer(tls=ca.server_context()) as srv:
        srv.add_wheel(wheel)
        monkeypatch.setenv("ABIPROBE_INDEX_URL", srv.index_url)
        capsys.readouterr()
        refused = main(["index", "ls", "demo", "--no-cache", "--json"])
        refused_doc = json.loads(capsys.readouterr().out)
        monkeypatch.setenv(variable, urlsplit(srv.url).netloc)
        # WHEN abiprobe lists demo there without, then with the trusted host
        code = main(["index", "ls", "demo", "--no-cache", "--json"])
        doc = json.loads(capsys.readouterr().out)
    # THEN the certificate is refused first, and the listing found once the host is trusted
    assert refused != 0 and not refused_doc["candidates"]
    assert code == 0 and [c["version"] for c in doc["candidates"]] == ["1.0"]


def test_a_constraints_file_is_read_as_pip_reads_it(tmp_path: Path) -> None:
    # GIVEN a constraints file with a comment, a continuation and a nested -c file beside it
    (tmp_path / "more.txt").write_text("numpy<2  # the ABI\n")
    top = tmp_path / "top.txt"
    top.write_text("# caps\ntorch\\\n<2.9\n-c more.txt\n")
    # THEN its requirements are the two caps, each naming its file and line
    found = requirement_lines(str(top), "PIP_CONSTRAINT")
    assert [s.value for s in found] == ["torch<2.9", "numpy<2"]
    assert found[1].origin == f"{tmp_path / 'more.txt'}:1 via {top}:4"


def test_an_option_in_a_constraints_file_is_one_readable_error(tmp_path: Path) -> None:
    top = tmp_path / "c.txt"
    top.write_text("--index-url https://mirror.example/simple/\n")
    with pytest.raises(UsageError, match=r"c\.txt:1: --index-url in a constraints file is not read"):
        requirement_lines(str(top), "PIP_CONSTRAINT")
