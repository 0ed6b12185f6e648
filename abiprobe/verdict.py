"""The one verdict vocabulary shared by static analysis, probe, matrix and report."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from abiprobe.demangle import render_text

Status = Literal["ok", "fail", "warn", "unknown"]
STATUS_ORDER: dict[str, int] = {"ok": 0, "unknown": 1, "warn": 2, "fail": 3}

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
            "evidence": self.evidence,
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


def worst(statuses: Iterable[str]) -> Status:
    """The most severe status of several (fail > warn > unknown > ok); ok for none."""
    result: Status = "ok"
    for s in statuses:
        if STATUS_ORDER[s] > STATUS_ORDER[result]:
            result = s  # type: ignore[assignment]
    return result
