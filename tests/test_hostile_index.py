"""Misbehaving indexes: every HTTP and page failure is one line with the index exit status, a slow drip
meets a deadline, Retry-After is honoured within bounds, and a malformed or mislabelled page is never
reused as if it were sound."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.indexserver import JSON_TYPE, IndexServer
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.errors import FetchError
from abiprobe.index.client import IndexClient
from abiprobe.net.http import Http
from abiprobe.store.cache import Cache

PROJECT = "hostile"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hostile-index")
    return build_wheel(out, PROJECT, "1.0", {"hostile/__init__.py": b""}, tag="py3-none-any")


@pytest.fixture
def server(wheel: Path) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        srv.add_wheel(wheel)
        yield srv


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _ls(
    capsys: pytest.CaptureFixture[str], server: IndexServer, cache: Path
) -> tuple[int, dict[str, object]]:
    code, out, _err = _run(
        capsys, "index", "ls", PROJECT, "--index", server.index_url, "--cache-dir", str(cache), "--json"
    )
    return code, json.loads(out)


def _errors(doc: dict[str, object]) -> str:
    return " | ".join(str(o["error"]) for o in doc["indexes"])  # type: ignore[attr-defined]


# 4. tracebacks from indexes


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ({"redirect_loop": True}, "redirect loop"),
        ({"bad_gzip": True}, "does not decode as its Content-Encoding says"),
        ({"body": b"[" * 200_000, "content_type": JSON_TYPE}, "nested too deeply"),
    ],
    ids=["redirect-loop", "bad-gzip", "deep-json"],
)
def test_a_page_fault_is_one_line_and_exit_3(
    server: IndexServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fault: dict[str, object],
    says: str,
) -> None:
    server.fail(match="/simple/", **fault)
    code, doc = _ls(capsys, server, tmp_path / "cache")
    assert code == 3
    assert says in _errors(doc)


def test_a_redirect_loop_on_a_file_is_one_line(
    server: IndexServer, wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.fail(match="/files/", redirect_loop=True)
    url = server.file_url(wheel.name)
    code, _out, err = _run(capsys, "inspect", url, "--cache-dir", str(tmp_path / "cache"))
    assert code == 3
    assert "redirect loop" in err and len(err.strip().splitlines()) == 1


WHEEL = "hostile-1.0-py3-none-any.whl"
BAD_HOST_HTML = f'<a href="http://[::1/files/{WHEEL}">{WHEEL}</a>'.encode()
BAD_HOST_JSON = json.dumps({"name": PROJECT, "files": [{"filename": WHEEL, "url": "//[::1/x.whl"}]}).encode()


@pytest.mark.parametrize(
    ("body", "ctype"), [(BAD_HOST_HTML, "text/html"), (BAD_HOST_JSON, JSON_TYPE)], ids=["html", "json"]
)
def test_a_link_with_a_broken_ipv6_host_is_skipped_and_said(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes, ctype: str
) -> None:
    server.fail(match="/simple/", body=body, content_type=ctype)
    code, doc = _ls(capsys, server, tmp_path / "cache")
    assert code == 0
    assert doc["candidates"] == []
    assert any("skipped" in n for n in doc["notes"])  # type: ignore[attr-defined]


# 5. inspect PROJECT==VERSION: an unreachable index is not a missing version


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 500},
        {"status": 429, "headers": {"Retry-After": "1"}},
        {"truncate_after": 40},
    ],
    ids=["http-500", "429-retry-after", "truncated"],
)
def test_inspect_of_a_version_on_an_unreadable_index_exits_3(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: dict[str, object]
) -> None:
    server.fail(match="/simple/", **fault)
    argv = ("inspect", f"{PROJECT}==1.0", "--index-url", server.index_url, "--cache-dir", str(tmp_path / "c"))
    code, _out, err = _run(capsys, *argv)
    assert code == 3, err
    assert "could not be read" in err and "no wheel of that version" not in err


def test_inspect_of_a_version_that_is_not_there_still_exits_2(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("inspect", f"{PROJECT}==9.9", "--index-url", server.index_url, "--cache-dir", str(tmp_path / "c"))
    code, _out, err = _run(capsys, *argv)
    assert code == 2 and "no wheel of that version" in err


# 8. a slow drip meets an overall deadline


def test_a_slow_drip_page_fails_at_the_deadline(server: IndexServer, tmp_path: Path) -> None:
    # GIVEN a page sent one byte every 0.2 s (its ~500 bytes would take minutes)
    server.fail(match="/simple/", drip=0.2)
    with Http(timeout=5.0, retries=3, backoff=0.0, deadline=1.0) as http:
        client = IndexClient([server.index_url], Cache(tmp_path / "cache"), http)
        fetch = client.fetch_page(client.sources[0], PROJECT)
    # THEN it fails at the deadline, with one line saying so, not retried, and having taken a few of
    # the page's bytes only
    assert fetch.status == "failed" and "too slow" in (fetch.error or "")
    assert server.requests[f"/simple/{PROJECT}/"] == 1
    assert server.bytes_served[f"/simple/{PROJECT}/"] < 100


# 9. a mislabelled page is not kept after the server is fixed


def test_a_json_page_served_as_html_is_asked_for_whole_once_fixed(
    server: IndexServer, tmp_path: Path
) -> None:
    cache = Cache(tmp_path / "cache")
    # GIVEN the JSON page served once as text/html
    server.fail(match="/simple/", times=1, content_type="text/html")
    with Http(timeout=5.0, retries=1, backoff=0.0) as http:
        client = IndexClient([server.index_url], cache, http, fresh_for=600.0)
        first = client.fetch_page(client.sources[0], PROJECT)
        # THEN it lists nothing and says why
        assert first.page is not None and first.page.files == ()
        assert any("looks like JSON" in p for p in first.page.problems)
        # WHEN the fixed server is asked again (within the freshness window)
        second = client.fetch_page(client.sources[0], PROJECT)
    # THEN the page was asked for whole (no validators, so no 304 keeping the wrong type) and now lists
    _path, headers, status = server.log[-1]
    assert "if-none-match" not in headers and status == 200
    assert second.page is not None and len(second.page.files) == 1


def test_refresh_asks_without_validators(server: IndexServer, tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    with Http(timeout=5.0, retries=1, backoff=0.0) as http:
        IndexClient([server.index_url], cache, http).list_project(PROJECT)
        plain = IndexClient([server.index_url], cache, http)
        plain.list_project(PROJECT)
        assert "if-none-match" in server.log[-1][1]  # an ordinary run revalidates
        refreshing = IndexClient([server.index_url], cache, http, refresh=True)
        refreshing.list_project(PROJECT)
        assert "if-none-match" not in server.log[-1][1] and server.log[-1][2] == 200
        requests = len(server.log)
        refreshing.list_project(PROJECT)  # fetched by this very run: not asked for again
        assert len(server.log) == requests


# 10. malformed pages are not reused in the freshness window


@pytest.mark.parametrize(
    "body",
    [
        b"garbage, not a page",
        b'<html><a href="../../files/hostile-1.0-py3-none-any.whl">hostile',
        b"<a>x</a>",
        b'<a href="../../files/hostile-1.0-py3-none-any.whl#sha256=not-a-digest">hostile</a>',
        b'<a href="../../files/hostile-1.0-py3-none-any.whl" data-requires-python="&gt;=3.8,&lt;&lt;">h</a>',
        b'<a href="../../files/hostile-1.0-py3-none-any.whl" data-core-metadata="sha256=">hostile</a>',
    ],
    ids=["garbage", "unclosed", "no-href", "bad-hash", "bad-requires-python", "bad-metadata-hash"],
)
def test_a_malformed_page_stays_out_of_the_fresh_window(
    server: IndexServer, tmp_path: Path, body: bytes
) -> None:
    cache = Cache(tmp_path / "cache")
    server.fail(match="/simple/", times=1, body=body, content_type="text/html")
    with Http(timeout=5.0, retries=1, backoff=0.0) as http:
        client = IndexClient([server.index_url], cache, http, fresh_for=600.0)
        broken = client.list_project(PROJECT)
        assert broken.notes, "the page's problems were not said"
        assert client.page_identity(PROJECT) is None  # nothing stored may be keyed on this page
        fixed = client.list_project(PROJECT)
    assert server.requests[f"/simple/{PROJECT}/"] == 2
    assert [str(c.version) for c in fixed.candidates] == ["1.0"]


def test_a_json_entry_of_the_wrong_type_is_a_problem(server: IndexServer, tmp_path: Path) -> None:
    body = json.dumps({"name": PROJECT, "files": [["not", "a", "mapping"]]}).encode()
    server.fail(match="/simple/", times=1, body=body, content_type=JSON_TYPE)
    with Http(timeout=5.0, retries=1, backoff=0.0) as http:
        client = IndexClient([server.index_url], Cache(tmp_path / "cache"), http, fresh_for=600.0)
        first = client.fetch_page(client.sources[0], PROJECT)
        second = client.fetch_page(client.sources[0], PROJECT)
    assert first.page is not None and first.page.problems
    assert second.page is not None and len(second.page.files) == 1 and not second.from_cache


# Retry-After on 429 / 503


def test_retry_after_is_waited_for_when_it_is_short(server: IndexServer, tmp_path: Path) -> None:
    server.fail(match="/simple/", times=1, status=503, headers={"Retry-After": "1"})
    with Http(timeout=5.0, retries=3, backoff=0.0) as http:
        started = time.monotonic()
        fetch = IndexClient([server.index_url], None, http).list_project(PROJECT)
        waited = time.monotonic() - started
    assert [str(c.version) for c in fetch.candidates] == ["1.0"]
    assert waited >= 1.0


def test_a_long_retry_after_is_not_waited_for(server: IndexServer) -> None:
    server.fail(match="/simple/", status=429, headers={"Retry-After": "3600"})
    with (
        Http(timeout=5.0, retries=3, backoff=0.0) as http,
        pytest.raises(FetchError, match="Retry-After 3600 s"),
    ):
        http.get(server.index_url + f"{PROJECT}/")
    assert server.requests[f"/simple/{PROJECT}/"] == 1


def test_a_whole_body_read_is_capped(server: IndexServer) -> None:
    with (
        Http(timeout=5.0, retries=1, backoff=0.0) as http,
        pytest.raises(FetchError, match="larger than 64"),
    ):
        http.get(server.index_url + f"{PROJECT}/", max_bytes=64)
