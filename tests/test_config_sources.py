"""Each configuration source, end to end: `abiprobe index ls` against the local index server (plain, TLS
with a CA made at test time, behind a CONNECT proxy, behind Basic auth) configured only by that source."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from support.configenv import ConfigUser, config_user
from support.indexserver import IndexServer
from support.proxy import TinyProxy
from support.tlsca import MadeCA, make_ca
from support.wheelbuild import build_wheel

from abiprobe.cli import main

WHEEL = "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
SCHEMA = json.loads((Path(__file__).parents[1] / "abiprobe" / "schemas" / "config.schema.json").read_text())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("w"), "demo", "1.0", {"demo/__init__.py": b""})


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> MadeCA:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ConfigUser:
    return config_user(monkeypatch, tmp_path)


@pytest.fixture
def server(wheel: Path) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        srv.add_wheel(wheel)
        yield srv


@pytest.fixture
def tls_server(wheel: Path, ca: MadeCA) -> Iterator[IndexServer]:
    with IndexServer(tls=ca.server_context()) as srv:
        srv.add_wheel(wheel)
        yield srv


def ls(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, object]]:
    """`abiprobe index ls demo --json` with no index named on the command line."""
    capsys.readouterr()
    code = main(["index", "ls", "demo", "--no-cache", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def found(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """THEN `index ls` finds the one wheel through the configured source."""
    code, doc = ls(capsys)
    assert (code, files(doc)) == (0, [WHEEL])
    return doc


def files(doc: dict[str, object]) -> list[str]:
    return [c["file"]["filename"] for c in doc["candidates"]]  # type: ignore[attr-defined, index]


def reasons(doc: dict[str, object]) -> str:
    return " ".join(str(i["error"]) for i in doc["indexes"])  # type: ignore[attr-defined]


def config_doc(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    capsys.readouterr()
    assert main(["config", "--cuda", "none", "--json", *extra]) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    return doc


# indexes and find-links


def test_pip_extra_index_url_variable(
    user: ConfigUser, server: IndexServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", server.index_url)
    found(capsys)


def test_pip_conf_extra_index_url(
    user: ConfigUser, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    user.write(user.pip_conf, f"[global]\nextra-index-url =\n    {server.index_url}\n")
    found(capsys)
    origin = next(i["origin"] for i in config_doc(capsys)["indexes"] if i["url"] == server.index_url)
    assert origin == f"{user.pip_conf} [global] extra-index-url"


@pytest.fixture
def newer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        srv.add_wheel(build_wheel(tmp_path_factory.mktemp("w2"), "demo", "2.0", {"demo/__init__.py": b""}))
        yield srv


def test_pip_index_and_extra_index_are_one_pool_as_pip_sees_them(
    user: ConfigUser,
    server: IndexServer,
    newer_server: IndexServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN pip configured with an extra index holding demo 1.0 and a primary index holding demo 2.0
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", server.index_url)
    monkeypatch.setenv("PIP_INDEX_URL", newer_server.index_url)
    # WHEN abiprobe lists demo under its default first-index strategy
    code, doc = ls(capsys)
    # THEN both versions are candidates, as pip itself would choose among all of its indexes
    assert (code, sorted(files(doc))) == (0, [WHEEL, WHEEL.replace("1.0", "2.0")])


def test_uv_indexes_keep_uvs_first_index(
    user: ConfigUser,
    server: IndexServer,
    newer_server: IndexServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN uv configured with a first index holding demo 1.0, then a default index holding demo 2.0
    monkeypatch.setenv("UV_INDEX", server.index_url)
    monkeypatch.setenv("UV_DEFAULT_INDEX", newer_server.index_url)
    # WHEN abiprobe lists demo; THEN only the first index that has demo is used, as uv does
    code, doc = ls(capsys)
    assert (code, files(doc)) == (0, [WHEEL])


def test_pip_find_links_variable_with_a_page(
    user: ConfigUser, server: IndexServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "true")
    monkeypatch.setenv("PIP_FIND_LINKS", server.find_links_url)
    found(capsys)


def test_pip_conf_find_links_folder_on_disk(
    user: ConfigUser, wheel: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN pip.conf naming a local folder of wheels, and no index at all
    user.write(user.pip_conf, f"[install]\nno-index = yes\nfind-links = {wheel.parent}\n")
    code, doc = ls(capsys)
    # THEN the wheel is found there and its URL is a file URL abiprobe can read by range
    assert (code, files(doc)) == (0, [WHEEL])
    assert doc["candidates"][0]["file"]["url"].startswith("file://")  # type: ignore[index]


def test_pip_no_index_does_not_ask_the_index(
    user: ConfigUser,
    server: IndexServer,
    wheel: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", server.index_url)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheel.parent))
    found(capsys)
    assert server.requests["/simple/demo/"] == 0


def test_uv_index_credentials_variables_for_a_named_index(
    user: ConfigUser, wheel: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with IndexServer(auth=("team", "s3cret")) as srv:
        srv.add_wheel(wheel)
        # (the default index: with UV_INDEX alone, uv's built-in default would be asked after it)
        user.write(
            user.user_uv_toml,
            f'[[index]]\nname = "private-mirror"\nurl = "{srv.index_url}"\ndefault = true\n',
        )
        # WHEN the index wants credentials and none are configured THEN it answers 401 and that is said
        code, doc = ls(capsys)
        assert code == 3 and "HTTP 401" in reasons(doc)
        # WHEN uv's per-index variables hold them THEN they are sent
        monkeypatch.setenv("UV_INDEX_PRIVATE_MIRROR_USERNAME", "team")
        monkeypatch.setenv("UV_INDEX_PRIVATE_MIRROR_PASSWORD", "s3cret")
        doc = found(capsys)
        # AND `abiprobe config` names the source, never the secret
        capsys.readouterr()
        assert main(["config", "--cuda", "none"]) == 0
        shown = capsys.readouterr().out
        assert "UV_INDEX_PRIVATE_MIRROR_USERNAME" in shown and "s3cret" not in shown


def test_uv_toml_in_a_parent_folder_non_default_index(
    user: ConfigUser, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    user.write(user.workspace / "uv.toml", f'[[index]]\nname = "local"\nurl = "{server.index_url}"\n')
    found(capsys)


def test_uv_config_file_variable(
    user: ConfigUser, server: IndexServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = user.write(user.home / "elsewhere.toml", f'[[index]]\nurl = "{server.index_url}"\n')
    monkeypatch.setenv("UV_CONFIG_FILE", str(chosen))
    found(capsys)


def test_uv_no_config_ignores_the_uv_toml(
    user: ConfigUser, server: IndexServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    user.write(user.workspace / "uv.toml", f'[[index]]\nurl = "{server.index_url}"\n')
    assert server.index_url in [i["url"] for i in config_doc(capsys)["indexes"]]
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    assert server.index_url not in [i["url"] for i in config_doc(capsys)["indexes"]]


def test_netrc_credentials(
    user: ConfigUser, wheel: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with IndexServer(auth=("n", "pw")) as srv:
        srv.add_wheel(wheel)
        (user.home / ".netrc").write_text("machine 127.0.0.1 login n password pw\n")
        monkeypatch.setenv("PIP_INDEX_URL", srv.index_url)
        found(capsys)


def test_keyring_after_a_401(
    user: ConfigUser, wheel: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keyring = pytest.importorskip("keyring")
    from keyring.backend import KeyringBackend
    from keyring.credentials import SimpleCredential

    class OneHostKeyring(KeyringBackend):
        """A real (in-memory) keyring backend holding one host's credentials."""

        priority = 1  # type: ignore[assignment]

        def __init__(self, host: str) -> None:
            super().__init__()
            self.host = host

        def get_password(self, service: str, username: str) -> str | None:
            return None

        def set_password(self, service: str, username: str, password: str) -> None:
            raise NotImplementedError

        def get_credential(self, service: str, username: str | None) -> SimpleCredential | None:
            return SimpleCredential("k", "kpw") if service == self.host else None

    with IndexServer(auth=("k", "kpw")) as srv:
        srv.add_wheel(wheel)
        previous = keyring.get_keyring()
        keyring.set_keyring(OneHostKeyring(srv.url.split("://")[1]))
        try:
            monkeypatch.setenv("PIP_INDEX_URL", srv.index_url)
            doc = found(capsys)
            # AND pip's keyring-provider = disabled turns it off
            monkeypatch.setenv("PIP_KEYRING_PROVIDER", "disabled")
            code, doc = ls(capsys)
            assert code == 3 and "HTTP 401" in reasons(doc)
        finally:
            keyring.set_keyring(previous)


# TLS


def test_tls_index_unknown_to_the_default_trust_fails_with_the_reason(
    user: ConfigUser,
    tls_server: IndexServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", tls_server.index_url)
    code, doc = ls(capsys)
    assert code == 3 and "CERTIFICATE_VERIFY_FAILED" in reasons(doc)


@pytest.mark.parametrize("variable", ["PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"])
def test_tls_ca_from_a_variable(
    variable: str,
    user: ConfigUser,
    tls_server: IndexServer,
    ca: MadeCA,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", tls_server.index_url)
    monkeypatch.setenv(variable, str(ca.ca_cert))
    found(capsys)
    assert config_doc(capsys)["tls"]["ca"] == {"value": str(ca.ca_cert), "origin": variable}  # type: ignore[index]


def test_tls_ca_from_pip_conf_cert(
    user: ConfigUser,
    tls_server: IndexServer,
    ca: MadeCA,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    conf = user.write(
        user.home / "pip.ini", f"[global]\ncert = {ca.ca_cert}\nindex-url = {tls_server.index_url}\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    found(capsys)


def test_tls_client_certificate_from_pip_client_cert(
    user: ConfigUser,
    wheel: Path,
    ca: MadeCA,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with IndexServer(tls=ca.server_context(require_client_cert=True)) as srv:
        srv.add_wheel(wheel)
        monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
        monkeypatch.setenv("PIP_INDEX_URL", srv.index_url)
        monkeypatch.setenv("PIP_CERT", str(ca.ca_cert))
        code, _doc = ls(capsys)
        assert code == 3  # the server wants a client certificate
        monkeypatch.setenv("PIP_CLIENT_CERT", str(ca.client_pem))
        found(capsys)


def test_uv_native_tls_uses_the_system_store(
    user: ConfigUser,
    tls_server: IndexServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(variable, raising=False)
    user.write(user.user_uv_toml, "native-tls = true\n")
    tls = config_doc(capsys)["tls"]
    assert tls["native_tls"] == {"value": "true", "origin": f"{user.user_uv_toml} native-tls"}  # type: ignore[index]
    assert "system store" in tls["trust"]  # type: ignore[index]
    # AND the system store does not know the test CA
    monkeypatch.setenv("PIP_INDEX_URL", tls_server.index_url)
    code, doc = ls(capsys)
    assert code == 3 and "CERTIFICATE_VERIFY_FAILED" in reasons(doc)


def test_bad_ca_file_is_one_readable_error(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIP_CERT", str(user.home / "missing.pem"))
    assert main(["index", "ls", "demo", "--index", "http://127.0.0.1:9/simple/"]) == 2
    err = capsys.readouterr().err
    assert "missing.pem (PIP_CERT)" in err and "Traceback" not in err


# proxies


def test_pip_proxy_variable_tunnels_https(
    user: ConfigUser,
    tls_server: IndexServer,
    ca: MadeCA,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with TinyProxy() as proxy:
        monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
        monkeypatch.setenv("PIP_CERT", str(ca.ca_cert))
        monkeypatch.setenv("PIP_INDEX_URL", tls_server.index_url)
        monkeypatch.setenv("PIP_PROXY", proxy.url)
        found(capsys)
        assert any(
            line.startswith(f"CONNECT 127.0.0.1:{tls_server.url.rsplit(':', 1)[1]}")
            for line in proxy.requests
        )


def test_pip_conf_proxy_forwards_http(
    user: ConfigUser, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with TinyProxy() as proxy:
        user.write(user.pip_conf, f"[global]\nproxy = {proxy.url}\nindex-url = {server.index_url}\n")
        found(capsys)
        assert any(line.startswith(f"GET {server.index_url}demo/") for line in proxy.requests)


def test_environment_proxy_and_no_proxy(
    user: ConfigUser, server: IndexServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with TinyProxy() as proxy:
        monkeypatch.setenv("PIP_INDEX_URL", server.index_url)
        monkeypatch.setenv("http_proxy", proxy.url)
        found(capsys)
        assert len(proxy.requests) == 1
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        found(capsys)
        assert len(proxy.requests) == 1


def test_config_text_shows_a_proxy_without_its_password(
    user: ConfigUser, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a proxy with credentials in the environment
    monkeypatch.setenv("HTTPS_PROXY", "http://someone:hunter2@proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost")
    capsys.readouterr()
    # WHEN the settings are shown as text
    assert main(["config", "--cuda", "none"]) == 0
    out = capsys.readouterr().out
    # THEN the proxy line names the proxy and where it came from, never the password
    line = next(line for line in out.splitlines() if line.startswith("proxy for https: "))
    assert "proxy.example:3128" in line and line.endswith("(from HTTPS_PROXY)")
    assert "hunter2" not in out
    assert "no proxy for: localhost (from NO_PROXY)" in out
