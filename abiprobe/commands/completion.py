"""``abiprobe completion bash|zsh|fish``: a completion script made from the parser itself."""

from __future__ import annotations

import argparse
import sys

from abiprobe.ui.completion import SHELLS

EPILOG = """\
example:
  abiprobe completion bash > ~/.local/share/bash-completion/completions/abiprobe
  eval "$(abiprobe completion bash)"            # or this in ~/.bashrc
  eval "$(abiprobe completion zsh)"             # in ~/.zshrc
  abiprobe completion fish > ~/.config/fish/completions/abiprobe.fish

exit codes: 0 printed; 2 usage."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description="A completion script for the commands and options of this abiprobe, on stdout.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shell", choices=sorted(SHELLS), help="the shell the script is for")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from abiprobe.cli import build_parser  # the whole parser: every command's options

    sys.stdout.write(SHELLS[args.shell](build_parser()))
    return 0
