"""The real sglang and flashinfer cu130 pages (saved byte for byte), served locally with their wheel links
rewritten to fixture wheels of the same filenames: what the solve does with each of their oddities."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.arch_wheel_stacks import arch_wheel_stack
from support.indexserver import IndexServer, ServedFile
from support.saved_pages import serve_saved
from support.solve_stacks import solve_stack
from support.stacks import PURE_TAG, PY_TAG
from support.wheelbuild import build_wheel, repack

from abiprobe.cli import main

KERNEL = "sglang_kernel-0.4.3+cu130-cp310-abi3-manylinux2014_x86_64.whl"
CUBIN = "flashinfer_cubin-0.5.3-py3-none-any.whl"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = solve_stack(tmp_path_factory.mktemp("solve-stack")).wheels
    out = tmp_path_factory.mktemp("saved-pages")
    kernel = repack(
        base["k040"], out, "sglang-kernel", "0.4.3+cu130", "cp310-abi3-manylinux2014_x86_64", ["torch==2.9.0"]
    )
    assert kernel.name == KERNEL
    other_cubin = build_wheel(
        out / "other",
        "flashinfer-cubin",
        "0.5.3",
        {"flashinfer_cubin/__init__.py": b"# another build\n"},
        tag=PURE_TAG,
    )
    return {**base, "k043": kernel, "cubin_other": other_cubin, **arch_wheel_stack(out / "providers")}


def _solve(tmp: Path, indexes: list[str], *extra: str) -> tuple[int, dict[str, Any]]:
    argv = ["solve", "--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG]
    argv += ["--platform", "manylinux_2_28_x86_64", "--cache-dir", str(tmp / "c")]
    argv += ["--out-dir", str(tmp / "m")]
    for url in indexes:
        argv += ["--index", url]
    rc = main([*argv, *extra])
    (path,) = (tmp / "m").glob("*.json")
    doc: dict[str, Any] = json.loads(path.read_text())
    return rc, doc


def _base(srv: IndexServer, wheels: dict[str, Path]) -> None:
    """torch, its runtime, a kernel and flashinfer 0.5.3 on the generated ``/simple/`` pages."""
    for key in ("torch_29", "runtime", "k040", "fi_0.5.3", "cubin_0.5.3", "jit_cu130", "tinydep_2.0"):
        srv.add_wheel(wheels[key])
    srv.add_wheel(wheels["tinyextra"])
    srv.add_wheel(wheels["tinyfast"])


def _hidden(srv: IndexServer, path: Path, prefix: str = "") -> ServedFile:
    """A fixture reachable only through a saved page's rewritten link."""
    return srv.add_wheel(path, listed=False, prefix=prefix)


@pytest.fixture
def sglang(wheels: dict[str, Path]) -> Iterator[tuple[IndexServer, str]]:
    with IndexServer() as srv:
        _base(srv, wheels)
        served = {KERNEL: _hidden(srv, wheels["k043"])}
        serve_saved(srv, "sglang/cu130/sglang-kernel/index.html", "/sg/cu130/sglang-kernel/", served)
        yield srv, srv.url + "/sg/cu130/"


def test_append_mode_twins_are_both_candidates_and_the_matching_one_is_used(
    sglang: tuple[IndexServer, str], tmp_path: Path
) -> None:
    # GIVEN sglang's page listing KERNEL twice with different sha256, the URL serving the later upload
    srv, sg = sglang
    rc, doc = _solve(tmp_path, [sg, srv.index_url], "--constraint", "sglang-kernel==0.4.3")
    served = srv.served_url(_served(srv, KERNEL))
    # THEN each listing is its own candidate (two kernel groups, each id carrying its sha256)
    ids = [g["id"] for g in doc["groups"]["kernel"]]
    assert ids == [
        "sglang-kernel==0.4.3+cu130 (sha256 6514c0beeb50)",
        f"sglang-kernel==0.4.3+cu130 (sha256 {_served(srv, KERNEL).sha256[:12]})",
    ]
    # AND the chosen set uses the one whose bytes are served; the other is flagged: its hash matches nothing
    assert rc == 0
    assert doc["chosen"]["kernel"] == ids[1]
    (twin,) = doc["twins"]
    assert twin["filename"] == KERNEL
    first, second = twin["entries"]
    assert (first["sha256"][:12], first["used"], second["used"]) == ("6514c0beeb50", False, True)
    assert first["reason"].startswith("its bytes could not be read (")
    assert "does not match the index's 6514c0beeb50" in first["reason"]
    assert first["url"] == second["url"] == served
    # AND a twin that cannot be read is a finding, not an incomplete answer
    assert doc["problems"] == []


def _served(srv: IndexServer, filename: str) -> ServedFile:
    return next(f for f in srv._state.files if f.filename == filename)


@pytest.fixture
def flashinfer(wheels: dict[str, Path]) -> Iterator[tuple[IndexServer, dict[str, ServedFile]]]:
    with IndexServer() as srv:
        _base(srv, wheels)
        keys = ("fi", "cubin", "shim", "provider_sm90a", "provider_sm120f", "fi_0.5.3", "cubin_0.5.3")
        served = {wheels[k].name: _hidden(srv, wheels[k], prefix="fi") for k in keys}
        for page in (
            "flashinfer/flashinfer-python/index.html",
            "flashinfer/flashinfer-cubin/index.html",
            "flashinfer/cu130/flashinfer-jit-cache/index.html",
            "flashinfer/cu130/flashinfer-jit-cache-sm120f/index.html",
            "flashinfer/cu130/flashinfer-jit-cache-sm90a/index.html",
        ):
            serve_saved(srv, page, "/" + page.removesuffix("index.html"), served)
        yield srv, served


def test_flashinfer_from_its_top_level_and_cu130_pages_with_its_provider(
    flashinfer: tuple[IndexServer, dict[str, ServedFile]], tmp_path: Path
) -> None:
    # GIVEN flashinfer's two URLs (cu130/ for the jit-cache shim and providers, the top level for the rest)
    srv, _ = flashinfer
    indexes = [srv.url + "/flashinfer/cu130/", srv.url + "/flashinfer/", srv.index_url]
    rc, doc = _solve(tmp_path, indexes, "--constraint", "flashinfer-python==0.7.0")
    # THEN flashinfer 0.7.0 comes with its cubin, the shim and the sm120f provider, each from its own page
    assert rc == 0
    (group,) = doc["groups"]["flashinfer"]
    where = {w["name"]: w["index"] for w in group["wheels"]}
    assert where == {
        "flashinfer-python": srv.url + "/flashinfer/",
        "flashinfer-cubin": srv.url + "/flashinfer/",
        "flashinfer-jit-cache": srv.url + "/flashinfer/cu130/",
        "flashinfer-jit-cache-sm120f": srv.url + "/flashinfer/cu130/",
    }
    assert doc["chosen"]["flashinfer-jit-cache-sm120f"] == "flashinfer-jit-cache-sm120f==0.7.0+cu130"


def test_a_filename_two_indexes_list_with_other_hashes_is_judged_twice(
    flashinfer: tuple[IndexServer, dict[str, ServedFile]], wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN flashinfer's cubin page and another index listing CUBIN with other bytes, best-match
    srv, served = flashinfer
    other = srv.add_wheel(wheels["cubin_other"], prefix="other", listed=False)
    srv.add_page(
        "/other/flashinfer-cubin/",
        f'<a href="{srv.served_url(other)}#sha256={other.sha256}">{CUBIN}</a>'.encode(),
    )
    indexes = [srv.url + "/flashinfer/", srv.url + "/other/", srv.index_url]
    rc, doc = _solve(
        tmp_path, indexes, "--constraint", "flashinfer-python==0.5.3", "--index-strategy", "best-match"
    )
    # THEN both cubins are candidates, each in its own flashinfer group, and the output says which is used
    assert rc == 0
    ids = [g["id"] for g in doc["groups"]["flashinfer"]]
    mine, theirs = served[CUBIN].sha256[:12], other.sha256[:12]
    assert ids == [
        f"flashinfer-python==0.5.3 flashinfer-cubin (sha256 {mine})",
        f"flashinfer-python==0.5.3 flashinfer-cubin (sha256 {theirs})",
    ]
    (twin,) = doc["twins"]
    assert [(e["sha256"][:12], e["used"]) for e in twin["entries"]] == [(mine, True), (theirs, False)]
    assert twin["entries"][1]["reason"] == "passes too (ok); the resolver kept the one listed first"


def test_each_role_without_candidates_is_named_with_the_indexes_asked(
    flashinfer: tuple[IndexServer, dict[str, ServedFile]], sglang: tuple[IndexServer, str], tmp_path: Path
) -> None:
    # GIVEN only the sglang and flashinfer cu130 pages (no torch, no flashinfer-python on either)
    srv, _ = flashinfer
    _, sg = sglang
    fi = srv.url + "/flashinfer/cu130/"
    rc, doc = _solve(tmp_path, [sg, fi], "--constraint", "sglang-kernel==0.4.3")
    # THEN torch and flashinfer are both named as missing, with the two indexes asked
    assert rc == 1
    assert [(e["role"], e["asked"], e["listed"]) for e in doc["empty_roles"]] == [
        ("torch", [sg, fi], 0),
        ("flashinfer", [sg, fi], 0),
    ]
    assert doc["empty_roles"][1]["explanation"] == (
        f"no flashinfer candidate: no index lists flashinfer-python (asked {sg}, {fi})"
    )


def test_the_default_cu130_indexes_match_what_flashinfers_pages_serve() -> None:
    # GIVEN flashinfer's saved cu130 and top-level project lists
    from support.saved_pages import PAGES

    from abiprobe.commands.solve import CUDA_INDEXES

    cu130 = (PAGES / "flashinfer/cu130/index.html").read_text()
    top = (PAGES / "flashinfer/index.html").read_text()
    # THEN cu130/ has the jit-cache shim and providers but not flashinfer-python or -cubin; the top level has
    assert 'href="flashinfer-jit-cache-sm120f/"' in cu130
    assert "flashinfer-python" not in cu130 and "flashinfer-cubin" not in cu130
    assert 'href="flashinfer-python/"' in top and 'href="flashinfer-cubin/"' in top
    # AND the default list asks flashinfer's cu130 page, then its top level
    urls = [u.format(tag="cu130") for u in CUDA_INDEXES]
    assert urls[-2:] == ["https://flashinfer.ai/whl/cu130", "https://flashinfer.ai/whl/"]


def test_every_saved_wheel_page_parses_and_its_twins_are_flagged() -> None:
    # GIVEN each saved project page; WHEN parsed as the client parses it
    from support.saved_pages import PAGES

    from abiprobe.index.pep503 import parse_html_page
    from abiprobe.model.candidate import candidates_from_files

    twins = {}
    for page in sorted(PAGES.glob("*/**/index.html")):
        project = page.parent.name
        if project in ("cu130", "flashinfer", "sglang"):
            continue
        parsed = parse_html_page(page.read_bytes(), f"https://example.invalid/{project}/", project=project)
        candidates, skipped = candidates_from_files(parsed.files, project)
        # THEN every link is a wheel of the project, with its sha256 and its version
        assert skipped == () and len(candidates) == len(parsed.files) > 0, page
        assert all(c.file.sha256 for c in candidates), page
        twins[project] = sorted({c.file.filename for c in candidates if c.file.duplicate})
    # AND exactly the filenames listed twice with other hashes are flagged
    assert twins["sglang-kernel"] == [
        "sglang_kernel-0.4.3+cu130-cp310-abi3-manylinux2014_aarch64.whl",
        "sglang_kernel-0.4.3+cu130-cp310-abi3-manylinux2014_x86_64.whl",
    ]
    assert len(twins["sgl-kernel"]) == 9
    assert all(not v for k, v in twins.items() if k not in ("sglang-kernel", "sgl-kernel"))


def test_index_ls_notes_a_filename_two_indexes_list_with_other_hashes(
    flashinfer: tuple[IndexServer, dict[str, ServedFile]],
    wheels: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN flashinfer's cubin page and another index listing CUBIN with other bytes, best-match
    srv, served = flashinfer
    other = srv.add_wheel(wheels["cubin_other"], prefix="other", listed=False)
    srv.add_page(
        "/other/flashinfer-cubin/",
        f'<a href="{srv.served_url(other)}#sha256={other.sha256}">{CUBIN}</a>'.encode(),
    )
    argv = ["index", "ls", "flashinfer-cubin", "--no-cache", "--json", "--strategy", "best-match"]
    assert main([*argv, "--index", srv.url + "/flashinfer/", "--index", srv.url + "/other/"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    # THEN the listing says so (each is a candidate) and flags both files
    (note,) = [n for n in notes if n.startswith(CUBIN)]
    assert served[CUBIN].sha256[:12] in note and other.sha256[:12] in note
    assert note.endswith("(both are candidates)")


DEAD = "http://127.0.0.1:9"  # nothing listens on the discard port: every connection is refused


def test_an_incomplete_answer_names_every_unread_wheel_by_host_in_one_line_even_under_qq(
    wheels: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the real sglang and flashinfer cu130 pages whose wheels sit on a host that does not answer
    with IndexServer() as srv:
        for key in ("torch_29", "runtime", "tinydep_2.0", "tinyextra", "tinyfast"):
            srv.add_wheel(wheels[key])
        pages = (
            "sglang/cu130/sglang-kernel/index.html",
            "flashinfer/flashinfer-python/index.html",
            "flashinfer/flashinfer-cubin/index.html",
            "flashinfer/cu130/flashinfer-jit-cache/index.html",
            "flashinfer/cu130/flashinfer-jit-cache-sm120f/index.html",
            "flashinfer/cu130/flashinfer-jit-cache-sm90a/index.html",
        )
        for page in pages:
            at = "/" + page.removesuffix("index.html").replace("sglang/", "sg/")
            serve_saved(srv, page, at, {}, dead=DEAD)
        indexes = [srv.url + "/sg/cu130/", srv.url + "/flashinfer/cu130/", srv.url + "/flashinfer/"]
        # WHEN solve runs with -qq
        rc, doc = _solve(tmp_path, [*indexes, srv.index_url], "-qq")
    err = capsys.readouterr().err
    # THEN it exits 3 and says so in one error line on stderr
    assert rc == 3
    (line,) = [x for x in err.splitlines() if x.startswith("abiprobe: error: ")]
    unread = sorted({p.split(": ", 1)[0] for p in doc["problems"]})
    assert len(unread) > 1
    # AND the line counts the unread wheels by host and names each, and says where the reasons are
    assert line.startswith(
        f"abiprobe: error: the answer is incomplete: {len(unread)} wheels could not be read "
        f"(127.0.0.1:9: {len(unread)}: "
    )
    assert all(name in line for name in unread)
    (written,) = (tmp_path / "m").glob("*.json")
    assert line.endswith(f'; reasons in "problems" and "indexes" in {written}')
