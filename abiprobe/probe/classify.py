"""Turn what a probe child reported (exception text, exit status) into one failure class. Pure."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from abiprobe.model.cxxnames import demangle

Outcome = Literal[
    "ok",
    "missing_soname",
    "undefined_symbol",
    "symbol_version",
    "loader_error",
    "python_exception",
    "crash",
    "timeout",
    "install_failed",
    "no_kernel_image",
]
OUTCOMES: tuple[str, ...] = get_args(Outcome)

_MISSING = re.compile(r"(?P<soname>[^\s:]+): cannot open shared object file")
_UNDEFINED = re.compile(r"(?:(?P<file>[^\s:]+): )?undefined symbol: (?P<symbol>[^\s,;'\"]+)")
_VERSION = re.compile(r"version [`'](?P<version>[^'`]+)' not found \(required by (?P<file>[^)]+)\)")
_VERSION_OWNER = re.compile(r"(?P<owner>[^\s:]+): version [`']")
_LOADER = re.compile(
    r"(invalid ELF header|wrong ELF class|file too short|cannot enable executable stack|"
    r"ELF load command|cannot allocate memory in static TLS block|only ET_DYN and ET_EXEC)"
)
_NO_KERNEL = re.compile(r"no kernel image is available for execution on the device")


@dataclass(frozen=True)
class Failure:
    """One classified outcome: its class, a one-line message, and machine-readable details."""

    outcome: Outcome
    message: str
    detail: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


def classify_message(message: str, exc_type: str = "", last_frame: str = "") -> Failure:
    """Classify an exception's text as the loader's words or a plain Python exception."""
    first = message.strip().splitlines()[0] if message.strip() else exc_type
    if m := _MISSING.search(message):
        return Failure("missing_soname", first, {"soname": m.group("soname")})
    if m := _VERSION.search(message):
        detail = {"version": m.group("version"), "required_by": m.group("file").strip()}
        if owner := _VERSION_OWNER.search(message):
            detail["provider"] = owner.group("owner")
        return Failure("symbol_version", first, detail)
    if m := _UNDEFINED.search(message):
        symbol = m.group("symbol")
        demangled = demangle(symbol)
        detail = {"symbol": symbol, "demangled": demangled}
        if m.group("file"):
            detail["file"] = m.group("file")
        shown = first if demangled == symbol else f"{first} ({demangled})"
        return Failure("undefined_symbol", shown, detail)
    if _LOADER.search(message):
        return Failure("loader_error", first, {})
    if _NO_KERNEL.search(message):
        return Failure("no_kernel_image", first, {})
    text = f"{exc_type}: {first}" if exc_type else first
    return Failure("python_exception", text, {"exc_type": exc_type, "last_frame": last_frame})


def classify_exit(returncode: int | None, timed_out: bool, stderr_tail: str = "") -> Failure | None:
    """A death by signal or a timeout, or None when the child exited on its own."""
    if timed_out:
        return Failure("timeout", "timed out", {})
    if returncode is not None and returncode < 0:
        return crash(-returncode, stderr_tail)
    return None


def crash(signum: int, stderr_tail: str = "") -> Failure:
    """A child killed by ``signum`` (SIGSEGV, SIGABRT ...)."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    detail: dict[str, Any] = {"signal": signum, "signal_name": name}
    frame = _fault_frame(stderr_tail)
    if frame:
        detail["last_frame"] = frame
    return Failure("crash", f"killed by {name}", detail)


def _fault_frame(stderr_tail: str) -> str:
    """The innermost Python frame faulthandler printed (``File "x", line N in f``), if any."""
    for line in stderr_tail.splitlines():
        s = line.strip()
        if s.startswith("File ") and " line " in s and "<frozen " not in s:
            return s
    return ""


def classify_report(report: dict[str, Any]) -> Failure:
    """Classify the runner's JSON for one candidate (status ``ok`` / ``exception`` / ``importing``)."""
    status = report.get("status")
    if status == "ok":
        return Failure("ok", "imported", {})
    if status == "exception":
        failure = classify_message(
            str(report.get("message", "")), str(report.get("exc_type", "")), str(report.get("last_frame", ""))
        )
        return Failure(failure.outcome, failure.message, {**failure.detail, "module": report.get("module")})
    return Failure("crash", "runner stopped without a result", {"module": report.get("module")})
