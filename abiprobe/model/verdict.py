"""The one verdict vocabulary shared by static analysis, probe, matrix and report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from abiprobe.model.cxxnames import render_text

Status = Literal["ok", "warn", "blocked", "system", "unknown", "fail"]
# Severity, least first. ``blocked``: the loader checks pass but a declared requirement forbids the set;
# ``system``: it loads where the target's system has a library its profile lacks, which a distribution
# package provides (evidence ``system`` names the soname and the packages);
# ``unknown``: bytes a check needs were not read, so the set may load or not (never ok, never warn);
# ``fail``: a check that was made failed, which no unread byte and no system library can undo.
STATUS_ORDER: dict[str, int] = {"ok": 0, "warn": 1, "blocked": 2, "system": 3, "unknown": 4, "fail": 5}
STATUSES: tuple[Status, ...] = ("ok", "warn", "blocked", "system", "unknown", "fail")

# Check names, in the order reports list them.
CHECKS = (
    "metadata",  # filename vs METADATA, companion versions
    "tags",  # wheel tags vs target
    "requires",  # Requires-Dist of the set
    "files",  # two wheels writing the same files / import package
    "sonames",  # DT_NEEDED resolution
    "symbols",  # undefined symbols resolution
    "symbol_versions",  # GLIBC_/GLIBCXX_/CXXABI_ versions vs target
    "driver",  # driver API symbols vs target driver
    "gpu_arch",  # fatbin contents vs target compute capability
    "probe",  # real import in a throwaway venv
    "smoke",  # kernel run on a GPU host
)


@dataclass(frozen=True)
class Verdict:
    """One check's outcome for one subject (an extension file, a wheel, or the set)."""

    check: str
    status: Status
    explanation: str  # one line, human words; C++ names mangled (``text`` shows them demangled)
    subject: str = ""  # e.g. "sgl_kernel/common_ops.abi3.so" or "sgl-kernel 0.3.21"
    evidence: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def text(self) -> str:
        """The explanation as shown: mangled C++ names in it demangled (here, at render time)."""
        return render_text(self.explanation)

    def to_json(self, *, rendered: bool = True) -> dict[str, Any]:
        """The verdict as output (explanation rendered), or as stored (``rendered=False``: the same on
        every host, mangled names kept)."""
        return {
            "check": self.check,
            "status": self.status,
            "explanation": self.text if rendered else self.explanation,
            "subject": self.subject,
            "evidence": _canonical(self.evidence),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        return cls(
            check=data["check"],
            status=data["status"],
            explanation=data["explanation"],
            subject=data.get("subject", ""),
            evidence=dict(data.get("evidence", {})),
        )


def _canonical(value: Any) -> Any:
    """``value`` with every mapping's keys in sorted order, as the store writes them: a verdict read back
    from the store and one made fresh are then the same output, byte for byte."""
    if isinstance(value, dict):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def worst(statuses: Iterable[str]) -> Status:
    """The most severe status of several (fail > unknown > system > blocked > warn > ok); ok for none."""
    result: Status = "ok"
    for s in statuses:
        if STATUS_ORDER[s] > STATUS_ORDER[result]:
            result = s  # type: ignore[assignment]
    return result


# Checks that read a wheel's bytes (its METADATA, file list, ELF objects, GPU code): a wheel that could
# not be read leaves each of them unknown. ``tags`` come from the filename alone.
BYTE_CHECKS = ("metadata", "requires", "files", "sonames", "symbols", "symbol_versions", "driver", "gpu_arch")
# Loader checks another wheel of the set can satisfy: with a wheel unread, their failures are unknown.
PROVIDED_CHECKS = ("sonames", "symbols")


def unread_verdicts(subject: str, reason: str) -> list[Verdict]:
    """One ``unknown`` verdict per byte check of a wheel that could not be read, saying why."""
    text = f"not checked: the wheel could not be read ({reason})"
    return [Verdict(c, "unknown", text, subject, {"unread": reason}) for c in BYTE_CHECKS]


def unsettled(verdicts: Iterable[Verdict], unread: Iterable[str]) -> list[Verdict]:
    """Failures an unread wheel of the set might have prevented (a library or symbol it may provide)
    become ``unknown``, naming it; every other verdict is kept as it is."""
    names = ", ".join(unread)
    if not names:
        return list(verdicts)
    out = []
    for v in verdicts:
        if v.status in ("fail", "system") and v.check in PROVIDED_CHECKS:
            v = unsettled_by(v, f"{names} could not be read", {"unread": names})
        out.append(v)
    return out


def unsettled_by(v: Verdict, what: str, evidence: Mapping[str, str]) -> Verdict:
    """``v`` as ``unknown``: ``what`` (a wheel not read, a project built from source) may provide the
    library or symbol it found missing."""
    text = f"{v.explanation} (unsettled: {what}, and may provide it)"
    return Verdict(v.check, "unknown", text, v.subject, {**v.evidence, **evidence})
