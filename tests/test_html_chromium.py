"""The HTML matrix page renders in headless Chromium with its script run and no console errors."""

from __future__ import annotations

import os
import re
import struct
import subprocess
from pathlib import Path

import pytest
from support.tools import system_tool
from test_matrix_render import sample_document

from abiprobe.report.matrix_html import MEANINGS, render_html

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


def _dump(chromium: str, tmp: Path, url: str) -> str:
    cmd = [chromium, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--dump-dom", url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _cells(dom: str) -> list[str]:
    """Each grid cell's element text as Chromium serialised it, in document order."""
    return re.findall(r'<td class="cell[^"]*"[^>]*>.*?</td>', dom, flags=re.S)


def test_the_chosen_cell_alone_carries_the_chosen_mark(rendered: tuple[str, str]) -> None:
    # GIVEN the sample matrix (one ok, chosen set; one failing set) rendered by a real browser
    cells = _cells(rendered[0])
    # THEN exactly the chosen cell shows the mark, and the page says which set to use
    assert [("★ chosen" in c) for c in cells] == [True, False]
    assert "Use this set" in rendered[0] and "<code>torch==2.9.0</code>" in rendered[0]


def test_the_legend_names_every_status_and_what_it_means(rendered: tuple[str, str]) -> None:
    legend = rendered[0].split('<table class="legend">', 1)[1].split("</table>", 1)[0]
    for status, meaning in MEANINGS.items():
        assert f'<td class="{status}">{status}</td><td>{meaning}</td>' in legend


def test_each_cell_shows_its_first_reason_and_holds_the_whole_text(rendered: tuple[str, str]) -> None:
    ok_cell, failing = _cells(rendered[0])
    assert '<small class="reason">loads and passes every check</small>' in ok_cell
    # THEN the failing cell's reason is the symbols verdict, shortened in the cell, whole in its tooltip
    shown = re.search(r'<small class="reason">(.*?)</small>', failing, flags=re.S)
    assert shown is not None and shown.group(1).startswith("symbols (sglang-kernel==0.4.0): undefined")
    whole = "symbols (sglang-kernel==0.4.0): undefined symbol: &lt;c10::SetDevice(signed char)&gt; &amp; co"
    assert f'title="{whole}"' in failing


def test_clicking_a_cell_shows_its_verdicts(tmp_path: Path) -> None:
    # GIVEN the page opened at the failing cell (the page's script clicks the cell the address names)
    chromium = need_chromium()
    page = tmp_path / "matrix.html"
    page.write_text(render_html(sample_document()), encoding="utf-8")
    dom = _dump(chromium, tmp_path, page.as_uri() + "#cell=torch%3D%3D2.8.0%7Csglang-kernel%3D%3D0.4.0")
    details = dom.split('<div id="details">', 1)[1].split("</div>", 1)[0]
    # THEN the details box holds the set and the failing verdict in full, not the placeholder
    assert details.startswith("torch==2.8.0 + sglang-kernel==0.4.0 + flashinfer-python==0.5.3: fail")
    assert "[fail] symbols sglang-kernel==0.4.0: undefined symbol: &lt;c10::SetDevice(signed" in details


def test_the_page_renders_to_a_screenshot(tmp_path: Path) -> None:
    # GIVEN the rendered page; WHEN Chromium draws it; THEN a PNG of the asked size comes out
    chromium = need_chromium()
    page = tmp_path / "matrix.html"
    page.write_text(render_html(sample_document()), encoding="utf-8")
    shot = Path(os.environ.get("ABIPROBE_SCREENSHOT", tmp_path / "matrix.png"))
    cmd = [chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,800",
           f"--screenshot={shot}", page.as_uri()]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (1200, 800)
