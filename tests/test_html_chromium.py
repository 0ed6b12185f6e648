"""The HTML matrix page renders in headless Chromium with its script run and no console errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.tools import system_tool
from test_matrix_render import sample_document

from abiprobe.report.matrix_html import render_html

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    chromium = need_chromium()
    tmp = tmp_path_factory.mktemp("chromium")
    page = tmp / "matrix.html"
    page.write_text(render_html(sample_document()), encoding="utf-8")
    cmd = [chromium, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def need_chromium() -> str:
    return system_tool("chromium", "chromium-browser", hint="apt-get install -y chromium")


def console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]


def test_page_script_runs_in_chromium(rendered: tuple[str, str]) -> None:
    dom, _ = rendered
    assert 'data-ready="yes"' in dom


def test_page_has_no_console_errors(rendered: tuple[str, str]) -> None:
    assert console_errors(rendered[1]) == []


def test_grid_cells_carry_their_status_colour(rendered: tuple[str, str]) -> None:
    dom, _ = rendered
    assert dom.count('class="cell ok chosen"') == 1
    assert dom.count('class="cell fail"') == 1


def test_detection_of_console_errors_works(tmp_path: Path) -> None:
    # GIVEN a page whose script throws; THEN the same stderr scan reports it (the check is not vacuous)
    chromium = need_chromium()
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    cmd = [chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert any("undefinedFunction" in ln for ln in console_errors(done.stderr))
