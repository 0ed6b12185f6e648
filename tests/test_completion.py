"""``abiprobe completion``: scripts made from the parser; the bash one asked for completions in bash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.tools import system_tool

from abiprobe.cli import main

ASK = """
source "$1"
read -ra COMP_WORDS <<< "$2"
[[ "$2" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMPREPLY=()
_abiprobe
printf '%s\\n' "${COMPREPLY[@]}"
"""


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    system_tool("bash", hint="apt-get install -y bash")
    out = tmp_path_factory.mktemp("completion") / "abiprobe.bash"
    proc = subprocess.run(
        [sys.executable, "-m", "abiprobe", "completion", "bash"], capture_output=True, text=True, check=True
    )
    out.write_text(proc.stdout)
    return out


def _complete(script: Path, line: str) -> list[str]:
    """What bash offers for ``line`` (its last word the one being completed)."""
    proc = subprocess.run(["bash", "-c", ASK, "ask", str(script), line], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_completes_a_command_name(bash_script: Path) -> None:
    # WHEN bash is asked to complete `abiprobe so`; THEN it offers solve alone
    assert _complete(bash_script, "abiprobe so") == ["solve"]


def test_bash_completes_an_option_of_the_command_on_the_line(bash_script: Path) -> None:
    # WHEN bash is asked to complete `abiprobe solve --cu`; THEN it offers --cuda
    assert _complete(bash_script, "abiprobe solve --cu") == ["--cuda"]


def test_bash_completes_a_nested_commands_options_and_leaves_hidden_aliases_out(bash_script: Path) -> None:
    # WHEN bash completes `abiprobe index ls --ind`
    offered = _complete(bash_script, "abiprobe index ls --ind")
    # THEN it offers the shared index options, not the old --index-url spelling
    assert offered == ["--index", "--index-strategy"]


def test_bash_completes_the_values_of_an_option_with_choices(bash_script: Path) -> None:
    # WHEN bash completes the word after `abiprobe matrix show FILE --format`
    assert _complete(bash_script, "abiprobe matrix show m.json --format ") == ["table", "md", "html", "json"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_name_every_command(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN the zsh or fish script is printed
    assert main(["completion", shell]) == 0
    text = capsys.readouterr().out
    # THEN it offers each command and their options
    for word in ("solve", "restore-plan", "completion", "cuda", "index-strategy"):
        assert word in text
