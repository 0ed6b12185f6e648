"""Set-level checks needing no loader: filename vs METADATA, tags, Requires-Dist, shared files, companions."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from abiprobe.analyze.layout import Layout, dist_label
from abiprobe.model.facts import WheelFacts, WheelSummary
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.sonames import cuda_major_of_soname
from abiprobe.model.stack import CompanionRule, PackageLoading, Stack, version_error
from abiprobe.model.target import Target
from abiprobe.model.verdict import Status, Verdict

# Directories several distributions share by design (nvidia-*-cu12 wheels each ship nvidia/__init__.py).
SHARED_NAMESPACES = frozenset({"nvidia"})


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def metadata_verdicts(wheels: Sequence[WheelFacts], stack: Stack) -> list[Verdict]:
    """``metadata``: filename version vs METADATA Version, and companion versions as the stack couples
    them."""
    out: list[Verdict] = []
    by_name: dict[str, WheelFacts] = {canonicalize_name(w.metadata.name): w for w in wheels}
    for w in wheels:
        subject = dist_label(w)
        problems: list[Verdict] = []
        try:
            _name, fversion, _build, _tags = parse_wheel_filename(w.filename)
        except InvalidWheelFilename:
            fversion = None
        mversion = _version(w.metadata.version)
        if fversion is not None and mversion is not None and fversion != mversion:
            text = (
                f"filename version {fversion} differs from METADATA Version {mversion}: "
                f"installers reject it as inconsistent"
            )
            problems.append(
                Verdict(
                    "metadata", "fail", text, subject, {"filename": str(fversion), "metadata": str(mversion)}
                )
            )
        rule = stack.version_rules(w.metadata.name)
        if rule is not None and mversion is not None:
            problems += _coupling_verdicts(rule, mversion, by_name, subject)
        out.extend(problems or [Verdict("metadata", "ok", "filename and METADATA agree", subject)])
    return out


def _coupling_verdicts(
    rule: CompanionRule, version: Version, by_name: dict[str, WheelFacts], subject: str
) -> list[Verdict]:
    """A companion's version against its core's (flashinfer's own check and wording, flashinfer/jit/env.py),
    and a provider's against its shim's, which pins it exactly (flashinfer-jit-cache/build_backend.py)."""
    out: list[Verdict] = []
    core = by_name.get(rule.core)
    cv = _version(core.metadata.version) if core is not None else None
    if cv is not None:
        differs = cv != version if rule.match == "exact" else cv.public != version.public
        if differs:
            text = version_error(rule, str(version), str(cv))
            evidence = {"companion": str(version), "core": str(cv), "match": rule.match}
            out.append(Verdict("metadata", "fail", text, subject, evidence))
    shim = by_name.get(rule.shim) if rule.shim is not None else None
    sv = _version(shim.metadata.version) if shim is not None else None
    if sv is not None and sv != version:
        text = f"{rule.name} version ({version}) does not match {rule.shim} version ({sv}), which pins it"
        out.append(Verdict("metadata", "fail", text, subject, {"provider": str(version), "shim": str(sv)}))
    return out


def unreadable_verdicts(wheels: Sequence[WheelFacts]) -> list[Verdict]:
    """``sonames``: a library or extension member that is no loadable object (text, truncated, a CRC that
    does not match) fails: the loader would stop on it, and nothing about it was checked."""
    out: list[Verdict] = []
    for w in wheels:
        for path in w.unreadable:
            reason = next((e for e in w.errors if e.startswith(f"{path}:")), f"{path}: could not be read")
            status: Status = "warn" if path.endswith(".cubin") else "fail"
            text = f"cannot be loaded: {reason.removeprefix(f'{path}:').strip()}"
            out.append(Verdict("sonames", status, text, path, {"dist": dist_label(w), "unreadable": True}))
    return out


def wheel_tags(w: WheelFacts | WheelSummary) -> list[str]:
    """A wheel's tags as installers read them: from its filename (pip and uv never read the WHEEL file's
    ``Tag:`` lines to decide); the WHEEL file's only when there is no wheel filename (an unpacked tree)."""
    try:
        return [str(t) for t in parse_wheel_filename(w.filename)[3]]
    except InvalidWheelFilename:
        return list(w.metadata.tags)


def tag_verdicts(wheels: Sequence[WheelFacts], target: Target) -> list[Verdict]:
    """``tags``: at least one of each wheel's filename tags installs on the target."""
    out: list[Verdict] = []
    for w in wheels:
        tags = wheel_tags(w)
        if not tags or any(target.accepts_tag(t) for t in tags):
            out.append(
                Verdict("tags", "ok", f"installs on {target.python_tag} {target.platform}", dist_label(w))
            )
            continue
        text = f"tags {', '.join(sorted(tags))} do not install on {target.python_tag} {target.platform}"
        out.append(Verdict("tags", "fail", text, dist_label(w), {"tags": sorted(tags)}))
    return out


def requires_verdicts(wheels: Sequence[WheelFacts], target: Target) -> list[Verdict]:
    """``requires``: every Requires-Dist whose marker holds on the target is met by the set's versions;
    an unmet one blocks the set (an installer refuses it, whether or not it would load)."""
    versions = {canonicalize_name(w.metadata.name): w.metadata.version for w in wheels}
    out: list[Verdict] = []
    for w in wheels:
        unmet: list[str] = []
        absent: list[str] = []
        for req in applicable_requirements(w.metadata.requires_dist, target):
            have = versions.get(canonicalize_name(req.name))
            if have is None:
                absent.append(str(req))
            elif not req.specifier.contains(have, prereleases=True):
                unmet.append(f"{req} (set has {req.name} {have})")
        subject = dist_label(w)
        if unmet:
            evidence = {"unmet": unmet, "absent": absent}
            text = f"requires {unmet[0]}" + (f" (and {len(unmet) - 1} more)" if len(unmet) > 1 else "")
            out.append(Verdict("requires", "blocked", text, subject, evidence))
        elif absent:
            text = f"requires {absent[0]}, which the set does not contain" + (
                f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
            )
            out.append(Verdict("requires", "warn", text, subject, {"absent": absent}))
        else:
            out.append(Verdict("requires", "ok", "every Requires-Dist is met by the set", subject))
    return out


# pip and uv install both distributions; the later one's files replace the earlier one's, so what the
# set imports depends on install order: a warning (the loader verdicts judge the objects as laid out)
_LAST_WINS = ": both install, and the files of the one installed last replace the other's"


def files_verdicts(layout: Layout) -> list[Verdict]:
    """``files``: two distributions writing the same file (one overwrites the other: a warning, since
    installers do it without complaint). Sharing a directory alone is fine: namespace packages
    (``cuda/``) and unrelated data directories are shared by design."""
    return files_verdicts_of(layout.wheels)


def files_verdicts_of(wheels: Sequence[WheelFacts | WheelSummary]) -> list[Verdict]:
    """:func:`files_verdicts` from the wheels' file lists alone (no loader layout needed).

    Each wheel's paths are indexed by top-level name once (``_paths_by_top``), so only names two wheels
    share are compared: a matrix of sets costs little more than reading each file list once."""
    by_top: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for w in wheels:
        label = dist_label(w)
        for top, paths in _paths_by_top(w).items():
            by_top.setdefault(top, []).append((label, paths))
    out: list[Verdict] = []
    root_files: list[Verdict] = []
    for top in sorted(by_top):
        holders = by_top[top]
        if len({label for label, _ in holders}) < 2:
            continue
        owners: dict[str, set[str]] = {}
        for label, paths in holders:
            for path in paths:
                owners.setdefault(path, set()).add(label)
        shared = sorted(p for p, dists in owners.items() if len(dists) > 1)
        in_package = {label for label, paths in holders if any("/" in p for p in paths)}
        if len(in_package) > 1 and any("/" in p for p in shared):
            names = sorted({d for p in shared for d in owners[p]})
            text = f"{' and '.join(names)} both install the import package {top}/"
            text += f" ({len(shared)} identical paths, e.g. {shared[0]}){_LAST_WINS}"
            evidence = {"package": top, "distributions": names, "shared_files": shared}
            out.append(Verdict("files", "warn", text, top, evidence))
        for path in shared:
            if "/" not in path:
                dists = sorted(owners[path])
                text = f"{' and '.join(dists)} both write {path}{_LAST_WINS}"
                root_files.append(
                    Verdict("files", "warn", text, path, {"path": path, "distributions": dists})
                )
    out += sorted(root_files, key=lambda v: v.subject)
    return out or [Verdict("files", "ok", "no two distributions write the same files", "set")]


_PATHS_BY_TOP: dict[tuple[str, str, int], dict[str, frozenset[str]]] = {}


def _paths_by_top(w: WheelFacts | WheelSummary) -> dict[str, frozenset[str]]:
    """The installed paths a wheel owns alone (not dist-info, data or shared namespaces), by top name."""
    key = (w.filename, w.sha256, len(w.files))
    found = _PATHS_BY_TOP.get(key)
    if found is not None:
        return found
    grouped: dict[str, list[str]] = {}
    for path in w.files:  # installed paths already (``*.data/purelib|platlib/`` unwrapped when read)
        top = path.partition("/")[0]
        group = grouped.get(top)
        if group is None:
            group = grouped[top] = []
        group.append(path)
    skipped = [t for t in grouped if t.endswith((".dist-info", ".data")) or t in SHARED_NAMESPACES]
    for top in (*skipped, "..", "__pycache__"):
        grouped.pop(top, None)
    found = {top: frozenset(paths) for top, paths in grouped.items()}
    if len(_PATHS_BY_TOP) > 256:
        _PATHS_BY_TOP.clear()
    _PATHS_BY_TOP[key] = found
    return found


def runtime_selection(path: str, target: Target, rules: Sequence[PackageLoading]) -> bool | None:
    """Whether a package that picks an extension by GPU (the stack data's ``by_arch``: sgl_kernel's sm90/
    vs sm100/) loads this one on the target; None when no rule picks it."""

    cc = target.arch.cc if target.arch is not None else None
    for rule in rules:
        chosen = rule.selects(path, cc)
        if chosen is not None:
            return chosen
    return None


def first_use_gpu_verdicts(wheel: WheelFacts, target: Target, judged: Collection[str]) -> list[Verdict]:
    """``gpu_arch`` of the libraries a package loads on first use, not at import (the modules of the
    jit-cache provider flashinfer picks for the GPU): their kernels must run on that GPU all the same.
    Objects in ``judged`` (extensions the loader simulation already checked) are skipped."""
    from abiprobe.model.cuda_arch import arch_verdict

    if target.arch is None:
        return []
    out: list[Verdict] = []
    for elf in wheel.elf:
        if not elf.gpu_code or elf.path in judged:
            continue
        v = arch_verdict(elf.gpu_code, target.arch, target.driver_ptx_isa)
        status = {"native": "ok", "jit": "warn", "none": "fail"}.get(v.status, "ok")
        evidence = {
            "arch_status": v.status,
            "carries": sorted({e.label() for e in elf.gpu_code}),
            "deciding": [e.label() for e in v.deciding],
            "loaded": "on first use",
        }
        out.append(Verdict("gpu_arch", status, v.explanation, elf.path, evidence))  # type: ignore[arg-type]
    return out


def provider_verdicts(
    wheels: Sequence[WheelFacts], target: Target, judged: Collection[str], stack: Stack
) -> list[Verdict]:
    """For each shim of the set with per-architecture providers beside it: the GPU code of the provider
    the target loads (flashinfer's own order, :func:`abiprobe.model.arch_ranking.ranked_arch_wheels`), or a
    warning that none of them serves the target's GPU."""
    from abiprobe.model.arch_ranking import ranked_arch_wheels

    names = {canonicalize_name(w.metadata.name) for w in wheels}
    out: list[Verdict] = []
    for c in (c for m in stack.members for c in m.companions if c.arch_wheels is not None):
        spec = c.arch_wheels
        assert spec is not None
        present = {t: w for w in wheels if (t := spec.tag_of(w.metadata.name)) is not None}
        if c.name not in names or not present or target.arch is None:
            continue
        ranked = ranked_arch_wheels(present, target.arch)
        if ranked:
            out += first_use_gpu_verdicts(present[ranked[0].tag], target, judged)
            continue
        text = (
            f"none of {', '.join(sorted(str(spec.name(t)) for t in present))} targets sm_{target.arch.sm}: "
            "flashinfer compiles its kernels at run time (JIT) instead"
        )
        out.append(Verdict("gpu_arch", "warn", text, str(c.name), {"providers": sorted(present)}))
    return out


def cpu_only_verdicts(wheels: Sequence[WheelFacts], target: Target, stack: Stack) -> list[Verdict]:
    """``gpu_arch`` for a stack distribution with native code and no sign of CUDA in it (a CPU-only
    ``+cpu`` torch): no GPU code, no CUDA library needed, no CUDA wheel required; nothing of it runs on
    the target's GPU. A pure-Python member (flashinfer compiles at run time) and one with unread bytes
    are not judged here."""
    if target.arch is None:
        return []
    out: list[Verdict] = []
    for w in wheels:
        if stack.role_of(w.metadata.name) is None or not w.elf or w.unread or _has_cuda(w):
            continue
        text = (
            f"{w.metadata.name} {w.metadata.version} is a CPU-only build: none of its {len(w.elf)} "
            f"binaries carries GPU code or needs a CUDA library; it does not run on sm_{target.arch.sm}"
        )
        evidence = {"arch_status": "none", "cpu_only": True}
        out.append(Verdict("gpu_arch", "fail", text, dist_label(w), evidence))
    return out


def _has_cuda(w: WheelFacts) -> bool:
    """GPU code, a CUDA library or the driver among its DT_NEEDED, or a CUDA wheel it requires; for
    torch, what its own ``version.py`` (or local label) says of its build decides."""
    if canonicalize_name(w.metadata.name) == "torch":
        from abiprobe.analyze.runtime import torch_build_cuda

        said = torch_build_cuda(w)
        if said is not None:
            return said != ""
    if any(e.gpu_code or e.gpu_unread for e in w.elf):
        return True
    if any(n == "libcuda.so.1" or cuda_major_of_soname(n) is not None for e in w.elf for n in e.needed):
        return True
    names = (re.split(r"[\s;\[<>=!~(]", r.strip(), maxsplit=1)[0] for r in w.metadata.requires_dist)
    return any(canonicalize_name(n).startswith(("nvidia-", "cuda-")) for n in names if n)
