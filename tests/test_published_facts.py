"""Published facts: ``cache publish`` writes a tree from a first solve's cache; a solve on a new machine
(an empty cache) fetches from it the facts of the wheels its own index lists instead of reading them."""

from __future__ import annotations

import gzip
import json
import os
import socket
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.indexserver import IndexServer
from support.solve_stacks import SolveStack, _kernel, serve, solve_argv, solve_stack
from support.stacks import PY_TAG
from support.wheelbuild import build_wheel

from abiprobe.analyze.preloads import preload_pattern
from abiprobe.cli import main
from abiprobe.index.client import IndexClient
from abiprobe.model.stack import default_stack
from abiprobe.net.http import Http
from abiprobe.store import entries
from abiprobe.store.cache import Cache
from abiprobe.store.primitives import sha256_hex
from abiprobe.store.published import publish, published_setting
from abiprobe.store.reads import WheelReads

BUILT_IN_PRELOADS = preload_pattern(default_stack().loading())

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
PREFIX = "/published/"
CACHE_SCHEMA = json.loads(
    (Path(__file__).parent.parent / "abiprobe" / "schemas" / "cache.schema.json").read_text()
)


@dataclass(frozen=True)
class Published:
    server: IndexServer
    tree: dict[str, bytes]  # relative path -> bytes, as `cache publish` wrote them
    cold: dict[str, Any]  # the matrix document of the first, cold solve
    stack: SolveStack

    @property
    def location(self) -> str:
        return self.server.url + PREFIX

    def serve_tree(self, changed: dict[str, bytes] | None = None) -> None:
        for rel, data in {**self.tree, **(changed or {})}.items():
            self.server.add_page(PREFIX + rel, data)


def document(out: Path) -> dict[str, Any]:
    """The matrix document, without how many of its analyses were run here and how many were stored."""
    data: dict[str, Any] = json.loads((out / f"{NAME}.json").read_text())
    del data["stats"]["analyses_run"], data["stats"]["analyses_stored"]
    return data


def analyses_run(out: Path) -> int:
    return int(json.loads((out / f"{NAME}.json").read_text())["stats"]["analyses_run"])


def wheel_reads(server: IndexServer) -> list[str]:
    """The requests that read wheel bytes (a wheel file itself, not its PEP 658 METADATA)."""
    return [path for path, _headers, _status in server.log if path.endswith(".whl")]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("solve-stack"))


@pytest.fixture(scope="module")
def published(stack: SolveStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Published]:
    # GIVEN a fixture stack's index, a first solve of it read cold, and the tree `cache publish` made of it
    tmp = tmp_path_factory.mktemp("first")
    with IndexServer() as server:
        serve(server, stack)
        assert main(solve_argv(server.index_url, tmp / "cache", tmp / "out", "--no-published-facts")) == 0
        assert main(["cache", "publish", str(tmp / "tree"), "--cache-dir", str(tmp / "cache")]) == 0
        tree = {
            str(p.relative_to(tmp / "tree")): p.read_bytes() for p in (tmp / "tree").rglob("*") if p.is_file()
        }
        yield Published(server, tree, document(tmp / "out"), stack)


@pytest.fixture
def site(published: Published, monkeypatch: pytest.MonkeyPatch) -> Iterator[Published]:
    """The tree served beside the index and configured as the published location; counters reset."""
    published.serve_tree()
    published.server.reset_counts()
    monkeypatch.setenv("ABIPROBE_PUBLISHED_FACTS", published.location)
    yield published
    published.serve_tree()


def facts_file(tree: dict[str, bytes], filename: str) -> str:
    """The tree's fact file of the wheel called ``filename``."""
    for rel, data in tree.items():
        if rel.endswith(entries.FACTS_SUFFIX):
            payload = gzip.decompress(data).partition(b"\n")[2]
            if json.loads(payload)["filename"] == filename:
                return rel
    raise AssertionError(f"no published facts of {filename}")


def without_verdicts(tree: dict[str, bytes]) -> bytes:
    """The tree's manifest with no stored verdict: a solve then needs the full facts it judges."""
    manifest = json.loads(tree["manifest.json"])
    manifest["analyses"] = {}
    return json.dumps(manifest).encode()


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("abiprobe: warning:")]


def test_publish_writes_a_manifest_of_verified_facts_only(published: Published) -> None:
    manifest = json.loads(published.tree["manifest.json"])
    assert manifest["kind"] == "abiprobe-published-facts"
    assert manifest["facts"]
    for sha, spec in manifest["facts"].items():
        data = published.tree[f"facts/{sha[:2]}/{sha}{entries.FACTS_SUFFIX}"]
        assert (len(data), spec["size"]) == (spec["size"], len(data))
        assert entries.decode_facts(data, sha).verified


def test_a_new_machine_reads_no_wheel_and_writes_the_same_matrix(
    site: Published, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN a second machine (an empty cache) solves with the published location configured
    rc = main(solve_argv(site.server.index_url, tmp_path / "cache", tmp_path / "out"))
    # THEN it read pages, the manifest and fact files only, and wrote the same matrix as the cold solve
    assert rc == 0
    assert wheel_reads(site.server) == []
    assert site.server.requests[PREFIX + "manifest.json"] == 1
    assert document(tmp_path / "out") == site.cold
    assert warnings(capsys.readouterr().err) == []


def test_a_new_machine_judges_nothing_the_publisher_judged(site: Published, tmp_path: Path) -> None:
    # WHEN a new machine solves with the published location THEN every verdict came from the tree
    assert main(solve_argv(site.server.index_url, tmp_path / "cache", tmp_path / "out")) == 0
    assert analyses_run(tmp_path / "out") == 0
    assert any(p.startswith(PREFIX + "analyses/") for p in site.server.requests)
    # AND no full facts were fetched: the summaries choose the candidates, the verdicts are stored
    assert not any(p.startswith(PREFIX + "facts/") for p in site.server.requests)


def test_cache_info_says_which_facts_came_from_published_facts(
    site: Published, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site.serve_tree({"manifest.json": without_verdicts(site.tree)})  # the full facts are needed
    main(solve_argv(site.server.index_url, tmp_path / "cache", tmp_path / "out"))
    capsys.readouterr()
    assert main(["cache", "info", "--cache-dir", str(tmp_path / "cache"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    jsonschema.validate(info, CACHE_SCHEMA)
    assert info["published_facts"] == info["kinds"]["facts"]["count"] > 0
    assert main(["cache", "info", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "came from published facts" in capsys.readouterr().out


def test_publish_reports_what_it_wrote_in_its_schema(
    published: Published, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(solve_argv(published.server.index_url, tmp_path / "cache", tmp_path / "out", "--no-published-facts"))
    capsys.readouterr()
    assert (
        main(["cache", "publish", str(tmp_path / "tree"), "--cache-dir", str(tmp_path / "cache"), "--json"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, CACHE_SCHEMA)
    manifest = json.loads((tmp_path / "tree" / "manifest.json").read_text())
    assert (report["facts"], report["analyses"]) == (len(manifest["facts"]), len(manifest["analyses"]))


def test_a_tampered_fact_file_is_refused_and_its_wheel_read(
    site: Published, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the published facts of torch 2.9.0 changed after the manifest was made, and no published
    # verdict (so that its facts are needed)
    wheel = site.stack.wheels["torch_29"].name
    rel = facts_file(site.tree, wheel)
    good = gzip.decompress(site.tree[rel])
    tampered = gzip.compress(good.replace(b'"torch"', b'"terch"', 1), mtime=0)
    site.serve_tree({rel: tampered, "manifest.json": without_verdicts(site.tree)})
    # WHEN a new machine solves
    rc = main(solve_argv(site.server.index_url, tmp_path / "cache", tmp_path / "out"))
    # THEN one line says so, that wheel alone is read from its bytes, and the matrix is the cold one
    assert rc == 0
    said = warnings(capsys.readouterr().err)
    assert len(said) == 1 and wheel in said[0] and "does not match the manifest's digest" in said[0]
    assert {p.rsplit("/", 1)[-1] for p in wheel_reads(site.server)} == {wheel}
    assert document(tmp_path / "out") == site.cold


def test_a_fact_file_of_another_wheel_is_refused(
    site: Published, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the manifest's entry of torch 2.9.0 points, digest and all, at torch 2.8.0's facts
    wheel, other = site.stack.wheels["torch_29"].name, site.stack.wheels["torch_28"].name
    rel, swapped = facts_file(site.tree, wheel), site.tree[facts_file(site.tree, other)]
    manifest = json.loads(without_verdicts(site.tree))
    sha = rel.rsplit("/", 1)[-1].removesuffix(entries.FACTS_SUFFIX)
    manifest["facts"][sha] = {"sha256": sha256_hex(swapped), "size": len(swapped)}
    site.serve_tree({rel: swapped, "manifest.json": json.dumps(manifest).encode()})
    rc = main(solve_argv(site.server.index_url, tmp_path / "cache", tmp_path / "out"))
    assert rc == 0
    said = warnings(capsys.readouterr().err)
    assert len(said) == 1 and wheel in said[0] and "another wheel" in said[0]
    assert {p.rsplit("/", 1)[-1] for p in wheel_reads(site.server)} == {wheel}
    assert document(tmp_path / "out") == site.cold


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_location_degrades_to_the_cold_read(
    site: Published, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ABIPROBE_PUBLISHED_FACTS", f"http://127.0.0.1:{_closed_port()}/facts/")
    rc = main(solve_argv(site.server.index_url, tmp_path / "cache", tmp_path / "out"))
    assert rc == 0
    said = warnings(capsys.readouterr().err)
    assert len(said) == 1 and "published facts at http://127.0.0.1:" in said[0]
    assert wheel_reads(site.server)
    assert document(tmp_path / "out") == site.cold


def test_off_reads_every_wheel_itself(site: Published, tmp_path: Path) -> None:
    rc = main(solve_argv(site.server.index_url, tmp_path / "cache", tmp_path / "out", "--no-published-facts"))
    assert rc == 0
    assert site.server.requests[PREFIX + "manifest.json"] == 0
    assert wheel_reads(site.server)


def test_facts_of_a_sha256_the_index_does_not_list_are_never_used(
    published: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an index that lists sglang-kernel 0.4.0 re-uploaded without sm_120 code (another sha256 under
    # the same name), and the tree published from the first index (facts of the old upload)
    stack = published.stack
    rebuilt = _kernel(
        tmp_path / "rebuilt-wheels",
        tmp_path / "rebuilt",
        "sglang-kernel",
        "0.4.0",
        stack.root / "t29" / "torch-2.9.0" / "libc10.so",
        stack.root / "runtime" / "libcudart.so.13",
        unsigned=True,
        requires=["torch==2.9.0"],
        gencode="arch=compute_100a,code=sm_100a",
    )
    old_sha = sha256_hex(stack.wheels["k040"].read_bytes())
    assert old_sha in json.loads(published.tree["manifest.json"])["facts"]
    with IndexServer() as server:
        for key, path in sorted(stack.wheels.items()):
            server.add_wheel(
                rebuilt if key == "k040" else path, **({"yanked": "x"} if key in stack.yanked else {})
            )
        for rel, data in published.tree.items():
            server.add_page(PREFIX + rel, data)
        monkeypatch.setenv("ABIPROBE_PUBLISHED_FACTS", server.url + PREFIX)
        # WHEN a new machine solves against it
        rc = main(solve_argv(server.index_url, tmp_path / "cache", tmp_path / "out"))
        reads = {p.rsplit("/", 1)[-1] for p in wheel_reads(server)}
        fetched = set(server.requests)
    # THEN the old upload's facts were never fetched, the new upload was read from its bytes and judged
    # by them, and every other wheel came from the published tree
    assert rc == 0
    assert not any(old_sha in path for path in fetched)
    assert reads == {rebuilt.name}
    doc = document(tmp_path / "out")
    cell = next(c for c in doc["cells"] if (c["row"], c["col"]) == ("torch==2.9.0", "sglang-kernel==0.4.0"))
    assert (cell["status"], cell["checks"]["gpu_arch"]) == ("fail", "fail")


def _padded_wheel(out: Path) -> Path:
    """A wheel whose one library is a small share of the file: its facts are read by range, unhashed."""
    out.mkdir(parents=True, exist_ok=True)
    lib = build_shared(out, "libk.so", "int k(void) { return 1; }\n", soname="libk.so.1")
    files: dict[str, bytes | Path] = {"mykernel/libk.so": lib, "mykernel/data/pad.bin": os.urandom(1 << 20)}
    return build_wheel(out, "mykernel", "0.2.0", files, compression=zipfile.ZIP_STORED)


def test_range_read_facts_are_published_only_once_a_verifying_read_checked_them(tmp_path: Path) -> None:
    # GIVEN a big wheel whose facts a solve reads by range (never checked against its sha256)
    cache = Cache(tmp_path / "cache")
    with IndexServer() as server:
        server.add_wheel(_padded_wheel(tmp_path / "w"))
        with Http(progress=False) as http:
            (candidate,) = IndexClient([server.index_url], cache, http).list_project("mykernel").candidates
            assert (
                not WheelReads(http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD)
                .facts(candidate.file)
                .verified
            )
            before = publish(cache.root, tmp_path / "before")
            # WHEN a run that checks every wheel (--verify-wheels, the nightly's) reads it again
            http.verify_wheels = True
            again = WheelReads(
                http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD
            ).facts(candidate.file)
        after = publish(cache.root, tmp_path / "after")
    # THEN the range-read facts were left out, and the checked ones replace them and are published
    assert (before.facts, before.unverified) == (0, 1)
    assert again.verified and (after.facts, after.unverified) == (1, 0)
    manifest = json.loads((tmp_path / "after" / "manifest.json").read_text())
    assert list(manifest["facts"]) == [candidate.file.sha256]


def test_the_location_comes_from_abiprobe_toml_unless_the_environment_says_otherwise(tmp_path: Path) -> None:
    (tmp_path / "abiprobe.toml").write_text('published-facts = "https://example.org/facts"\n')
    from_file = published_setting(environ={}, cwd=tmp_path)
    assert (from_file.location, from_file.origin.endswith("published-facts")) == (
        "https://example.org/facts/",
        True,
    )
    assert published_setting(environ={"ABIPROBE_PUBLISHED_FACTS": "off"}, cwd=tmp_path).location is None
    assert published_setting(disabled=True, environ={}, cwd=tmp_path).location is None


def test_config_says_there_is_no_default_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ABIPROBE_PUBLISHED_FACTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["config", "--cuda", "none", "--index", "http://127.0.0.1:9/simple/", "--json"]) == 0
    published = json.loads(capsys.readouterr().out)["published_facts"]
    assert published["value"] is None and "no default" in published["origin"]


def test_inspect_of_a_listed_wheel_takes_its_published_facts(
    site: Published, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an empty cache and the published location; WHEN a listed kernel wheel is inspected by name
    argv = ["sglang-kernel==0.4.0", "--index-url", site.server.index_url, "--cache-dir", str(tmp_path / "c")]
    rc = main(["inspect", *argv, "--json"])
    # THEN its facts came from the tree: no wheel byte was read
    assert rc == 0
    (src,) = json.loads(capsys.readouterr().out)["sources"]
    assert src["sha256"] == sha256_hex(site.stack.wheels["k040"].read_bytes())
    assert src["objects"] and wheel_reads(site.server) == []


def test_without_a_published_metadata_the_published_facts_give_its_requirements(
    stack: SolveStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an index that offers no PEP 658 file, and a tree of a first solve's cache whose METADATA is
    # published only for the wheels it has no facts of
    with IndexServer() as server:
        serve(server, stack, metadata=False)
        first = tmp_path / "first"
        assert main(solve_argv(server.index_url, first / "cache", first / "out", "--no-published-facts")) == 0
        assert main(["cache", "publish", str(first / "tree"), "--cache-dir", str(first / "cache")]) == 0
        manifest = json.loads((first / "tree" / "manifest.json").read_text())
        manifest["metadata"] = {k: v for k, v in manifest["metadata"].items() if k not in manifest["facts"]}
        (first / "tree" / "manifest.json").write_text(json.dumps(manifest))
        for path in (first / "tree").rglob("*"):
            if path.is_file():
                server.add_page(PREFIX + str(path.relative_to(first / "tree")), path.read_bytes())
        server.reset_counts()
        monkeypatch.setenv("ABIPROBE_PUBLISHED_FACTS", server.url + PREFIX)
        # WHEN a new machine solves
        assert main(solve_argv(server.index_url, tmp_path / "cache", tmp_path / "out")) == 0
        reads = wheel_reads(server)
    # THEN no wheel with published facts is read for its METADATA: its facts give its Requires-Dist
    assert manifest["facts"] and reads == []
    assert document(tmp_path / "out") == document(first / "out")
