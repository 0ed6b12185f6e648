"""``solve --offline``: an index whose pages came from the cache is reported as answered from the cache,
with the age of its pages; a page the cache lacks is named, not turned into "no answer"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_argv, solve_stack
from support.stacks import PY_TAG

from abiprobe.cli import main

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A cache one online solve filled, and the index URL it was filled from (now down)."""
    tmp = tmp_path_factory.mktemp("offline")
    with IndexServer() as srv:
        serve(srv, solve_stack(tmp / "stack"))
        assert main(solve_argv(srv.index_url, tmp / "cache", tmp / "online")) == 0
        return tmp, srv.index_url


def _offline(cached: tuple[Path, str], out: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    tmp, url = cached
    rc = main(solve_argv(url, tmp / "cache", tmp / out, "--offline", *extra))
    doc = json.loads((tmp / out / f"{NAME}.json").read_text())
    return rc, doc, (tmp / out / f"{NAME}.md").read_text()


def test_an_index_answered_from_the_cache_says_so_with_its_age(cached: tuple[Path, str]) -> None:
    rc, doc, md = _offline(cached, "all-cached")
    (index,) = doc["indexes"]
    assert (rc, index["answered"], index["from_cache"], index["error"]) == (0, True, True, None)
    assert index["cached_at"] is not None
    assert "answered from the cache, pages fetched" in md and "no answer" not in md


def test_a_page_the_cache_lacks_is_named_and_the_rest_still_answered(
    cached: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a stack member whose page no earlier run fetched
    rc, doc, md = _offline(cached, "one-missing", "--with", "nevercached")
    (index,) = doc["indexes"]
    # THEN the index answered from the cache, the missing page is named, and the answer is incomplete
    assert (index["answered"], index["from_cache"]) == (True, True)
    assert [u.rsplit("/", 2)[-2] for u in index["uncached"]] == ["nevercached"]
    assert (rc, doc["complete"]) == (3, False)
    assert "1 page(s) not in the cache" in md and "no answer" not in md
    assert "answered from the cache" in capsys.readouterr().out


def test_an_index_none_of_whose_pages_is_cached_is_no_answer_in_one_line(cached: tuple[Path, str]) -> None:
    never = "http://127.0.0.1:9/simple/"
    rc, doc, md = _offline(cached, "never", "--extra-index", never)
    assert rc == 3  # the answer may lack what that index lists
    by_url = {i["url"]: i for i in doc["indexes"]}
    assert (by_url[never]["answered"], by_url[cached[1]]["answered"]) == (False, True)
    assert "no answer: none of the " in md and "page(s) asked for is in the cache (offline)" in md
