"""From a snapshot, the exact pip and uv commands that put the environment back. Pure.

Distributions whose wheel sha256 is known go into a ``--require-hashes`` requirements file; the rest
are pinned by version with their content fingerprint noted, so ``restore-plan --verify`` can check them.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from abiprobe.model.snapshot import Snapshot, SnapshotDist

Installer = Literal["pip", "uv"]


@dataclass(frozen=True)
class RestoreLine:
    """One requirement of the plan and why it is (or is not) hash-checked."""

    name: str
    version: str
    requirement: str
    sha256: str | None
    note: str = ""


@dataclass(frozen=True)
class RestorePlan:
    python: str
    executable: str
    hashed: tuple[RestoreLine, ...]
    unhashed: tuple[RestoreLine, ...]
    remove: tuple[str, ...]
    find_links: tuple[str, ...]
    index_url: str | None

    def to_json(self) -> dict[str, Any]:
        def line(r: RestoreLine) -> dict[str, Any]:
            return {
                "name": r.name,
                "version": r.version,
                "requirement": r.requirement,
                "sha256": r.sha256,
                "note": r.note,
            }

        return {
            "python": self.python,
            "executable": self.executable,
            "hashed": [line(r) for r in self.hashed],
            "unhashed": [line(r) for r in self.unhashed],
            "remove": list(self.remove),
            "find_links": list(self.find_links),
            "index_url": self.index_url,
        }


def restore_line(d: SnapshotDist) -> RestoreLine:
    """The requirement that reinstalls exactly ``d``: by URL or version, hashed where a hash is known."""
    src = d.source
    sha = d.wheel.sha256 if d.wheel is not None else None
    if src.kind in ("url", "file") and src.url:
        return RestoreLine(d.name, d.version, f"{d.name} @ {src.url}", sha or src.sha256)
    if src.kind == "vcs" and src.url:
        ref = f"@{src.commit}" if src.commit else ""
        return RestoreLine(
            d.name,
            d.version,
            f"{d.name} @ {src.url}{ref}",
            None,
            "from version control: no archive hash exists",
        )
    if src.kind == "editable" and src.url:
        return RestoreLine(d.name, d.version, f"-e {src.url}", None, "editable install of a local directory")
    if src.kind == "dir" and src.url:
        return RestoreLine(
            d.name,
            d.version,
            f"{d.name} @ {src.url}",
            None,
            "built from a local directory: no archive hash exists",
        )
    if sha is None:
        note = f"wheel sha256 unknown (wheel file not found); content fingerprint {d.content_sha256}"
        return RestoreLine(d.name, d.version, f"{d.name}=={d.version}", None, note)
    return RestoreLine(d.name, d.version, f"{d.name}=={d.version}", sha)


def restore_plan(snapshot: Snapshot, current: Snapshot | None = None) -> RestorePlan:
    """Every distribution of ``snapshot``; with ``current``, also those to remove (added since)."""
    lines = [restore_line(d) for d in snapshot.dists]
    remove: tuple[str, ...] = ()
    if current is not None:
        keep = {d.key for d in snapshot.dists}
        remove = tuple(d.name for d in current.dists if d.key not in keep)
    explicit_index = snapshot.index_origin not in (None, "pip's built-in default")
    return RestorePlan(
        python=snapshot.python,
        executable=snapshot.executable,
        hashed=tuple(r for r in lines if r.sha256),
        unhashed=tuple(r for r in lines if not r.sha256),
        remove=remove,
        find_links=snapshot.wheel_dirs,
        index_url=snapshot.index_url if explicit_index else None,
    )


def requirements_text(lines: Sequence[RestoreLine]) -> str:
    out: list[str] = []
    for r in lines:
        if r.note:
            out.append(f"# {r.name} {r.version}: {r.note}")
        out.append(f"{r.requirement} --hash=sha256:{r.sha256}" if r.sha256 else r.requirement)
    return "\n".join(out) + "\n"


def _source_args(plan: RestorePlan, no_index: bool) -> list[str]:
    args: list[str] = []
    if no_index:
        args.append("--no-index")
    elif plan.index_url:
        args += ["--index-url", plan.index_url]
    for d in plan.find_links:
        args += ["--find-links", d]
    return args


def install_commands(plan: RestorePlan, installer: Installer, *, no_index: bool = False) -> list[str]:
    """Shell commands (``$PYTHON`` is the interpreter, ``$REQ`` the requirements directory)."""
    src = " ".join(shlex.quote(a) for a in _source_args(plan, no_index))
    src = f" {src}" if src else ""
    if installer == "pip":
        head = '"$PYTHON" -m pip install --no-deps --disable-pip-version-check'
        remove = '"$PYTHON" -m pip uninstall -y'
    else:
        head = 'uv pip install --python "$PYTHON" --no-deps'
        remove = 'uv pip uninstall --python "$PYTHON"'
    cmds: list[str] = []
    if plan.remove:
        cmds.append(f"{remove} " + " ".join(shlex.quote(n) for n in plan.remove))
    if plan.hashed:
        cmds.append(f'{head} --require-hashes{src} -r "$REQ/hashed.txt"')
    if plan.unhashed:
        cmds.append(f'{head}{src} -r "$REQ/unhashed.txt"')
    return cmds


def render_script(plan: RestorePlan, installer: Installer = "pip", *, no_index: bool = False) -> str:
    """A bash script: writes the requirement files, runs ``installer``'s commands, shows the other's."""
    other: Installer = "uv" if installer == "pip" else "pip"
    out = [
        "#!/usr/bin/env bash",
        f"# abiprobe restore plan: Python {plan.python}, {len(plan.hashed)} distributions hash-checked,"
        f" {len(plan.unhashed)} without a known wheel hash",
        "set -euo pipefail",
        f'PYTHON="${{PYTHON:-{plan.executable}}}"',
        'REQ="$(mktemp -d)"',
    ]
    for name, lines in (("hashed", plan.hashed), ("unhashed", plan.unhashed)):
        if lines:
            out += [
                f"cat > \"$REQ/{name}.txt\" <<'ABIPROBE_EOF'",
                requirements_text(lines).rstrip("\n"),
                "ABIPROBE_EOF",
            ]
    out.append(f"# {installer}:")
    out += install_commands(plan, installer, no_index=no_index)
    out.append(f"# or with {other}:")
    out += [f"#   {c}" for c in install_commands(plan, other, no_index=no_index)]
    return "\n".join(out) + "\n"


def compare(expected: Snapshot, actual: Snapshot) -> list[str]:
    """Differences between two snapshots: missing or extra distributions, other versions or content."""
    problems: list[str] = []
    have = {d.key: d for d in actual.dists}
    for d in expected.dists:
        got = have.pop(d.key, None)
        if got is None:
            problems.append(f"{d.name} {d.version}: missing")
        elif got.version != d.version:
            problems.append(f"{d.name}: version {got.version}, expected {d.version}")
        elif got.content_sha256 != d.content_sha256:
            problems.append(f"{d.name} {d.version}: installed files differ from the snapshot")
    problems += [f"{d.name} {d.version}: not in the snapshot" for d in have.values()]
    return problems
