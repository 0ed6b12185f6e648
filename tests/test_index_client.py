"""IndexClient against a real local index server: negotiation, revalidation, offline, strategies, faults."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.proxy import TinyProxy
from support.wheelbuild import build_wheel

from abiprobe.errors import HashMismatchError
from abiprobe.index.client import IndexClient
from abiprobe.index.config import IndexSource
from abiprobe.installers.pip import Setting
from abiprobe.model.candidate import IndexFile
from abiprobe.net.http import Http
from abiprobe.net.settings import NetworkSettings
from abiprobe.store.cache import Cache


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("client-wheels")
    return {
        "demo-1.0": build_wheel(out, "demo", "1.0", {"demo/__init__.py": b""}, requires_python=">=3.9"),
        "demo-2.0+cu130": build_wheel(out, "demo", "2.0+cu130", {"demo/__init__.py": b"x = 1\n"}),
        "other-0.1": build_wheel(out, "other", "0.1", {"other.py": b""}),
    }


@pytest.fixture
def server(wheels: dict[str, Path]) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        srv.add_wheel(wheels["demo-1.0"], upload_time="2026-01-01T00:00:00Z")
        srv.add_wheel(wheels["demo-2.0+cu130"], href="plus")
        yield srv


@pytest.fixture
def http() -> Iterator[Http]:
    with Http(timeout=5.0, retries=3, backoff=0.0) as client:
        yield client


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path / "cache")


def test_json_is_negotiated_when_offered(server: IndexServer, http: Http, cache: Cache) -> None:
    # GIVEN a server offering JSON and HTML  WHEN the client lists demo
    listing = IndexClient([server.index_url], cache, http).list_project("demo")
    # THEN it asked for JSON first and got PEP 700 fields only JSON carries
    assert server.log[0][1]["accept"].startswith("application/vnd.pypi.simple.v1+json")
    assert sorted(str(c.version) for c in listing.candidates) == ["1.0", "2.0+cu130"]
    assert {c.file.upload_time for c in listing.candidates} == {"2026-01-01T00:00:00Z", None}


def test_html_only_index_is_read(
    server: IndexServer, http: Http, cache: Cache, wheels: dict[str, Path]
) -> None:
    server.formats.discard("json")
    listing = IndexClient([server.index_url], cache, http).list_project("demo")
    by_version = {str(c.version): c for c in listing.candidates}
    assert (
        by_version["2.0+cu130"].file.url
        == server.url + "/files/demo-2.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
    )
    assert by_version["1.0"].file.requires_python == ">=3.9"
    assert by_version["1.0"].file.has_metadata


def test_second_fetch_revalidates_with_304_and_no_body(server: IndexServer, http: Http, cache: Cache) -> None:
    client = IndexClient([server.index_url], cache, http)
    client.list_project("demo")
    first_bytes = server.bytes_served["/simple/demo/"]
    # WHEN the page is fetched again
    fetch = client.fetch_page(client.sources[0], "demo")
    # THEN the server answered 304 with no body and the cached page was used
    assert server.log[-1][1]["if-none-match"].startswith('"')
    assert server.log[-1][2] == 304
    assert server.bytes_served["/simple/demo/"] == first_bytes
    assert fetch.revalidated and fetch.page is not None and len(fetch.page.files) == 2


def test_page_younger_than_fresh_for_is_used_without_asking(
    server: IndexServer, http: Http, cache: Cache
) -> None:
    IndexClient([server.index_url], cache, http).list_project("demo")
    asked = server.requests["/simple/demo/"]
    # WHEN a client that takes 10-minute-old pages as fresh lists it again
    listing = IndexClient([server.index_url], cache, http, fresh_for=600).list_project("demo")
    # THEN the server was not asked, and the answer is the cached one
    assert server.requests["/simple/demo/"] == asked
    assert sorted(str(c.version) for c in listing.candidates) == ["1.0", "2.0+cu130"]
    # AND a page older than that is asked for again
    page = cache.load_page(server.index_url + "demo/")
    assert page is not None
    cache.touch_page(page.url, page.fetched_at - 601)
    IndexClient([server.index_url], cache, http, fresh_for=600).list_project("demo")
    assert server.requests["/simple/demo/"] == asked + 1


def test_unknown_host_name_fails_at_once_without_retries(cache: Cache) -> None:
    with Http(timeout=5.0, retries=3, backoff=2.0) as slow_retries:
        fetch = IndexClient(["http://no-such-index.invalid/simple/"], cache, slow_retries).fetch_page(
            IndexSource("http://no-such-index.invalid/simple/"), "demo"
        )
    # THEN it failed, and said so without "after 3 attempts" (no 2 s + 4 s of backoff either)
    assert fetch.status == "failed" and fetch.error is not None
    assert "attempts" not in fetch.error


def test_unknown_host_name_is_told_without_making_an_http_client(cache: Cache) -> None:
    # GIVEN a host name that does not resolve, and no proxy
    with Http(timeout=5.0) as http:
        client = IndexClient(["http://no-such-index.invalid/simple/"], cache, http)
        fetch = client.fetch_page(IndexSource("http://no-such-index.invalid/simple/"), "demo")
        # THEN it failed in the resolver's words, before any HTTP client (TLS context, pools) was made
        assert fetch.status == "failed" and fetch.error is not None
        assert "cannot connect (" in fetch.error and "attempts" not in fetch.error
        assert http._client is None
        # AND a second page of that host is not looked up again
        again = client.fetch_page(IndexSource("http://no-such-index.invalid/simple/"), "other")
        assert again.status == "failed"


def test_behind_a_proxy_an_unknown_host_name_is_the_proxy_s_to_resolve(cache: Cache) -> None:
    # GIVEN a proxy for http URLs (it resolves names itself: this one relays, and fails to connect)
    with TinyProxy() as proxy:
        network = NetworkSettings(proxies={"http": Setting(proxy.url, "test")})
        with Http(timeout=5.0, retries=1, network=network) as http:
            fetch = IndexClient(["http://no-such-index.invalid/simple/"], cache, http).fetch_page(
                IndexSource("http://no-such-index.invalid/simple/"), "demo"
            )
    # THEN the request went to the proxy rather than being refused here
    assert fetch.status == "failed"
    assert proxy.requests and proxy.requests[0].startswith("GET http://no-such-index.invalid/simple/demo/")


def test_304_refreshes_fetched_at(server: IndexServer, http: Http, cache: Cache) -> None:
    client = IndexClient([server.index_url], cache, http)
    client.list_project("demo")
    page = cache.load_page(server.index_url + "demo/")
    assert page is not None
    cache.touch_page(page.url, 1000.0)
    client.list_project("demo")
    refreshed = cache.load_page(server.index_url + "demo/")
    assert refreshed is not None and refreshed.fetched_at > 1000.0


def test_offline_answers_from_cache_without_requests(server: IndexServer, http: Http, cache: Cache) -> None:
    IndexClient([server.index_url], cache, http).list_project("demo")
    server.stop()
    listing = IndexClient([server.index_url], cache, http, offline=True).list_project("demo")
    assert len(listing.candidates) == 2
    assert [(o.status, o.from_cache, o.stale) for o in listing.outcomes] == [("ok", True, False)]


def test_offline_reports_stale_pages(server: IndexServer, http: Http, cache: Cache) -> None:
    IndexClient([server.index_url], cache, http).list_project("demo")
    cache.touch_page(server.index_url + "demo/", 1000.0)
    listing = IndexClient([server.index_url], cache, http, offline=True, stale_after=3600).list_project(
        "demo"
    )
    assert [o.stale for o in listing.stale] == [True]


def test_offline_without_cache_entry_is_a_reported_failure(http: Http, cache: Cache) -> None:
    listing = IndexClient(["http://127.0.0.1:9/simple/"], cache, http, offline=True).list_project("demo")
    assert listing.candidates == ()
    assert [(o.status, o.error) for o in listing.failed] == [("failed", "not in the cache (offline)")]


def _two_servers(wheels: dict[str, Path]) -> tuple[IndexServer, IndexServer]:
    a, b = IndexServer(), IndexServer()
    a.add_wheel(wheels["demo-1.0"])
    b.add_wheel(wheels["demo-2.0+cu130"])
    b.add_wheel(wheels["other-0.1"])
    return a, b


def test_first_index_takes_the_first_index_that_has_the_project(wheels: dict[str, Path], http: Http) -> None:
    a, b = _two_servers(wheels)
    with a, b:
        listing = IndexClient([a.index_url, b.index_url], None, http).list_project("demo")
        assert [str(c.version) for c in listing.candidates] == ["1.0"]
        assert b.requests["/simple/demo/"] == 0


def test_first_index_moves_on_when_the_project_is_missing(wheels: dict[str, Path], http: Http) -> None:
    a, b = _two_servers(wheels)
    with a, b:
        listing = IndexClient([a.index_url, b.index_url], None, http).list_project("other")
        assert [str(c.version) for c in listing.candidates] == ["0.1"]
        assert [o.status for o in listing.outcomes] == ["not-found", "ok"]


def test_best_match_merges_all_indexes(wheels: dict[str, Path], http: Http) -> None:
    a, b = _two_servers(wheels)
    with a, b:
        client = IndexClient([a.index_url, b.index_url], None, http, strategy="best-match")
        listing = client.list_project("demo")
        assert sorted(str(c.version) for c in listing.candidates) == ["1.0", "2.0+cu130"]
        assert [o.used for o in listing.outcomes] == [True, True]


def test_pinned_project_reads_only_its_index(wheels: dict[str, Path], http: Http) -> None:
    a, b = _two_servers(wheels)
    with a, b:
        sources = [IndexSource(a.index_url, "a"), IndexSource(b.index_url, "b")]
        listing = IndexClient(sources, None, http, pins={"Demo": "b"}).list_project("demo")
        assert [str(c.version) for c in listing.candidates] == ["2.0+cu130"]
        assert a.requests["/simple/demo/"] == 0


def test_unreachable_index_is_reported_and_the_next_one_used(wheels: dict[str, Path], http: Http) -> None:
    a, b = _two_servers(wheels)
    with b:
        a.stop()
        listing = IndexClient([a.index_url, b.index_url], None, http).list_project("demo")
        assert [str(c.version) for c in listing.candidates] == ["2.0+cu130"]
        assert listing.outcomes[0].status == "failed"
        assert listing.outcomes[0].error is not None and listing.outcomes[0].error.startswith(
            "cannot connect"
        )


def test_find_links_page_serves_one_project_among_many(wheels: dict[str, Path], http: Http) -> None:
    a, b = _two_servers(wheels)
    with a, b:
        links = IndexSource(b.find_links_url, "links", kind="find-links")
        listing = IndexClient([links], None, http).list_project("other")
        assert [c.file.filename for c in listing.candidates] == [
            "other-0.1-cp312-cp312-manylinux_2_28_x86_64.whl"
        ]


def test_500_twice_then_ok_is_retried(server: IndexServer, http: Http, cache: Cache) -> None:
    server.fail(match="/simple/", status=500, times=2)
    listing = IndexClient([server.index_url], cache, http).list_project("demo")
    assert len(listing.candidates) == 2
    assert server.requests["/simple/demo/"] == 3


def test_500_always_fails_cleanly_and_caches_nothing(server: IndexServer, http: Http, cache: Cache) -> None:
    server.fail(match="/simple/", status=503)
    listing = IndexClient([server.index_url], cache, http).list_project("demo")
    assert [o.error for o in listing.failed] == ["HTTP 503 (after 3 attempts)"]
    assert cache.load_page(server.index_url + "demo/") is None


def test_truncated_page_always_fails_and_caches_nothing(
    server: IndexServer, http: Http, cache: Cache
) -> None:
    server.fail(match="/simple/", truncate_after=50)
    listing = IndexClient([server.index_url], cache, http).list_project("demo")
    (failed,) = listing.failed
    assert failed.error is not None and failed.error.startswith("connection broke off")
    assert cache.load_page(server.index_url + "demo/") is None


def test_reset_once_mid_page_is_retried(server: IndexServer, http: Http, cache: Cache) -> None:
    server.fail(match="/simple/", reset_after=20, times=1)
    listing = IndexClient([server.index_url], cache, http).list_project("demo")
    assert len(listing.candidates) == 2


def test_slow_index_times_out_as_a_reported_failure(server: IndexServer, cache: Cache) -> None:
    server.fail(match="/simple/", delay=1.0)
    with Http(timeout=0.2, retries=2, backoff=0.0) as impatient:
        listing = IndexClient([server.index_url], cache, impatient).list_project("demo")
    assert [o.error for o in listing.failed] == ["timed out (after 2 attempts)"]


def test_duplicate_filenames_from_server_are_kept_and_flagged(
    wheels: dict[str, Path], http: Http, cache: Cache
) -> None:
    with IndexServer() as srv:
        srv.add_wheel(wheels["demo-1.0"], duplicate_hashes=("f" * 64,))
        listing = IndexClient([srv.index_url], cache, http).list_project("demo")
    assert [(c.file.sha256 == "f" * 64, c.file.duplicate) for c in listing.candidates] == [
        (False, True),
        (True, True),
    ]


def test_metadata_is_hash_checked_and_cached_by_wheel_sha(
    server: IndexServer, http: Http, cache: Cache
) -> None:
    client = IndexClient([server.index_url], cache, http)
    candidate = next(c for c in client.list_project("demo").candidates if str(c.version) == "1.0")
    first = client.fetch_metadata(candidate.file)
    second = client.fetch_metadata(candidate.file)
    assert first == second and b"Name: demo" in first
    assert server.requests[f"/files/{candidate.file.filename}.metadata"] == 1
    assert candidate.file.sha256 is not None and cache.load_metadata(candidate.file.sha256) == first


def test_metadata_with_wrong_hash_raises_and_is_not_cached(
    server: IndexServer, http: Http, cache: Cache
) -> None:
    client = IndexClient([server.index_url], cache, http)
    candidate = client.list_project("demo").candidates[0]
    lying = replace(candidate.file, core_metadata={"sha256": "0" * 64})
    with pytest.raises(HashMismatchError, match="does not match the index's 0000"):
        client.fetch_metadata(lying)
    assert lying.sha256 is not None and cache.load_metadata(lying.sha256) is None


def test_url_credentials_are_sent_but_never_shown_or_cached(
    server: IndexServer, http: Http, cache: Cache
) -> None:
    secret_url = server.index_url.replace("http://", "http://alice:s3cret@")
    listing = IndexClient([secret_url], cache, http).list_project("demo")
    expected = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    assert server.log[0][1]["authorization"] == expected
    assert "s3cret" not in repr(listing.to_json())
    assert cache.load_page(server.index_url + "demo/") is not None


def test_netrc_credentials_are_sent(server: IndexServer, cache: Cache, tmp_path: Path) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login bob password hunter2\n")
    netrc.chmod(0o600)
    with Http(netrc_path=netrc, retries=1) as with_netrc:
        IndexClient([server.index_url], cache, with_netrc).list_project("demo")
    assert server.log[0][1]["authorization"] == "Basic " + base64.b64encode(b"bob:hunter2").decode()


@pytest.mark.parametrize("validators", [True, False], ids=["304", "no-validators"])
def test_a_file_is_listed_as_before_only_where_the_stored_page_listed_it_so(
    server: IndexServer, cache: Cache, tmp_path: Path, validators: bool
) -> None:
    server.validators = validators  # without them an index answers 200 with the whole page each time

    def run(**options: bool) -> tuple[IndexClient, dict[str, IndexFile]]:
        http = Http(timeout=5.0, retries=1, backoff=0.0)
        client = IndexClient([server.index_url], cache, http, **options)
        files = {str(c.version): c.file for c in client.list_project("demo").candidates}
        return client, files

    # GIVEN a page read for the first time: nothing on it was listed before
    client, files = run()
    assert not any(client.listed_as_before(f) for f in files.values())
    # WHEN a later run finds the page unchanged (304, or the very body again)
    client, files = run()
    # THEN every file on it is listed as before
    assert all(client.listed_as_before(f) for f in files.values())
    # WHEN a release is added, and one file moves to another URL (same bytes, same sha256)
    server.add_wheel(build_wheel(tmp_path, "demo", "3.0", {"demo/__init__.py": b"y = 3\n"}))
    server.files[1].prefix = "moved"
    client, files = run()
    # THEN only the file the stored page listed just so (URL and sha256) is listed as before
    assert client.listed_as_before(files["1.0"])
    assert not client.listed_as_before(files["2.0+cu130"]) and not client.listed_as_before(files["3.0"])
    # AND under --refresh no stored page vouches for anything
    client, files = run(refresh=True)
    assert not any(client.listed_as_before(f) for f in files.values())
