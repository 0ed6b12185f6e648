"""What start-up imports: `--version` answers before any command, HTTP client or console is imported, and
reading the installer configuration never imports pip's configuration machinery."""

from __future__ import annotations

import json
import subprocess
import sys

import abiprobe


def _modules_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code`` (which prints nothing)."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_version_is_answered_without_importing_any_command() -> None:
    # WHEN `abiprobe --version` runs (after a verbosity flag, as people type it)
    done = subprocess.run(
        [sys.executable, "-m", "abiprobe", "-v", "--version"], capture_output=True, text=True, check=False
    )
    quiet = "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()): main(['--version'])"
    loaded = _modules_after(f"from abiprobe.cli import main\n{quiet}")
    # THEN it prints the version, and no command module, HTTP client, console or pip was imported
    assert (done.returncode, done.stdout) == (0, f"abiprobe {abiprobe.__version__}\n")
    heavy = [m for m in loaded if m.startswith(("abiprobe.commands", "httpx", "rich", "pip", "resolvelib"))]
    assert heavy == []


def test_reading_the_index_configuration_imports_no_pip_configuration() -> None:
    # GIVEN pip and uv configured by variables (the default index from pip's own models, a small module)
    code = (
        "import os\nos.environ['PIP_EXTRA_INDEX_URL'] = 'https://extra.example/simple/'\n"
        "os.environ.pop('PIP_CONFIG_FILE', None)\n"
        "from abiprobe.index.config import load_index_config\nload_index_config()"
    )
    # WHEN abiprobe reads its index configuration; THEN pip's configuration module was not imported
    loaded = _modules_after(code)
    assert "pip._internal.configuration" not in loaded
