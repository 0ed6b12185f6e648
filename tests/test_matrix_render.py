"""Matrix renderers: JSON (schema-valid), Markdown for tickets, self-contained HTML; and ``matrix show``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from abiprobe.cli import main
from abiprobe.model.candidate import IndexFile, candidates_from_files
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import Verdict
from abiprobe.report.matrix_html import render_html
from abiprobe.report.matrix_json import dumps, matrix_document, matrix_schema
from abiprobe.report.matrix_md import render_markdown
from abiprobe.solve.candidates import StackCandidate
from abiprobe.solve.matrix import Group, MatrixBuilder
from abiprobe.solve.resolver import Resolution
from abiprobe.solve.result import IndexStatus, SolveResult

TARGET = Target.parse(cuda="13.0", arch="sm120", platform="manylinux_2_28_x86_64", base=Target())


def group(role: str, filename: str) -> Group:
    sha = hashlib.sha256(filename.encode()).hexdigest()
    f = IndexFile(filename=filename, url=f"http://x/{filename}", hashes={"sha256": sha})
    return Group(role, StackCandidate(role, candidates_from_files([f])[0][0], 0))


class TableEvaluator:
    """Fails one named pair with a symbols verdict whose text needs escaping; everything else passes."""

    def base(self, base: Group) -> Sequence[Verdict]:
        return [Verdict("sonames", "ok", "all found", base.id)]

    def pair(self, base: Group, member: Group) -> Sequence[Verdict]:
        if (base.id, member.id) == ("torch==2.8.0", "sglang-kernel==0.4.0"):
            text = "undefined symbol: <c10::SetDevice(signed char)> & co"
            return [Verdict("symbols", "fail", text, member.id)]
        return [Verdict("symbols", "ok", "all bound", member.id)]


def sample_document() -> dict[str, Any]:
    stack = default_stack()
    groups = {
        "torch": (
            group("torch", "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
            group("torch", "torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
        ),
        "kernel": (group("kernel", "sglang_kernel-0.4.0-cp310-abi3-manylinux_2_28_x86_64.whl"),),
        "flashinfer": (group("flashinfer", "flashinfer_python-0.5.3-py3-none-any.whl"),),
    }
    matrix = MatrixBuilder(stack, TARGET, TableEvaluator()).build(groups)
    chosen = {
        "torch": "torch==2.9.0",
        "kernel": "sglang-kernel==0.4.0",
        "flashinfer": "flashinfer-python==0.5.3",
    }
    result = SolveResult(matrix, Resolution(chosen), (IndexStatus("local", "http://x/simple", True),))
    return matrix_document(result)


def test_document_validates_against_the_schema() -> None:
    jsonschema.validate(sample_document(), matrix_schema())


def test_document_has_one_cell_per_row_and_column() -> None:
    doc = sample_document()
    assert [(c["row"], c["col"], c["status"]) for c in doc["cells"]] == [
        ("torch==2.9.0", "sglang-kernel==0.4.0", "ok"),
        ("torch==2.8.0", "sglang-kernel==0.4.0", "fail"),
    ]


def test_failed_cell_explains_itself_in_one_line() -> None:
    c = sample_document()["cells"][1]
    assert c["explanation"] == (
        "symbols fail: sglang-kernel==0.4.0: undefined symbol: <c10::SetDevice(signed char)> & co"
    )


def test_markdown_has_a_grid_row_per_torch_and_a_problem_line() -> None:
    md = render_markdown(sample_document())
    assert "| `torch==2.8.0` | ❌ fail +flashinfer-python==0.5.3 |" in md
    assert (
        "- **torch==2.8.0 × sglang-kernel==0.4.0** (❌ fail)\n  - fail symbols: undefined symbol: <c10::"
        in md
    )


def _many_reasons() -> dict[str, Any]:
    """The sample with a warning cell of five reasons added in front of the failing one."""
    doc = sample_document()
    ok, failing = doc["cells"]
    warned = {**ok, "status": "warn", "explanation": "tags warn: one (+4 more)", "pairs": []}
    warned["set_verdicts"] = [
        {"check": "tags", "status": "warn", "explanation": f"reason {i}", "subject": None, "evidence": {}}
        for i in range(5)
    ]
    doc["cells"] = [warned, failing]
    return doc


def test_markdown_lists_failures_first_and_every_reason_collapsed_when_long() -> None:
    md = render_markdown(_many_reasons())
    problems = md.split("### Problems", 1)[1]
    # THEN the failing cell comes before the warning one, although it comes after it in the matrix
    assert problems.index("(❌ fail)") < problems.index("(⚠️ warn)")
    # AND all five reasons of the warning cell are there, inside a collapsed block
    assert "<details><summary>5 reasons</summary>" in problems
    assert all(f"  - warn tags: reason {i}\n" in problems for i in range(5))
    assert "+4 more" not in problems


def test_html_lists_every_reason_failures_first_long_lists_collapsed() -> None:
    page = render_html(_many_reasons())
    problems = page.split("<h2>Problems</h2>", 1)[1]
    assert problems.index("<span class='fail'>fail</span> torch==2.8.0") < problems.index("reason 0")
    assert "<details class='problem'><summary><span class='warn'>warn</span>" in problems  # collapsed
    assert "<details class='problem' open>" in problems  # the failing cell's one reason, shown
    assert all(f"reason {i}</li>" in problems for i in range(5))


def test_html_is_self_contained_and_escapes_cell_text() -> None:
    page = render_html(sample_document())
    assert "<c10::" not in page
    assert "src=" not in page and "href=" not in page
    assert page.count("<td class='cell") == 2


def test_matrix_show_renders_a_saved_document_as_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.json"
    path.write_text(dumps(sample_document()))
    assert main(["matrix", "show", str(path), "--format", "md"]) == 0
    assert "| `torch==2.9.0` | ✅ ok +flashinfer-python==0.5.3 |" in capsys.readouterr().out


def test_matrix_show_refuses_a_foreign_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"kind": "something-else"}))
    assert main(["matrix", "show", str(path)]) == 2


def test_written_renderings_say_the_registry_in_words_never_its_host() -> None:
    from abiprobe.model.hosts import REGISTRY, REGISTRY_FILES, concrete
    from abiprobe.report.outputs import readable_renderings

    # GIVEN a matrix whose index line and a wheel URL name the default registry (by host, as read)
    doc = sample_document()
    doc["indexes"][0]["url"] = concrete(f"https://{REGISTRY}/simple")
    doc["indexes"][0]["error"] = concrete(f"see https://{REGISTRY_FILES}/packages/x.whl")
    # WHEN solve renders the files it writes under matrices/ (committed by the nightly)
    for text in readable_renderings(doc):
        # THEN they say "(default registry)", never the token and never a host name
        assert "https://(default registry)/simple" in text
        assert REGISTRY not in text and REGISTRY_FILES not in text
        assert concrete(REGISTRY) not in text and concrete(REGISTRY_FILES) not in text


def test_renderings_name_the_real_registry_hosts_where_the_json_keeps_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from abiprobe.model.hosts import REGISTRY, concrete

    # GIVEN a committed matrix whose index line names the default registry by its token
    doc = sample_document()
    doc["indexes"][0]["url"] = f"https://{REGISTRY}/simple"
    path = tmp_path / "m.json"
    path.write_text(dumps(doc))
    assert REGISTRY in path.read_text()
    # WHEN it is rendered for people
    for fmt in ("md", "html"):
        assert main(["matrix", "show", str(path), "--format", fmt]) == 0
        out = capsys.readouterr().out
        # THEN they read this machine's registry host, not the token
        assert concrete(f"https://{REGISTRY}/simple") in out and REGISTRY not in out


def test_matrix_show_table_has_a_status_per_cell_and_the_chosen_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a saved matrix with one ok and one failing cell, and a chosen set
    path = tmp_path / "m.json"
    path.write_text(dumps(sample_document()))
    # WHEN it is shown as a table (the default format)
    assert main(["matrix", "show", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # THEN each torch row carries its cell's status under the kernel column, and the set follows
    header = next(line for line in lines if "\\" in line)
    assert "sglang-kernel==0.4.0" in header
    assert any("torch==2.9.0" in line and " ok " in line for line in lines)
    assert any("torch==2.8.0" in line and " fail " in line for line in lines)
    assert lines[-1] == "chosen: torch==2.9.0, sglang-kernel==0.4.0, flashinfer-python==0.5.3"
