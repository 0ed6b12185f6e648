"""One-line explanations of what the simulated loader found, as Verdicts with evidence.

C++ names stay mangled in the text (marked by ``cxx``) and the evidence, the same on every host; they are
demangled when a verdict is shown (:attr:`abiprobe.model.verdict.Verdict.text`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from abiprobe.analyze.layout import InstalledObject, Layout
from abiprobe.analyze.loader import LoadResult, MissingSymbol, NeededResolution
from abiprobe.analyze.profiles import Profile
from abiprobe.analyze.system_packages import system_packages
from abiprobe.model.cxxnames import abi_tag_kind, cxx, split_signature
from abiprobe.model.sonames import cuda_major_of_soname, providing_wheel, split_soname
from abiprobe.model.target import CUDA_DRIVER_TABLE, Target
from abiprobe.model.verdict import Status, Verdict

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _more(n: int) -> str:
    return f" (and {n} more)" if n > 0 else ""


def soname_verdict(result: LoadResult, layout: Layout, profile: Profile) -> Verdict:
    """``sonames``: every DT_NEEDED of the unit's tree found, or which one is missing and why."""
    missing = result.missing_sonames
    interpreter = next((n for n in result.needed if n.how == "interpreter"), None)
    if not missing and interpreter is not None:
        via = "" if interpreter.requirer == result.path else f" (needed by {interpreter.requirer})"
        text = (
            f"{interpreter.soname}, the interpreter's own library, is there only when the Python running "
            "the environment is a shared build, which has loaded it (python.org, pyenv and uv builds are; "
            "a static /usr/bin/python3 is not): which one the target runs is not known"
        )
        return Verdict("sonames", "unknown", f"{text}{via}", result.path, {"interpreter": interpreter.soname})
    if not missing:
        beyond = [n for n in result.needed if n.how == "system" and profile.beyond_stand_in(n.soname)]
        if beyond:
            return _beyond_verdict(beyond, result.path, profile)
        return Verdict("sonames", "ok", "every needed library is found", result.path)
    first = missing[0]
    text = _missing_soname_text(first.soname, layout, profile)
    evidence: dict[str, object] = {
        "missing": [{"soname": m.soname, "required_by": m.requirer} for m in missing]
    }
    via = "" if first.requirer == result.path else f" (needed by {first.requirer})"
    status: Status = "fail"
    packages = [system_packages(m.soname) for m in missing]
    if not profile.this_host and all(p is not None and not _in_wheels(p.soname) for p in packages):
        status = "system"  # every missing library is one a distribution package provides
        evidence["system"] = [p.to_json() for p in packages if p is not None]
    return Verdict("sonames", status, f"{text}{via}{_more(len(missing) - 1)}", result.path, evidence)


def _beyond_verdict(beyond: Sequence[NeededResolution], path: str, profile: Profile) -> Verdict:
    """Every library found, some of them only because this host, the target, has them although the
    platform its tag names does not promise them: a warning that another host of that platform may lack
    them."""
    first = beyond[0]
    lib = profile.library(first.soname)
    where = f" ({lib.origin})" if lib is not None and lib.origin else ""
    stand_in = profile.stand_in.name if profile.stand_in is not None else "the platform"
    packages = system_packages(first.soname)
    provided = f" ({packages.text()})" if packages is not None else ""
    via = "" if first.requirer == path else f" (needed by {first.requirer})"
    text = (
        f"{first.soname} is found on this host{where}, the target, but is not a system library of "
        f"{stand_in}: a host of that platform without it fails to load this{provided}{via}"
        f"{_more(len({b.soname for b in beyond}) - 1)}"
    )
    evidence = {"beyond_platform": [{"soname": b.soname, "required_by": b.requirer} for b in beyond]}
    return Verdict("sonames", "warn", text, path, evidence)


def _in_wheels(soname: str) -> bool:
    """A library the CUDA wheels provide is the set's to bring, not the system's."""
    return cuda_major_of_soname(soname) is not None or providing_wheel(soname) is not None


def _missing_soname_text(soname: str, layout: Layout, profile: Profile) -> str:
    major = cuda_major_of_soname(soname)
    parts = split_soname(soname)
    if major is not None and parts is not None:
        stem = parts[0]
        others = sorted(
            (o for o in layout.objects.values() if (s := split_soname(o.filename)) and s[0] == stem),
            key=lambda o: o.path,
        )
        wheel = providing_wheel(soname, major)
        text = f"{soname} not found: built for CUDA {major}"
        if others:
            o = others[0]
            text += f"; this set provides {o.filename} from {o.dist}"
        if wheel:
            text += f"; {wheel} would provide it"
        return text
    wheel = providing_wheel(soname)
    if wheel:
        return f"{soname} not found; {wheel} would provide it"
    note = profile.note(soname)
    packages = system_packages(soname)
    if note:
        return f"{soname} not found: {note}"
    if profile.this_host:
        where = f"{soname} not found by this host's loader"
        return f"{where} (it is in {packages.text()})" if packages else where
    if packages is not None:
        lacks = f"{soname} is not a system library of {profile.name}"
        return f"{lacks}: loads where the system has it ({packages.text()})"
    return f"{soname} not found: not in the set and not a system library of {profile.name}"


def version_verdict(result: LoadResult, profile: Profile) -> Verdict:
    """``symbol_versions``: version nodes (GLIBC_2.34, GLIBCXX_3.4.32 ...) the target's libraries lack."""
    missing = result.missing_versions
    if not missing and result.uncertain_versions:
        u = result.uncertain_versions[0]
        newest = _newest_of(profile, u.file, u.version.rstrip("0123456789."))
        has = f"up to {newest}" if newest else "no such node"
        text = (
            f"needs {u.version} from {u.file}; {profile.name}, the stand-in for a newer target system, has "
            f"{has}: whether the target's own {u.file} defines it is not known"
            f"{_more(len(result.uncertain_versions) - 1)}"
        )
        uncertain = [{"file": v.file, "version": v.version, "required_by": v.requirer}
                     for v in result.uncertain_versions]  # fmt: skip
        return Verdict("symbol_versions", "unknown", text, result.path, {"uncertain": uncertain})
    if not missing:
        return Verdict("symbol_versions", "ok", "every needed symbol version is defined", result.path)
    m = missing[0]
    sym = f" (for {cxx(m.symbols[0])})" if m.symbols else ""
    family = m.version.rstrip("0123456789.")
    newest = _newest_of(profile, m.file, family)
    where = f"{profile.name} provides up to {newest}" if newest else f"{m.provider} does not define it"
    evidence = {
        "missing": [
            {"file": v.file, "version": v.version, "required_by": v.requirer, "symbols": list(v.symbols)}
            for v in missing
        ]
    }
    text = f"needs {m.version} from {m.file}{sym}; {where}{_more(len(missing) - 1)}"
    return Verdict("symbol_versions", "fail", text, result.path, evidence)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def _newest_of(profile: Profile, soname: str, family: str) -> str | None:
    lib = profile.library(soname)
    if lib is None or not family:
        return None
    same = [v for v in lib.versions if v.rstrip("0123456789.") == family]
    return max(same, key=_version_key) if same else None


def driver_verdict(result: LoadResult, target: Target) -> Verdict:
    """``driver``: driver API imports newer than the target driver."""
    found = result.driver_symbols
    if not found:
        return Verdict("driver", "ok", "no driver API symbol newer than the target driver", result.path)
    d = max(found, key=lambda s: s.introduced)
    need = next((m for m, cuda, _ in CUDA_DRIVER_TABLE if cuda >= d.introduced), None)
    need_text = f" (driver >= {'.'.join(map(str, need))})" if need else ""
    have = target.driver_cuda
    drv = ".".join(map(str, target.driver)) if target.driver else "the target"
    text = (
        f"{d.name} needs a CUDA {d.introduced[0]}.{d.introduced[1]} driver{need_text}; "
        f"driver {drv} supports CUDA {have[0]}.{have[1]}{_more(len(found) - 1)}"
    )
    evidence = {
        "symbols": [{"name": s.name, "introduced": f"{s.introduced[0]}.{s.introduced[1]}"} for s in found]
    }
    return Verdict("driver", "fail", text, result.path, evidence)


def symbols_verdict(result: LoadResult, layout: Layout) -> Verdict:
    """``symbols``: undefined symbols, explained (signature changed, string ABI, shim missing, undefined)."""
    skip = {(v.requirer, v.version) for v in result.missing_versions}
    missing = [m for m in result.missing_symbols if (m.requirer, m.symbol.version) not in skip]
    if not missing:
        if result.non_stable:
            names = sorted({m.symbol.name for m in result.non_stable})
            text = f"uses {names[0]} outside the stable ABI declared by its abi3 tag{_more(len(names) - 1)}"
            return Verdict("symbols", "warn", text, result.path, {"non_stable": names})
        return Verdict("symbols", "ok", "every imported symbol is exported in its load scope", result.path)
    explained = [explain_missing_symbol(m, layout) for m in missing]
    order = {"string_abi": 0, "signature_changed": 1, "shim_missing": 2, "undefined": 3}
    explained.sort(key=lambda e: order[str(e["kind"])])
    text = str(explained[0]["text"]) + _more(len(explained) - 1)
    evidence = {"missing": explained}
    return Verdict("symbols", "fail", text, result.path, evidence)


def explain_missing_symbol(m: MissingSymbol, layout: Layout) -> dict[str, object]:
    """One missing symbol as evidence: kind, demangled names, the closest export and who exports it."""
    name = m.symbol.name
    wanted = cxx(name)
    base: dict[str, object] = {"symbol": m.symbol.display(), "required_by": m.requirer}
    if name.startswith("aoti_torch_"):
        torch = layout.wheel_of("torch")
        who = f"torch {torch.metadata.version}" if torch else "no torch in the set"
        text = f"stable-ABI shim missing: {name} is not exported ({who}); built for a newer torch's C shim"
        return {**base, "kind": "shim_missing", "text": text}
    sig = split_signature(name)
    if sig is not None:
        qualified, params = sig
        for other, obj in _same_qualified(layout, name, qualified):
            other_sig = split_signature(other)
            if other_sig is None or other_sig[1] == params:
                continue
            shown = f"{obj.filename} ({obj.dist})"
            kinds = (abi_tag_kind(name), abi_tag_kind(other))
            if kinds in (("old", "cxx11"), ("cxx11", "old")):
                text = (
                    f"C++ std::string ABI mismatch: wants {wanted} ({kinds[0]} ABI); "
                    f"{shown} exports only the {kinds[1]} form {cxx(other)}"
                )
                kind = "string_abi"
            else:
                text = f"signature changed: wants {wanted}; {shown} exports {cxx(other)}"
                kind = "signature_changed"
            return {**base, "kind": kind, "text": text, "exported": other, "exported_by": obj.path}
    text = f"undefined symbol {wanted}: no library in its load scope exports it"
    return {**base, "kind": "undefined", "text": text}


def _same_qualified(layout: Layout, mangled: str, qualified: str) -> list[tuple[str, InstalledObject]]:
    """Exports anywhere in the set whose demangled qualified name equals ``qualified``."""
    idents = _IDENT.findall(qualified.split("<", 1)[0])
    if not idents:
        return []
    last = idents[-1]
    token = f"{len(last)}{last}"
    hits: list[tuple[str, InstalledObject]] = []
    for obj in sorted(layout.objects.values(), key=lambda o: o.path):
        for e in obj.facts.exports:
            if token in e.name and e.name != mangled:
                sig = split_signature(e.name)
                if sig is not None and sig[0] == qualified:
                    hits.append((e.name, obj))
    return hits


def gpu_verdicts(objects: Sequence[InstalledObject], target: Target) -> list[Verdict]:
    """``gpu_arch`` per object carrying GPU code: native ok, PTX JIT only warn, nothing runnable fail."""
    from abiprobe.model.cuda_arch import arch_verdict

    out: list[Verdict] = []
    if target.arch is None:
        return out
    isa = target.driver_ptx_isa
    for obj in objects:
        if obj.facts.gpu_unread:  # read only up to its loader tables: what it carries is not known
            text = "its GPU code was not read (only its loader tables were)"
            out.append(Verdict("gpu_arch", "unknown", text, obj.path, {"gpu_unread": True}))
            continue
        if not obj.facts.gpu_code:
            continue
        v = arch_verdict(obj.facts.gpu_code, target.arch, isa)
        status = {"native": "ok", "jit": "warn", "none": "fail"}.get(v.status, "ok")
        evidence = {
            "arch_status": v.status,
            "carries": sorted({e.label() for e in obj.facts.gpu_code}),
            "deciding": [e.label() for e in v.deciding],
        }
        out.append(Verdict("gpu_arch", status, v.explanation, obj.path, evidence))  # type: ignore[arg-type]
    return out
