"""A warm re-solve answers from stored verdicts: the same matrix, no loader simulation, damage recomputed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_argv, solve_stack
from support.stacks import PURE_TAG, PY_TAG

from abiprobe.analyze import loader
from abiprobe.cli import main
from abiprobe.model.facts import WheelFacts
from abiprobe.store.cache import Cache

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"


def _solve(server: IndexServer, cache: Path, out: Path) -> dict[str, object]:
    rc = main(solve_argv(server.index_url, cache, out, "--json"))
    assert rc == 0
    doc: dict[str, object] = json.loads((out / f"{NAME}.json").read_text())
    doc.pop("indexes")  # how each page was had (fetched, revalidated), not what the matrix says
    stats = doc["stats"]
    assert isinstance(stats, dict)
    doc["how"] = {k: stats.pop(k) for k in ("analyses_run", "analyses_stored")}  # how verdicts were had
    return doc


def test_second_solve_reuses_stored_verdicts_and_recomputes_a_damaged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the fixture stack on the local index, solved once into an empty cache
    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        serve(server, stack)
        first = _solve(server, tmp_path / "cache", tmp_path / "m1")
        stored = sorted((tmp_path / "cache" / "analyses").rglob("*.analysis.gz"))
        assert stored, "the first solve stored no verdicts"
        # WHEN it is solved again, with the loader simulation made unusable
        built = []
        real_init = loader.LoaderSimulation.__init__

        def counting_init(self: loader.LoaderSimulation, *args: object, **kwargs: object) -> None:
            built.append(1)
            real_init(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(loader.LoaderSimulation, "__init__", counting_init)
        full_loads: list[str] = []
        real_load = Cache.load_facts

        def counting_load(self: Cache, sha256: str, **kwargs: bool) -> WheelFacts | None:
            full_loads.append(sha256)
            return real_load(self, sha256, **kwargs)

        monkeypatch.setattr(Cache, "load_facts", counting_load)
        second = _solve(server, tmp_path / "cache", tmp_path / "m2")
        # THEN the matrix is the same, no loader was simulated and no full facts were decoded (summaries do)
        assert (first.pop("how"), second.pop("how")) == (
            {"analyses_run": 12, "analyses_stored": 0},
            {"analyses_run": 0, "analyses_stored": 12},
        )
        assert second == first
        assert built == []
        assert full_loads == []
        # AND a damaged stored verdict is dropped and recomputed to the same answer (a stored verdict list,
        # not one of the dependency resolutions kept beside them, whatever order their keys sort in)
        verdicts = [p for p in stored if b'"check"' in gzip.decompress(p.read_bytes())]
        damaged = verdicts[0]
        damaged.write_bytes(b"garbage")
        third = _solve(server, tmp_path / "cache", tmp_path / "m3")
        assert third.pop("how") == {"analyses_run": 1, "analyses_stored": 11}
        assert third == first
        assert full_loads, "recomputing the damaged verdict needed no full facts"
        assert damaged.read_bytes()[:2] == b"\x1f\x8b", "the damaged entry was not stored again"
    capsys.readouterr()


def test_stored_dependency_resolution_is_reused_until_a_page_it_read_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.wheelbuild import build_wheel

    from abiprobe.index.client import IndexClient

    stack = solve_stack(tmp_path / "stack")
    with IndexServer() as server:
        serve(server, stack)
        _solve(server, tmp_path / "cache", tmp_path / "m1")
        lock1 = (tmp_path / "m1" / f"{NAME}.lock.txt").read_text()
        assert "tinydep-2.0-" in lock1
        # WHEN solved again: the lock's dependencies come from the stored resolution, no listing of them
        listed: list[str] = []
        real = IndexClient.list_project

        def counting(self: IndexClient, project: str, **kw: object) -> object:
            listed.append(project)
            return real(self, project, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(IndexClient, "list_project", counting)
        _solve(server, tmp_path / "cache", tmp_path / "m2")
        assert (tmp_path / "m2" / f"{NAME}.lock.txt").read_text() == lock1
        assert not [p for p in listed if p.startswith("tiny")]
        # AND once tinydep's page changes (a 2.5 is uploaded), asking the index again gives the new answer
        server.add_wheel(
            build_wheel(tmp_path / "new", "tinydep", "2.5", {"tinydep_25.py": b""}, tag=PURE_TAG)
        )
        rc = main(solve_argv(server.index_url, tmp_path / "cache", tmp_path / "m3", "--refresh"))
        assert rc == 0
        lock3 = (tmp_path / "m3" / f"{NAME}.lock.txt").read_text()
        assert "tinydep-2.5-" in lock3 and "tinyextra" not in lock3  # 2.5 has no dependencies
    capsys.readouterr()


def test_an_offline_solve_reuses_what_an_online_one_with_a_dead_index_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    stack = solve_stack(tmp_path / "stack")
    with socket.socket() as s:  # a port nothing listens on: connections are refused
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/simple"
    with IndexServer() as server:
        serve(server, stack)
        argv = solve_argv(server.index_url, tmp_path / "cache", tmp_path / "m1", "--extra-index", dead)
        # GIVEN an online solve with one index that cannot be reached (the answer is incomplete: 3)
        assert main(argv) == 3
        stored = {p: p.read_bytes() for p in (tmp_path / "cache" / "analyses").rglob("*.gz")}
        # WHEN the same is solved offline, where the dead index's pages are simply not in the cache
        rc = main([*solve_argv(server.index_url, tmp_path / "cache", tmp_path / "m2", "--extra-index", dead),
                   "--offline"])  # fmt: skip
        # THEN every stored verdict and resolution is reused as it is: nothing new is written
        assert rc == 3
        assert {p: p.read_bytes() for p in (tmp_path / "cache" / "analyses").rglob("*.gz")} == stored
        lock = f"{NAME}.lock.txt"
        assert (tmp_path / "m2" / lock).read_text() == (tmp_path / "m1" / lock).read_text()
    capsys.readouterr()


def test_a_lock_from_a_stored_resolution_is_the_cold_lock_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from abiprobe.index.client import IndexClient

    # GIVEN the fixture stack served with upload times, solved once into an empty cache
    stack = solve_stack(tmp_path / "stack")
    pylock = f"pylock.{NAME}.toml"
    with IndexServer() as server:
        serve(server, stack, upload_time="2025-04-23T15:03:12Z")
        _solve(server, tmp_path / "cache", tmp_path / "m1")
        cold = (tmp_path / "m1" / pylock).read_bytes()
        # WHEN solved again, the dependencies' pins coming from the stored resolution (none listed)
        listed: list[str] = []
        real = IndexClient.list_project

        def counting(self: IndexClient, project: str, **kw: object) -> object:
            listed.append(project)
            return real(self, project, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(IndexClient, "list_project", counting)
        _solve(server, tmp_path / "cache", tmp_path / "m2")
    assert not [p for p in listed if p.startswith("tiny")]
    # THEN the lock is the cold one, byte for byte: the dependencies keep their upload times
    warm = (tmp_path / "m2" / pylock).read_bytes()
    assert b'name = "tinydep"' in cold
    assert cold.count(b"upload-time = 2025-04-23T15:03:12Z") == cold.count(b"[[packages]]") > 0
    assert warm == cold
    capsys.readouterr()
