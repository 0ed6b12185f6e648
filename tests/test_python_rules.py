"""Stored facts whose Python was read under older rules (``abiprobe.store.python_rules``): read again from
the wheel's ``.py`` members alone when the wheel can be read, used as stored (one line says so) when it
cannot, over a real wheel on the local index server."""

from __future__ import annotations

import os
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.indexserver import IndexServer
from support.probe_wheels import TAG
from support.return_wheels import RETPATH_INIT, RETPATH_PATHS
from support.wheelbuild import build_wheel

from abiprobe.analyze.preloads import preload_pattern
from abiprobe.binary.pysource import READ_RULES
from abiprobe.index.client import IndexClient
from abiprobe.model.facts import PyModule, WheelFacts, all_events
from abiprobe.model.stack import default_stack
from abiprobe.net.http import Http
from abiprobe.store.cache import Cache
from abiprobe.store.reads import WheelReads, cached_wheel_facts

BUILT_IN_PRELOADS = preload_pattern(default_stack().loading())


def _wheel(out: Path) -> Path:
    """retpath (its load path returned by a function of another module), padded to a few MB of stored
    random bytes so that reading its Python is a small part of the file."""
    lib = build_shared(out, "libretpath_cuda130.so", "int k(void) { return 1; }\n")
    files: dict[str, bytes | Path] = {
        "retpath/__init__.py": RETPATH_INIT,
        "retpath/_paths.py": RETPATH_PATHS,
        "retpath/libretpath_cuda130.so": lib,
        "retpath/data/pad.bin": os.urandom(2 << 20),
    }
    return build_wheel(out, "retpath", "1.0", files, tag=TAG, compression=zipfile.ZIP_STORED)


def _loads(facts: WheelFacts) -> list[str]:
    return [
        e.target
        for m in facts.python or ()
        for events in (m.events, *(f.events for f in m.functions))
        for e in all_events(events)
        if e.kind == "load"
    ]


def _as_older_rules_read_it(facts: WheelFacts) -> WheelFacts:
    """The facts an abiprobe of older reading rules stored: the same modules, their load not followed."""
    python = tuple(PyModule(m.name, m.path, (), (), m.scanned, m.constants) for m in facts.python or ())
    return replace(facts, python=python, python_rules=READ_RULES - 1)


def test_python_read_under_older_rules_is_read_again_from_its_members_or_used_as_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _wheel(tmp_path / "w")
    cache = Cache(tmp_path / "cache")
    with IndexServer() as server:
        served = server.add_wheel(wheel)
        # GIVEN the wheel's facts read whole (hashed) under today's rules
        with Http(progress=False) as http:
            http.verify_wheels = True
            (candidate,) = IndexClient([server.index_url], cache, http).list_project("retpath").candidates
            file = candidate.file
            today = WheelReads(
                http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD
            ).facts(file)
        assert today.python_rules == READ_RULES and today.verified
        assert _loads(today) and all("libretpath_cuda" in t for t in _loads(today))
        # AND stored as an abiprobe of older rules stored them
        older = _as_older_rules_read_it(today)
        cache.replace_facts(older)
        capsys.readouterr()
        # WHEN read offline THEN they are used as stored, and one line says so
        with Http(progress=False) as http:
            got = WheelReads(
                http, cache, offline=True, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD
            ).facts(file)
        assert got == older
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            f"abiprobe: warning: {served.filename}: its Python was read under older rules "
            f"(v{READ_RULES - 1}, now v{READ_RULES}) and --offline forbids reading it again: its loads are "
            "judged as stored"
        ]
        # WHEN read online THEN only the .py members are read again (a small part of the file), and stored
        server.reset_counts()
        with Http(progress=False) as http:
            got = WheelReads(http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD).facts(
                file
            )
        assert (got.python, got.python_rules) == (today.python, READ_RULES)
        assert 0 < server.bytes_served[served.path] < served.size // 4
        stored = cache.load_facts(today.sha256)
        assert stored is not None and stored.python_rules == READ_RULES and stored.python == today.python
        assert capsys.readouterr().err == ""
        cache.replace_facts(older)
    # WHEN the server cannot be reached THEN the stored facts are used as they are, one line says why
    with Http(progress=False) as http:
        got = WheelReads(http, cache, preloaded=BUILT_IN_PRELOADS, unread_sources=BUILT_IN_UNREAD).facts(file)
    assert got == older
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"abiprobe: warning: {served.filename}: its Python was read under older rules")
    assert "cannot be read again" in line and line.endswith("its loads are judged as stored")


def test_a_local_wheels_python_read_under_older_rules_is_read_again(tmp_path: Path) -> None:
    # GIVEN a local wheel whose stored facts were read under older rules
    wheel = _wheel(tmp_path / "w")
    cache = Cache(tmp_path / "cache")
    today = cached_wheel_facts(wheel, cache, unread_sources=BUILT_IN_UNREAD)
    cache.replace_facts(_as_older_rules_read_it(today))
    # WHEN its facts are asked for again THEN its Python is read again from the file, and stored
    again = cached_wheel_facts(wheel, cache, unread_sources=BUILT_IN_UNREAD)
    assert (again.python, again.python_rules) == (today.python, READ_RULES)
    stored = cache.load_facts(today.sha256)
    assert stored is not None and stored.python_rules == READ_RULES
