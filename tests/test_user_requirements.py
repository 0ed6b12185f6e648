"""Requirements as users have them: ranges, bare names, ``-r`` / ``-c`` files (comments, includes,
index options, markers for the target) and ``pylock.toml``, for ``check``, ``probe`` and ``solve``,
resolved for the target by the closure resolver against a real local index."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_argv, solve_stack
from support.stacks import PLATFORM, PY_TAG
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.errors import UsageError
from abiprobe.model.target import Target
from abiprobe.model.user_requirements import for_target, parse_requirements_file

PURE = "py3-none-any"
TARGET = ["--python", PY_TAG, "--platform", PLATFORM]
LINUX = Target(cuda=(13, 0), python=(3, 12), platform="manylinux_2_28_x86_64")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("reqs")
    found = {
        f"dep-{v}": build_wheel(out, "dep", v, {"dep.py": b""}, tag=PURE)
        for v in ("1.0", "2.0", "2.5", "3.0")
    }
    found["app"] = build_wheel(out, "app", "1.0", {"app.py": b""}, tag=PURE, requires_dist=["dep"])
    return found


@pytest.fixture(scope="module")
def server(wheels: dict[str, Path]) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        for w in wheels.values():
            srv.add_wheel(w)
        yield srv


def check(
    server: IndexServer | None, tmp: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> dict[str, Any]:
    index = ["--index-url", server.index_url] if server is not None else []
    rc = main(["check", *args, *TARGET, *index, "--cache-dir", str(tmp / "cache"), "--json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert rc == 0, doc
    return doc


def test_a_range_is_resolved_to_the_newest_version_inside_it(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN dep 1.0, 2.0, 2.5 and 3.0 on the index
    # WHEN a range is checked
    doc = check(server, tmp_path, capsys, "dep>=2,<3")
    # THEN the resolver's pick inside the range is what is judged
    assert doc["wheels"] == ["dep 2.5"]


def test_a_bare_name_is_resolved_to_the_newest_version(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = check(server, tmp_path, capsys, "dep")
    assert doc["wheels"] == ["dep 3.0"]


def test_a_requirements_file_with_comments_markers_index_and_constraints(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a requirements file naming its index, a comment, a Windows-only line and a constraints file
    (tmp_path / "cons.txt").write_text("dep<2.5  # not the newest\n")
    reqs = tmp_path / "requirements.txt"
    reqs.write_text(
        f"--index-url {server.index_url}\n# the application\napp==1.0 \\\n  --hash=sha256:{'0' * 64}\n"
        "winonly==1.0; sys_platform == 'win32'\n-c cons.txt\n"
    )
    # WHEN it is checked with no index on the command line
    doc = check(None, tmp_path, capsys, "-r", str(reqs))
    # THEN app is judged with the dep the constraint allows, and the Windows-only line is left out
    assert sorted(doc["wheels"]) == ["app 1.0", "dep 2.0"]
    assert [a["wheel"] for a in doc["install"]["added"]] == ["dep 2.0"]


def test_a_pylock_file_gives_its_locked_wheels(
    wheels: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a PEP 751 lock of app 1.0 and dep 2.0 (local wheel paths) and a Windows-only package
    lock = tmp_path / "pylock.toml"
    lock.write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n'
        f'[[packages]]\nname = "app"\nversion = "1.0"\n[[packages.wheels]]\npath = "{wheels["app"]}"\n'
        f'[[packages]]\nname = "dep"\nversion = "2.0"\n[[packages.wheels]]\npath = "{wheels["dep-2.0"]}"\n'
        '[[packages]]\nname = "winonly"\nversion = "1.0"\nmarker = "sys_platform == \'win32\'"\n'
    )
    # WHEN the lock is checked, its packages' requirements followed
    doc = check(None, tmp_path, capsys, str(lock))
    # THEN exactly the locked wheels are judged and nothing is added beside them
    assert sorted(doc["wheels"]) == ["app 1.0", "dep 2.0"]
    assert doc["install"]["added"] == []


def test_probe_installs_a_requirements_file_s_resolution(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a requirements file with a range
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("dep>=2,<3\n")
    # WHEN it is probed
    argv = ["probe", "-r", str(reqs), "--python", PY_TAG, "--index-url", server.index_url]
    rc = main([*argv, "--cache-dir", str(tmp_path / "c"), "--wheels-dir", str(tmp_path / "w"), "--json"])
    [result] = json.loads(capsys.readouterr().out)["results"]
    # THEN the resolver's pick is installed and imported for real
    assert (rc, result["outcome"]) == (0, "ok"), result
    assert result["versions"]["dep"] == "2.5"


def test_solve_takes_a_requirements_file_as_constraints(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    # GIVEN the fixture stacks (torch 2.8 and 2.9) and a requirements file capping torch, with a marker
    stack = solve_stack(tmp_path_factory.mktemp("solve-stack"))
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("# keep the older torch\ntorch<2.9; python_version >= '3'\nnotastackmember>=1\n")
    with IndexServer() as srv:
        serve(srv, stack)
        # WHEN solve reads it
        rc = main(solve_argv(srv.index_url, tmp_path / "cache", tmp_path / "m", "-r", str(reqs)))
    doc = json.loads(next((tmp_path / "m").glob("*.json")).read_text())
    # THEN the chosen torch is inside the file's bound
    assert rc == 0
    assert doc["chosen"]["torch"].startswith("torch==2.8")


def test_a_requirements_file_parses_as_pip_reads_it(tmp_path: Path) -> None:
    # GIVEN a file with an include, a continuation, a variable, a --hash, --pre and a marker
    (tmp_path / "more.txt").write_text("extra-pkg>=1\n")
    main_file = tmp_path / "reqs.txt"
    main_file.write_text(
        "-r more.txt\nfoo>=1,\\\n<2\nbar==${BAR_VERSION} --hash=sha256:abc\n--pre\n"
        "winonly; sys_platform == 'win32'\n-f ./wheels\n"
    )
    parsed = parse_requirements_file(str(main_file), lambda p: Path(p).read_text(), {"BAR_VERSION": "3.1"})
    # THEN every requirement is read in order, options kept, and the marker judged for the target
    texts = [r.text for r in for_target(parsed.requirements, LINUX)]
    assert texts == ["extra-pkg>=1", "foo<2,>=1", "bar==3.1"]
    assert parsed.pre and parsed.find_links == (str(tmp_path / "wheels"),)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("-e ./src\n", "editable"),
        ("--frobnicate\n", "unknown requirements-file option"),
        ("foo>>1\n", "not a requirement"),
    ],
)
def test_a_bad_requirements_line_is_one_error_naming_it(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "reqs.txt"
    path.write_text(f"ok-pkg\n{line}")
    with pytest.raises(UsageError, match=rf"reqs.txt:2: .*{message}"):
        parse_requirements_file(str(path), lambda p: Path(p).read_text())


def test_a_requirements_file_given_as_an_item_is_read_as_with_dash_r(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a requirements file that holds dep below 2.5 (the way the pre-commit hook passes a changed file)
    reqs = tmp_path / "requirements-gpu.txt"
    reqs.write_text("dep<2.5\n")
    # WHEN the file itself is the item
    doc = check(server, tmp_path, capsys, str(reqs))
    # THEN its requirement is what is resolved and judged, as `-r FILE` would
    assert doc["wheels"] == ["dep 2.0"]
