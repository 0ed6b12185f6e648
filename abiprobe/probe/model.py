"""What a probe is asked (ProbeSet, ProbeOptions) and what it answers (ProbeResult)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from abiprobe.model.verdict import Status, Verdict
from abiprobe.probe.classify import Outcome

PROBE_SCHEMA_VERSION = 1
_LOADER_OUTCOMES = ("missing_soname", "undefined_symbol", "symbol_version", "loader_error")
ForkMode = Literal["auto", "always", "never"]
StubMode = Literal["auto", "always", "never"]


@dataclass(frozen=True)
class ProbeSet:
    """An exact set of local wheel files, imported in ``import_order``; ``expected`` is the static verdict."""

    wheels: tuple[Path, ...]
    import_order: tuple[str, ...]
    label: str
    expected: Status | None = None
    expected_gpu: Status | None = None
    expected_message: str | None = None  # the loader's first error the static analysis predicts


@dataclass(frozen=True)
class ProbeOptions:
    python: str | None = None  # "3.12", a path, or None to read it from the wheels' tags
    timeout: float = 120.0  # seconds per set (import + smoke)
    jobs: int | None = None  # None: from the CPU count and the free disk
    keep: bool = False  # leave the temp root in place (its path is in each result)
    installer: str = "auto"  # auto, uv, pip
    fork: ForkMode = "auto"  # fork-server for sets sharing a layer: auto = when two or more share it
    stub_driver: StubMode = "auto"  # auto = when the set links libcuda.so.1 and the host has no driver
    driver_version: int = 13000  # what the stub's cuDriverGetVersion reports
    smoke: bool = True  # run the GPU smoke test when the child sees a GPU
    temp_dir: Path | None = None  # parent of the temp root (default: the system temp dir)
    bytecode: bool = True  # keep a layer's compiled bytecode between runs (abiprobe.probe.bytecode)
    keep_layers: bool = False  # keep installed layers (and driver stubs) for later runs (probe.layers)
    layer_cache_bytes: int | None = None  # bound of the kept layers (None: layers.DEFAULT_MAX_BYTES)


@dataclass(frozen=True)
class ProbeResult:
    """One set's real import: its outcome class, what was loaded, and whether the driver was stubbed."""

    label: str
    outcome: Outcome
    message: str
    module: str | None = None  # the module whose import failed
    versions: tuple[tuple[str, str | None], ...] = ()
    modules: tuple[tuple[str, str | None], ...] = ()  # module -> file, relative to its site dir
    loaded: tuple[str, ...] = ()  # shared objects mapped, relative to their site dir
    stubbed: bool = False
    python: str = ""
    installer: str = ""
    mode: str = "fresh"  # fresh (one process per set) or fork (child of a shared-layer parent)
    duration: float = 0.0
    expected: Status | None = None
    expected_gpu: Status | None = None
    smoke: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    detail: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    temp_root: str | None = None
    expected_message: str | None = None

    @property
    def message_agrees(self) -> bool | None:
        """Whether the real loader's first error is the predicted one; None when nothing was predicted
        or the import did not fail in the loader."""
        if self.expected_message is None or self.outcome not in _LOADER_OUTCOMES:
            return None
        from abiprobe.analyze.first_error import matches_loader_line

        return matches_loader_line(self.expected_message, self.message)

    @property
    def status(self) -> Status:
        return "ok" if self.outcome == "ok" else "fail"

    @property
    def disagrees(self) -> bool:
        """True when a static verdict was given and the real import says otherwise."""
        if self.expected not in ("ok", "blocked", "fail"):
            return False
        # a blocked set passed every loader check: it is expected to import (installed --no-deps)
        return (self.expected != "fail") != (self.outcome == "ok")

    @property
    def smoke_disagrees(self) -> bool:
        """True when the GPU smoke test ran and contradicts the static fatbin (gpu_arch) verdict."""
        ran = self.smoke.get("status")
        if self.expected_gpu not in ("ok", "fail") or ran not in ("ok", "fail"):
            return False
        return bool(self.expected_gpu != ran)

    def explanation(self) -> str:
        head = "imports" if self.outcome == "ok" else f"{self.outcome.replace('_', ' ')}: {self.message}"
        if self.outcome != "ok" and self.module:
            head = f"import {self.module} failed with {head}"
        if self.stubbed:
            head += " (driver stubbed)"
        if self.disagrees:
            head = f"DISAGREES with static verdict '{self.expected}': {head}"
        return head

    def to_verdicts(self) -> list[Verdict]:
        """The ``probe`` verdict, plus ``smoke`` when a GPU smoke test ran."""
        evidence: dict[str, Any] = {
            "outcome": self.outcome,
            "module": self.module,
            "stubbed": self.stubbed,
            "disagrees": self.disagrees,
            **self.detail,
        }
        if self.expected_message is not None:
            evidence["expected_message"] = self.expected_message
            evidence["message_agrees"] = self.message_agrees
        out = [Verdict("probe", self.status, self.explanation(), self.label, evidence)]
        if self.smoke.get("status") in ("ok", "fail"):
            smoke_status: Status = "ok" if self.smoke["status"] == "ok" else "fail"
            text = f"GPU smoke on sm_{''.join(str(c) for c in self.smoke.get('capability') or [])}: "
            if self.smoke_disagrees:
                text = f"DISAGREES with static gpu_arch verdict '{self.expected_gpu}': " + text
            out.append(Verdict("smoke", smoke_status, text + smoke_status, self.label, dict(self.smoke)))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": PROBE_SCHEMA_VERSION,
            "label": self.label,
            "outcome": self.outcome,
            "status": self.status,
            "message": self.message,
            "explanation": self.explanation(),
            "module": self.module,
            "versions": dict(self.versions),
            "modules": dict(self.modules),
            "loaded": list(self.loaded),
            "stubbed": self.stubbed,
            "python": self.python,
            "installer": self.installer,
            "mode": self.mode,
            "duration": round(self.duration, 3),
            "expected": self.expected,
            "disagrees": self.disagrees,
            "expected_gpu": self.expected_gpu,
            "smoke_disagrees": self.smoke_disagrees,
            "expected_message": self.expected_message,
            "message_agrees": self.message_agrees,
            "smoke": self.smoke,
            "detail": self.detail,
            "temp_root": self.temp_root,
        }
