"""Wheel-variant claims (draft PEP 825 ``*.dist-info/variant.json``) against a wheel's bytes.

Vocabulary of NVIDIA's provider plugin (wheelnext/nvidia-variant-provider), namespace ``nvidia``:
- ``cuda_version_lower_bound`` ``"13"`` / ``"12.8"``: the driver's CUDA version must be at least this;
- ``cuda_version_upper_bound``: the driver's CUDA version must be below this (exclusive);
- ``sm_arch`` ``"120_real"``: SASS a GPU of that major and a minor at least this one runs (a 12.1 system
  accepts ``121_real``, ``120_real`` and ``120_virtual``); ``"120_virtual"``: PTX the driver JIT-compiles.
So an ``sm_120a``-only build claimed as ``120_real`` is contradicted: arch-specific SASS runs on 12.0
alone, and a 12.1 GPU would be offered it. Pure: bytes of variant.json and facts in, findings out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from abiprobe.analyze.driver_api import driver_symbol_introduced
from abiprobe.analyze.layout import dist_label
from abiprobe.errors import WheelFormatError
from abiprobe.model.cuda_variant import (
    CudaVariant,
    variant_from_facts,
    variant_from_label,
    variant_from_requirements,
)
from abiprobe.model.facts import GpuCode, WheelFacts
from abiprobe.model.requirements import applicable_requirements, parse_requirement
from abiprobe.model.target import Target
from abiprobe.model.verdict import Verdict

NAMESPACE = "nvidia"
LOWER, UPPER, SM = "cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch"


def variant_member(files: Iterable[str]) -> str | None:
    """The ``*.dist-info/variant.json`` path among a wheel's files, if it has one."""
    return next((f for f in files if f.count("/") == 1 and f.endswith(".dist-info/variant.json")), None)


def parse_variant_json(data: bytes, label: str | None = None) -> dict[str, list[str]]:
    """The ``nvidia`` properties a variant.json gives this wheel's label (or its only variant)."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WheelFormatError(f"variant.json is not JSON: {exc}") from None
    variants = doc.get("variants") if isinstance(doc, dict) else None
    if not isinstance(variants, dict):
        raise WheelFormatError("variant.json has no 'variants' mapping")
    if label is not None and label in variants:
        chosen = variants[label]
    elif len(variants) == 1:
        chosen = next(iter(variants.values()))
    else:
        return {}
    props = chosen.get(NAMESPACE, {}) if isinstance(chosen, dict) else {}
    if not isinstance(props, dict):
        raise WheelFormatError(f"variant.json: '{NAMESPACE}' is not a mapping of features")
    out: dict[str, list[str]] = {}
    for feature, value in props.items():
        values = value if isinstance(value, list) else [value]
        out[str(feature)] = [str(v) for v in values]
    return out


def _version(text: str) -> tuple[int, int] | None:
    parts = text.split(".")
    try:
        return (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0)
    except ValueError:
        return None


@dataclass(frozen=True)
class ByteSupport:
    """What a wheel's bytes support, in the plugin's vocabulary, and the evidence behind it."""

    cuda_floor: tuple[int, int] | None  # the lowest driver CUDA version its sonames and driver API need
    cuda_floor_why: str
    real: tuple[int, ...]  # SASS sms that run on every minor of their major from themselves up
    arch_specific: tuple[int, ...]  # sms with only ``a`` SASS: run on that one compute capability
    virtual: tuple[int, ...]  # PTX sms a driver can JIT (not ``a`` PTX)

    def properties(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        if self.cuda_floor is not None:
            out[LOWER] = [f"{self.cuda_floor[0]}.{self.cuda_floor[1]}"]
        sm = [f"{s}_real" for s in self.real] + [f"{s}_virtual" for s in self.virtual]
        if sm:
            out[SM] = sm
        return out


def byte_support(facts: WheelFacts) -> ByteSupport:
    codes: list[GpuCode] = [g for e in facts.elf for g in e.gpu_code]
    real = sorted({g.sm for g in codes if g.kind == "sass" and g.variant != "a"})
    specific = sorted({g.sm for g in codes if g.kind == "sass" and g.variant == "a"} - set(real))
    virtual = sorted({g.sm for g in codes if g.kind == "ptx" and g.variant != "a"})
    floor: tuple[int, int] | None = None
    why = ""
    majors = sorted({m for e in facts.elf for m in e.cuda_majors()})
    if majors:
        floor, why = (majors[-1], 0), f"links CUDA {majors[-1]} libraries (sonames)"
    for e in facts.elf:
        for imp in e.imports:
            introduced = driver_symbol_introduced(imp.name)
            if introduced is not None and (floor is None or introduced > floor):
                floor, why = introduced, f"imports the driver API {imp.name}"
    return ByteSupport(floor, why, tuple(real), tuple(specific), tuple(virtual))


@dataclass(frozen=True)
class Contradiction:
    feature: str
    value: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"feature": self.feature, "value": self.value, "why": self.why}


def _sm(value: str) -> tuple[int, str] | None:
    number, _, kind = value.partition("_")
    return (int(number), kind) if number.isdigit() and kind in ("real", "virtual") else None


def contradictions(claims: dict[str, list[str]], support: ByteSupport) -> list[Contradiction]:
    """Each claimed property the bytes contradict, with why."""
    out: list[Contradiction] = []
    floor = support.cuda_floor
    for value in claims.get(LOWER, ()):
        v = _version(value)
        if v is not None and floor is not None and v < floor:
            need = f"{floor[0]}.{floor[1]}"
            out.append(Contradiction(LOWER, value, f"{support.cuda_floor_why}: needs a CUDA {need} driver"))
    for value in claims.get(UPPER, ()):
        v = _version(value)
        if v is not None and floor is not None and v <= floor:
            why = f"{support.cuda_floor_why}: no driver below {value} runs it"
            out.append(Contradiction(UPPER, value, why))
    for value in claims.get(SM, ()):
        parsed = _sm(value)
        if parsed is None:
            out.append(Contradiction(SM, value, "not a value of the plugin's vocabulary (e.g. 120_real)"))
            continue
        sm, kind = parsed
        if kind == "real" and not any(s // 10 == sm // 10 and s <= sm for s in support.real):
            if sm in support.arch_specific:
                why = f"only sm_{sm}a SASS: arch-specific code runs on {sm // 10}.{sm % 10} alone"
                why += f", but {value} is offered to every {sm // 10}.x GPU from {sm // 10}.{sm % 10} up"
            else:
                why = f"no SASS for sm_{sm // 10}x at or below sm_{sm}"
            out.append(Contradiction(SM, value, why))
        elif kind == "virtual" and not any(s <= sm for s in support.virtual):
            out.append(Contradiction(SM, value, f"no PTX at or below compute_{sm} to JIT"))
    return out


def cuda_claims(wheel: WheelFacts, target: Target | None = None) -> list[tuple[str, CudaVariant]]:
    """What the wheel says about its CUDA major: its local label (``+cu130``) and its METADATA
    (``nvidia-*-cu12``, ``cuda-toolkit==13.0.2``), each as ("label" | "metadata", variant)."""
    out: list[tuple[str, CudaVariant]] = []
    try:
        label = variant_from_label(parse_wheel_filename(wheel.filename)[1])
    except InvalidWheelFilename:
        label = CudaVariant()
    if label.majors or label.cpu:
        out.append(("label", label))
    reqs = (
        applicable_requirements(wheel.metadata.requires_dist, target)
        if target is not None
        else tuple(r for t in wheel.metadata.requires_dist if (r := parse_requirement(t)) and not r.marker)
    )
    meta = variant_from_requirements(reqs)
    if meta.majors:
        out.append(("metadata", meta))
    return out


def cuda_claim_contradictions(wheel: WheelFacts, target: Target | None = None) -> list[Contradiction]:
    """Label and METADATA claims of a CUDA major that the sonames its libraries need contradict."""
    found = variant_from_facts(wheel)
    if not found.majors:
        return []
    out: list[Contradiction] = []
    needs = f"need CUDA {' and '.join(str(m) for m in found.majors)} ({'; '.join(found.evidence)})"
    for source, claim in cuda_claims(wheel, target):
        said = "; ".join(claim.evidence)
        if claim.cpu:
            out.append(Contradiction(source, said, f"claims a CPU-only build, but its libraries {needs}"))
        elif not set(claim.majors) & set(found.majors):
            majors = " and ".join(str(m) for m in claim.majors)
            out.append(Contradiction(source, said, f"says CUDA {majors}, but its libraries {needs}"))
    return out


def cuda_claim_verdicts(wheels: Iterable[WheelFacts], target: Target) -> list[Verdict]:
    """``metadata`` warn per wheel whose label or METADATA names a CUDA major its sonames contradict."""
    out: list[Verdict] = []
    for w in wheels:
        for c in cuda_claim_contradictions(w, target):
            text = f"{c.value} {c.why}"
            out.append(Verdict("metadata", "warn", text, dist_label(w), {"claim": c.to_json()}))
    return out


def variant_document(facts: WheelFacts, variant_json: bytes | None) -> dict[str, Any]:
    """``{"claimed", "contradicted", "supported"}``: the claims (None without variant.json), the ones the
    bytes contradict (its local label and METADATA's CUDA major included), and what the bytes support in
    the plugin's vocabulary."""
    support = byte_support(facts)
    claimed = None
    if variant_json is not None:
        parts = facts.filename.removesuffix(".whl").split("-")
        label = parts[-1] if len(parts) >= 6 else None
        claimed = parse_variant_json(variant_json, label)
    found = contradictions(claimed, support) if claimed else []
    found = [*cuda_claim_contradictions(facts), *found]
    return {
        "claimed": claimed,
        "contradicted": [c.to_json() for c in found],
        "supported": support.properties(),
        "arch_specific_only": [f"sm_{s}a" for s in support.arch_specific],
    }
