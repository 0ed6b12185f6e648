"""A warm online solve: stored pages past the freshness window are asked about all at once, with their
validators; nothing else goes to the network when every page is unchanged. A project an index does not
list is remembered like a page."""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

from support.indexserver import IndexServer
from support.solve_stacks import build_history_stack, serve, solve_argv, solve_stack

from abiprobe.cli import main
from abiprobe.store.cache import Cache

DELAY = 0.5  # seconds before the index answers a page request: ten in a row would take five


def _solve(server: IndexServer, cache: Path, out: Path, *extra: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return main(solve_argv(server.index_url, cache, out, *extra))


def _age(cache: Path) -> int:
    store = Cache(cache)
    pages = store.stale_pages(-1.0)
    for page in pages:
        store.touch_page(page.url, time.time() - 3600)
    return len(pages)


def test_stale_pages_are_revalidated_at_once_and_nothing_else_is_asked(tmp_path: Path) -> None:
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        serve(server, stack)
        # GIVEN a solved stack whose stored pages are all past the freshness window
        assert _solve(server, tmp_path / "cache", tmp_path / "m1") == 0
        assert _age(tmp_path / "cache") >= 8
        # WHEN it is solved again against an index that takes DELAY to answer each page
        server.reset_counts()
        server.fail(match="/simple/", delay=DELAY)
        assert _solve(server, tmp_path / "cache", tmp_path / "m2") == 0
        log, at_once = list(server.log), server.max_in_flight
    # THEN every request was a conditional request for a stored page, answered "not modified"
    asked = [path for path, _h, _s in log]
    assert asked and all(p.startswith("/simple/") for p in asked), asked
    assert all("if-none-match" in h for _p, h, _s in log)
    assert {status for _p, _h, status in log} == {304}
    assert len(asked) == len(set(asked)), "a page was asked for twice"
    # AND they were asked at once, not one after another: the index was answering several together
    assert at_once >= 2, at_once


def test_a_project_an_index_does_not_list_is_asked_again_and_answers_offline(tmp_path: Path) -> None:
    # GIVEN an index that lists no sgl-kernel and no flashinfer-jit-cache (HTTP 404 for their pages)
    stack = build_history_stack(tmp_path / "build", 2, 2, 2)
    with IndexServer() as server:
        for wheel in stack.wheels:
            server.add_wheel(wheel)
        assert _solve(server, tmp_path / "cache", tmp_path / "m1") == 0
        assert server.requests["/simple/sgl-kernel/"] == 1
        # WHEN it is solved again within the freshness window
        server.reset_counts()
        assert _solve(server, tmp_path / "cache", tmp_path / "m2") == 0
        # THEN only the pages that were not there are asked about again: a "not listed" is never reused
        assert set(server.requests) == {"/simple/sgl-kernel/", "/simple/flashinfer-jit-cache/"}, dict(
            server.requests
        )
        # AND past the window the missing pages are asked about again, with the rest
        _age(tmp_path / "cache")
        server.reset_counts()
        assert _solve(server, tmp_path / "cache", tmp_path / "m3") == 0
        assert server.requests["/simple/sgl-kernel/"] == 1
    # AND offline, where it cannot be asked again, the stored "not listed" is used but said, with its
    # age, and the answer is marked incomplete (3) though the same set is chosen
    assert _solve(server, tmp_path / "cache", tmp_path / "m4", "--offline") == 3
    (doc,) = [json.loads(p.read_text()) for p in (tmp_path / "m4").glob("*.json")]
    assert doc["complete"] is False and doc["chosen"] == _chosen(tmp_path / "m3")
    errors = [i["error"] or "" for i in doc["indexes"]]
    assert any("HTTP 404 when asked" in e and "ago, not asked again (offline)" in e for e in errors), errors


def test_a_project_that_appears_after_a_not_found_is_seen_past_the_window(tmp_path: Path) -> None:
    stack = build_history_stack(tmp_path / "build", 2, 2, 2)
    old = [w for w in stack.wheels if not w.name.startswith("sglang_kernel")]
    with IndexServer() as server:
        for wheel in old:
            server.add_wheel(wheel)
        # GIVEN a solve that found no kernel at all (its page was not there)
        rc = _solve(server, tmp_path / "cache", tmp_path / "m1")
        assert rc != 0
        # WHEN the kernels are published, THEN a solve past the window finds them
        for wheel in stack.wheels:
            if wheel.name.startswith("sglang_kernel"):
                server.add_wheel(wheel)
        _age(tmp_path / "cache")
        assert _solve(server, tmp_path / "cache", tmp_path / "m2") == 0


def test_the_stored_pages_after_an_index_that_is_down_are_revalidated_at_once(tmp_path: Path) -> None:
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        serve(server, stack)
        # GIVEN a solve whose first index is down (its host does not resolve): no page of it is stored
        dead = ["--extra-index", "http://no-such-index.invalid/simple/"]
        assert _solve(server, tmp_path / "cache", tmp_path / "m1", *dead) == 3
        assert _age(tmp_path / "cache") >= 8
        # WHEN it is solved again past the window, against a live index that takes DELAY per page
        server.reset_counts()
        server.fail(match="/simple/", delay=DELAY)
        assert _solve(server, tmp_path / "cache", tmp_path / "m2", *dead) == 3
        asked, at_once = [path for path, _h, _s in server.log], server.max_in_flight
    # THEN the live index's stored pages were asked about at once, not one listing after another
    assert len(asked) >= 8 and len(asked) == len(set(asked))
    assert at_once >= 2, at_once


def test_a_listing_waits_for_its_page_being_revalidated_while_the_solve_goes_on(tmp_path: Path) -> None:
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        served = serve(server, stack)
        # GIVEN a solved stack (flashinfer-python 0.5.3 chosen), all its stored pages past the window
        assert _solve(server, tmp_path / "cache", tmp_path / "m1") == 0
        assert _chosen(tmp_path / "m1")["flashinfer"] == "flashinfer-python==0.5.3"
        assert _age(tmp_path / "cache") >= 8
        # AND since then 0.5.3 was yanked, and its page takes a while to answer
        served["fi_0.5.3"].yanked = "broken build"  # type: ignore[attr-defined]
        server.fail(match="/simple/flashinfer-python/", delay=1.0)
        # WHEN it is solved again (the pages are asked about while the solve goes on)
        server.reset_counts()
        assert _solve(server, tmp_path / "cache", tmp_path / "m2") == 0
        asked = [path for path, _h, _s in server.log if path.startswith("/simple/")]
    # THEN the solve judged the page as the index serves it now, not the one stored
    assert _chosen(tmp_path / "m2")["flashinfer"] == "flashinfer-python==0.5.2"
    # AND its listing waited for the answer already asked for rather than asking again
    assert asked.count("/simple/flashinfer-python/") == 1, asked


def _chosen(out: Path) -> dict[str, str]:
    (doc,) = [json.loads(p.read_text()) for p in out.glob("*.json")]
    chosen: dict[str, str] = doc["chosen"]
    return chosen


def test_a_page_that_answered_404_once_is_asked_again_inside_the_window(tmp_path: Path) -> None:
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        serve(server, stack)
        # GIVEN a solve during which the kernel's page answered 404 once (a CDN hiccup)
        server.fail(match="/simple/sglang-kernel/", status=404, times=1)
        _solve(server, tmp_path / "cache", tmp_path / "m1")
        assert _chosen(tmp_path / "m1").get("kernel") != "sglang-kernel==0.4.0"
        # WHEN the index has recovered and the stack is solved again inside the freshness window
        assert _solve(server, tmp_path / "cache", tmp_path / "m2") == 0
        asked = server.requests["/simple/sglang-kernel/"]
    # THEN the page was asked for again, and the answer is the whole one, with the kernel
    assert asked == 2
    (doc,) = [json.loads(p.read_text()) for p in (tmp_path / "m2").glob("*.json")]
    assert doc["complete"] is True
    assert doc["chosen"]["kernel"] == "sglang-kernel==0.4.0"
