"""What every command's ``--help`` ends with: defaults after each option, an example and the exit codes.

Kept in one table so the commands keep their modules for what they do; ``cli.build_parser`` applies it.
"""

from __future__ import annotations

import argparse

# command path -> (example, exit codes); a command whose own epilog states exit codes keeps it.
HELP: dict[str, tuple[str, str]] = {
    "solve": (
        "abiprobe solve --cuda 13.0 --arch sm120 --python 3.12 --platform manylinux_2_28_x86_64",
        "0 a set was found; 1 no set passes; 2 usage; 3 an index could not be read (the answer may be "
        "incomplete: the output says which)",
    ),
    "inspect": (
        "abiprobe inspect torch==2.9.0 --arch sm120",
        "0 read; 1 something could not be read (the output says what); 2 usage; 3 an index could not be "
        "read, or --offline and the cache lacks the wheel",
    ),
    "check": ("abiprobe check torch==2.9.0 sglang-kernel==0.4.0 --arch sm120", ""),
    "diff": ("abiprobe diff torch==2.8.0 torch==2.9.0", ""),
    "probe": (
        "abiprobe probe torch==2.9.0 sglang-kernel==0.4.0",
        "0 every set imported and agreed with the static verdict; 1 some did not; 2 usage; "
        "3 an index could not be read",
    ),
    "index": ("abiprobe index ls sglang-kernel", "2 no action given (see the actions)"),
    "index ls": (
        "abiprobe index ls sglang-kernel --json",
        "0 listed; 1 no index has the project; 2 usage; 3 an index could not be read and no other listed it",
    ),
    "config": ("abiprobe config --cuda 13.0", ""),
    "cache": ("abiprobe cache info", "2 no action given (see the actions)"),
    "cache info": ("abiprobe cache info --json", "0; 2 usage"),
    "cache prune": ("abiprobe cache prune --older-than 30", "0; 2 usage"),
    "cache publish": (
        "abiprobe cache publish site/ --cache-dir wheel_index_cache",
        "0 written; 2 usage (no cache there, or the tree cannot be written)",
    ),
    "cache verify": (
        "abiprobe cache verify --repair",
        "0 every entry intact (or repaired); 1 damaged entries; 2 usage",
    ),
    "matrix": (
        "abiprobe matrix show matrices/cu130-sm120-cp312-manylinux_2_28_x86_64.json",
        "2 no action given",
    ),
    "matrix show": (
        "abiprobe matrix show matrices/cu130-sm120-cp312-manylinux_2_28_x86_64.json --format md",
        "0; 2 the file is not a matrix abiprobe reads",
    ),
    "matrix diff": (
        "abiprobe matrix diff old.json matrices/cu130-sm120-cp312-manylinux_2_28_x86_64.json --format md",
        "0 no verdict flipped; 4 some flipped; 12 (4|8) some went from ok to fail; 2 usage",
    ),
    "matrix merge": (
        "abiprobe matrix merge matrices/cu130-sm120-cp312-manylinux_2_28_x86_64.json results/*.json "
        "--out-dir merged",
        "0 merged; 1 a result matched no cell; 2 usage",
    ),
    "report": (
        "abiprobe report --snapshot before.json "
        "--matrix matrices/cu130-sm120-cp312-manylinux_2_28_x86_64.json -o ticket.md",
        "0 written; 2 usage or an unreadable input",
    ),
    "snapshot": ("abiprobe snapshot -o before.json", "0 written; 2 usage"),
    "restore-plan": (
        "abiprobe restore-plan before.json --installer uv",
        "0; with --verify PYTHON, 1 when that environment differs from the snapshot; 2 usage",
    ),
}

VERBOSITY_EPILOG = "-q fewer messages (-qq: no warnings), -v one line per HTTP request"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Epilogs kept as written; each option's default shown when it has a meaningful one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default" in text.lower()
            or default in (None, False, True, [], "", argparse.SUPPRESS)
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def add_verbosity(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    default: object = 0 if top else argparse.SUPPRESS
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="count", default=default, help="say less (-qq: no warnings)")
    group.add_argument("-v", "--verbose", action="count", default=default, help="log every HTTP request")


def decorate(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Help formatter, example, exit codes and -q / -v on ``parser`` and every subcommand below it."""
    for name, child in subparsers(parser).items():
        child_path = f"{path} {name}".strip()
        child.formatter_class = HelpFormatter
        example, codes = HELP.get(child_path, ("", ""))
        lines = [child.epilog] if child.epilog else []
        if example and "example" not in (child.epilog or ""):
            lines.append(f"example:\n  {example}")
        if codes and "exit" not in (child.epilog or ""):
            lines.append(f"exit codes: {codes}")
        child.epilog = "\n\n".join(lines) or None
        add_verbosity(child)
        decorate(child, child_path)
