"""Prove what static analysis predicts: install an exact wheel set in a throwaway venv and import it."""

from __future__ import annotations

from abiprobe.probe.classify import OUTCOMES, Failure, Outcome, classify_message
from abiprobe.probe.interpreters import Interpreter, InterpreterNotFoundError, find_interpreter
from abiprobe.probe.model import PROBE_SCHEMA_VERSION, ProbeOptions, ProbeResult, ProbeSet
from abiprobe.probe.parallel import probe_sets
from abiprobe.probe.venv import InstallError

__all__ = [
    "OUTCOMES",
    "PROBE_SCHEMA_VERSION",
    "Failure",
    "InstallError",
    "Interpreter",
    "InterpreterNotFoundError",
    "Outcome",
    "ProbeOptions",
    "ProbeResult",
    "ProbeSet",
    "classify_message",
    "find_interpreter",
    "probe_sets",
]
