"""Simple-API page parsing over pages shaped like the real indexes abiprobe reads."""
# ruff: noqa: E501  (sample pages keep the real indexes' one-anchor-per-line layout)

from __future__ import annotations

import json
import re

import pytest
from packaging.tags import Tag
from packaging.version import Version

from abiprobe.errors import FetchError
from abiprobe.index.pep503 import parse_html_page
from abiprobe.index.pep691 import parse_json_page
from abiprobe.model.candidate import candidates_from_files

H1, H2, M1 = "a" * 64, "b" * 64, "c" * 64

TORCH_PAGE = f"""<!DOCTYPE html>
<html>
  <body>
    <h1>Links for torch</h1>
    <a href="/whl/cu130/torch-2.9.1%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl#sha256={H1}"
       data-dist-info-metadata="sha256={M1}">torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
    <a href="https://download-r2.pytorch.org/whl/cu130/torch-2.9.1%2Bcu130-cp313-cp313-manylinux_2_28_aarch64.whl#sha256={H2}"
       data-requires-python="&gt;=3.10" data-core-metadata="true">torch-2.9.1+cu130-cp313-cp313-manylinux_2_28_aarch64.whl</a><br/>
  </body>
</html>
""".encode()

SGLANG_PAGE = f"""<html><body><h1>sgl-kernel</h1>
<a href="https://github.com/sgl-project/whl/releases/download/v0.3.21/sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl#sha256={H1}">sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl</a><br>
<a href="https://github.com/sgl-project/whl/releases/download/v0.3.21/sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl#sha256={H2}">sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl</a><br>
<a href="https://github.com/sgl-project/whl/releases/download/v0.3.20/sgl_kernel-0.3.20+cu130-cp310-abi3-manylinux2014_x86_64.whl#sha256={H1}">sgl_kernel-0.3.20+cu130-cp310-abi3-manylinux2014_x86_64.whl</a><br>
</body></html>
""".encode()

FLASHINFER_PAGE = b"""<!DOCTYPE html><html><body>
<a href="https://github.com/flashinfer-ai/flashinfer/releases/download/v0.5.3/flashinfer_jit_cache-0.5.3+cu130-cp39-abi3-manylinux_2_28_x86_64.whl">flashinfer_jit_cache-0.5.3+cu130-cp39-abi3-manylinux_2_28_x86_64.whl</a>
</body></html>
"""

PAGE_URL = "https://download.pytorch.org/whl/cu130/torch/"


def test_pytorch_page_unquotes_plus_and_resolves_absolute_path_hrefs() -> None:
    # GIVEN a PyTorch-style page with %2B in hrefs  WHEN parsed
    page = parse_html_page(TORCH_PAGE, PAGE_URL, index_url="https://download.pytorch.org/whl/cu130/")
    # THEN filenames carry a literal + and relative hrefs resolve against the page's host
    first = page.files[0]
    assert first.filename == "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert (
        first.url
        == "https://download.pytorch.org/whl/cu130/torch-2.9.1%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl"
    )
    assert first.hashes == {"sha256": H1}
    assert first.index_url == "https://download.pytorch.org/whl/cu130/"


def test_pytorch_page_reads_dist_info_metadata_hash() -> None:
    page = parse_html_page(TORCH_PAGE, PAGE_URL)
    assert page.files[0].core_metadata == {"sha256": M1}
    assert page.files[0].metadata_url == page.files[0].url + ".metadata"


def test_core_metadata_true_and_requires_python_are_unescaped() -> None:
    page = parse_html_page(TORCH_PAGE, PAGE_URL)
    second = page.files[1]
    assert second.core_metadata is True
    assert second.requires_python == ">=3.10"
    assert second.url.startswith("https://download-r2.pytorch.org/")


def test_pytorch_candidates_carry_local_label_and_tags() -> None:
    page = parse_html_page(TORCH_PAGE, PAGE_URL)
    candidates, notes = candidates_from_files(page.files, "torch")
    assert notes == ()
    assert [c.version for c in candidates] == [Version("2.9.1+cu130")] * 2
    assert candidates[0].local_label == "cu130"
    assert candidates[0].tags == frozenset({Tag("cp312", "cp312", "manylinux_2_28_x86_64")})


def test_sglang_duplicate_filenames_are_kept_and_flagged() -> None:
    # GIVEN a page listing one filename twice with different hashes
    page = parse_html_page(SGLANG_PAGE, "https://docs.sglang.ai/whl/cu130/sgl-kernel/")
    # THEN both entries stay, both are flagged, and a note says so
    assert [(f.filename.split("-")[1], f.sha256, f.duplicate) for f in page.files] == [
        ("0.3.21+cu130", H1, True),
        ("0.3.21+cu130", H2, True),
        ("0.3.20+cu130", H1, False),
    ]
    assert page.notes == (
        "sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl is listed more than once with different hashes",
    )


def test_sglang_literal_plus_url_is_kept() -> None:
    page = parse_html_page(SGLANG_PAGE, "https://docs.sglang.ai/whl/cu130/sgl-kernel/")
    assert page.files[0].url.endswith("/v0.3.21/sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl")


def test_sglang_candidates_match_renamed_project_by_normalized_name() -> None:
    page = parse_html_page(SGLANG_PAGE, "https://docs.sglang.ai/whl/cu130/sgl-kernel/")
    candidates, _ = candidates_from_files(page.files, "sgl_kernel")
    assert {str(c.version) for c in candidates} == {"0.3.21+cu130", "0.3.20+cu130"}
    assert candidates_from_files(page.files, "sglang-kernel")[0] == ()


def test_flashinfer_page_without_hash_has_empty_hashes() -> None:
    page = parse_html_page(FLASHINFER_PAGE, "https://flashinfer.ai/whl/cu130/flashinfer-jit-cache/")
    (only,) = page.files
    assert only.hashes == {}
    assert only.sha256 is None
    assert only.core_metadata is False


def test_base_tag_changes_where_relative_hrefs_resolve() -> None:
    body = b'<html><head><base href="https://mirror.example/pkgs/"></head><body><a href="x-1.0-py3-none-any.whl">x-1.0-py3-none-any.whl</a></body></html>'
    page = parse_html_page(body, "https://index.example/simple/x/")
    assert page.files[0].url == "https://mirror.example/pkgs/x-1.0-py3-none-any.whl"


def test_yanked_without_and_with_reason() -> None:
    body = (
        b'<a href="x-1.0-py3-none-any.whl" data-yanked>x-1.0-py3-none-any.whl</a>'
        b'<a href="x-1.1-py3-none-any.whl" data-yanked="broken &amp; bad">x-1.1-py3-none-any.whl</a>'
        b'<a href="x-1.2-py3-none-any.whl">x-1.2-py3-none-any.whl</a>'
    )
    page = parse_html_page(body, "https://index.example/simple/x/")
    assert [f.yanked for f in page.files] == [True, "broken & bad", False]
    assert [f.is_yanked for f in page.files] == [True, True, False]


def test_invalid_wheel_filename_is_skipped_with_a_note() -> None:
    body = b'<a href="x-notaversion-py3-none-any.whl">x</a><a href="x-1.0-py3-none-any.whl">x</a>'
    page = parse_html_page(body, "https://index.example/simple/x/")
    candidates, notes = candidates_from_files(page.files, "x")
    assert [str(c.version) for c in candidates] == ["1.0"]
    assert len(notes) == 1 and notes[0].startswith("skipped x-notaversion-py3-none-any.whl:")


def test_build_tag_and_sdists() -> None:
    body = b'<a href="x-1.0-2b-py3-none-any.whl">a</a><a href="x-1.0.tar.gz">b</a><a href="../">up</a>'
    page = parse_html_page(body, "https://index.example/simple/x/")
    assert [f.filename for f in page.files] == ["x-1.0-2b-py3-none-any.whl", "x-1.0.tar.gz"]
    (candidate,) = candidates_from_files(page.files, "x")[0]
    assert candidate.build_tag == (2, "b")


def test_find_links_page_lists_many_projects_and_is_filtered_per_project() -> None:
    body = b"""<a href="wheels/a_pkg-1.0-py3-none-any.whl">a_pkg-1.0-py3-none-any.whl</a>
    <a href="wheels/b_pkg-2.0-cp312-cp312-linux_x86_64.whl">b_pkg-2.0-cp312-cp312-linux_x86_64.whl</a>"""
    page = parse_html_page(body, "https://host.example/links/")
    assert len(page.files) == 2
    (b,) = candidates_from_files(page.files, "B-Pkg")[0]
    assert b.file.url == "https://host.example/links/wheels/b_pkg-2.0-cp312-cp312-linux_x86_64.whl"


JSON_PAGE = {
    "meta": {"api-version": "1.1"},
    "name": "sglang-kernel",
    "versions": ["0.4.0"],
    "files": [
        {
            "filename": "sglang_kernel-0.4.0-cp310-abi3-manylinux2014_x86_64.whl",
            "url": "../../packages/ab/sglang_kernel-0.4.0-cp310-abi3-manylinux2014_x86_64.whl",
            "hashes": {"sha256": H1.upper()},
            "requires-python": ">=3.10",
            "core-metadata": {"sha256": M1},
            "size": 123456,
            "upload-time": "2026-01-02T03:04:05.678901Z",
            "yanked": False,
        },
        {
            "filename": "sglang_kernel-0.3.99-cp310-abi3-manylinux2014_x86_64.whl",
            "url": "https://files.example/sglang_kernel-0.3.99-cp310-abi3-manylinux2014_x86_64.whl",
            "hashes": {"sha256": H2},
            "dist-info-metadata": True,
            "yanked": "wrong CUDA build",
        },
    ],
}


def test_json_page_reads_pep700_fields_and_resolves_relative_urls() -> None:
    # GIVEN a PEP 691 page (api 1.1)  WHEN parsed
    page = parse_json_page(json.dumps(JSON_PAGE).encode(), "https://index.example/simple/sglang-kernel/")
    first = page.files[0]
    # THEN relative URLs resolve, hashes are lower-cased, size and upload-time are kept
    assert (
        first.url
        == "https://index.example/packages/ab/sglang_kernel-0.4.0-cp310-abi3-manylinux2014_x86_64.whl"
    )
    assert first.hashes == {"sha256": H1}
    assert (first.size, first.upload_time) == (123456, "2026-01-02T03:04:05.678901Z")
    assert first.core_metadata == {"sha256": M1}
    assert first.yanked is False
    assert page.project == "sglang-kernel"


def test_json_page_reads_yank_reason_and_legacy_metadata_key() -> None:
    page = parse_json_page(json.dumps(JSON_PAGE).encode(), "https://index.example/simple/sglang-kernel/")
    second = page.files[1]
    assert second.yanked == "wrong CUDA build"
    assert second.core_metadata is True
    assert second.size is None


@pytest.mark.parametrize("body", [b"{not json", b'{"files": 3}', b"[]", b"\xff\xfe"])
def test_broken_json_page_is_one_index_error(body: bytes) -> None:
    with pytest.raises(FetchError, match=re.escape("https://index.example/simple/x/")):
        parse_json_page(body, "https://index.example/simple/x/")
