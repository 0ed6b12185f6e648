"""Command-line entry: subcommands live in ``abiprobe.commands.<name>``, each with ``register``."""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
from collections.abc import Sequence

from abiprobe import __version__
from abiprobe.errors import AbiprobeError
from abiprobe.log import set_verbosity
from abiprobe.ui.cli_help import HelpFormatter, add_verbosity, decorate
from abiprobe.ui.interrupt import handled as signals_stop_the_run

# Order is the order `abiprobe --help` lists them in.
COMMANDS = (
    "solve", "inspect", "check", "diff", "probe", "index", "config", "cache", "matrix", "report", "snapshot",
    "restore_plan", "completion",
)  # fmt: skip


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``only`` (a command name) just that command's part is imported and built,
    which keeps start-up cheap (every command module pulls in its own dependencies)."""
    parser = argparse.ArgumentParser(
        prog="abiprobe",
        description="Which torch / sgl-kernel / flashinfer wheels load and run on a CUDA version and GPU.",
        formatter_class=HelpFormatter,
        epilog="`abiprobe COMMAND --help` gives each command's options, an example and its exit codes.",
    )
    parser.add_argument("--version", action="version", version=f"abiprobe {__version__}")
    add_verbosity(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name.replace("_", "-") != only:
            continue
        try:
            module = importlib.import_module(f"abiprobe.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"abiprobe.commands.{name}":
                continue
            raise
        module.register(sub)
    decorate(parser)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs when its first word is one (options before it mean: build everything)."""
    names = {n.replace("_", "-") for n in COMMANDS}
    return argv[0] if argv and argv[0] in names else None


def _asks_version(words: Sequence[str]) -> bool:
    """``--version`` before any command word: answered without building the parser (no command imported)."""
    for word in words:
        if word == "--version":
            return True
        if not word.startswith("-") or word == "--":
            return False
    return False


# errors of this machine that no input causes, said in one line (errno names them)
_MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES,
                             errno.EPERM, errno.EMFILE, errno.ENFILE, errno.EIO})  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if _asks_version(words):
        print(f"abiprobe {__version__}")
        return 0
    parser = build_parser(_command_named(words))
    args = parser.parse_args(words)
    set_verbosity(int(getattr(args, "verbose", 0) or 0) - int(getattr(args, "quiet", 0) or 0))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with signals_stop_the_run():
            return int(args.func(args) or 0)
    except AbiprobeError as exc:
        print(f"abiprobe: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("abiprobe: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except OSError as exc:
        if exc.errno not in _MACHINE_ERRNOS:
            raise
        # the machine, not the input: a full disk, a read-only or forbidden folder, too many open files
        where = f": {exc.filename}" if exc.filename else ""
        print(f"abiprobe: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 74  # EX_IOERR


if __name__ == "__main__":
    sys.exit(main())
