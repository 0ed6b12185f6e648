"""The upgrade ticket: from a snapshot (where we are) and a solve (where we go), one document. Pure.

It says what changes, which set was chosen and why, what was rejected and why (the matrix cells),
what the probes saw, the lock file and the restore plan. Markdown and HTML render the same document.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from abiprobe import __version__
from abiprobe.model.snapshot import Snapshot
from abiprobe.report.matrix_md import SYMBOL, excluded_lines
from abiprobe.report.restore import render_script, restore_plan

TICKET_KIND = "abiprobe-ticket"
_LOCK_LINE = re.compile(r"^(?P<name>[A-Za-z0-9._-]+) @ (?P<url>\S+)")
_LOCK_HASH = re.compile(r"--hash=sha256:(?P<sha>[0-9a-f]{64})")
_LOCK_ROLE = re.compile(r"^# (?P<role>[^:]+): (?P<name>\S+) (?P<version>\S+)$")


def lock_wheels(text: str) -> list[dict[str, str]]:
    """(role, name, version, url, sha256) of each wheel of a lock file ``solve`` wrote."""
    out: list[dict[str, str]] = []
    role = version = ""
    for line in text.splitlines():
        if m := _LOCK_ROLE.match(line):
            role, version = m["role"], m["version"]
        elif m := _LOCK_LINE.match(line):
            out.append({"role": role, "name": m["name"], "version": version, "url": m["url"], "sha256": ""})
        elif (h := _LOCK_HASH.search(line)) and out:
            out[-1]["sha256"] = h["sha"]
    return out


def chosen_cell(doc: dict[str, Any]) -> dict[str, Any] | None:
    chosen = doc.get("chosen")
    if not chosen:
        return None
    picked = set(chosen.values())
    return next((c for c in doc["cells"] if set(c["members"]) <= picked), None)


def target_wheels(doc: dict[str, Any], lock: str | None) -> list[dict[str, Any]]:
    """The wheels of the chosen set (every role's group, companions included), then the lock's others."""
    chosen = doc.get("chosen") or {}
    out: list[dict[str, Any]] = []
    for role, groups in doc["groups"].items():
        for g in groups:
            if chosen.get(role) == g["id"]:
                out += [{**w, "role": role} for w in g["wheels"]]
    seen = {canonicalize_name(w["name"]) for w in out}
    for w in lock_wheels(lock or ""):
        if canonicalize_name(w["name"]) not in seen:
            out.append({**w, "role": w["role"] or "runtime"})
    return out


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _change(before: str | None, after: str | None, same_bytes: bool | None) -> str:
    if before is None:
        return "new"
    if after is None:
        return "removed"
    if before == after:
        return "same" if same_bytes is not False else "rebuilt"
    b, a = _version(before), _version(after)
    return "upgrade" if b is None or a is None or a > b else "downgrade"


def changes(snapshot: Snapshot, doc: dict[str, Any], lock: str | None) -> list[dict[str, Any]]:
    """Per distribution: the version now and after, and what kind of change it is."""
    wheels = target_wheels(doc, lock)
    out: list[dict[str, Any]] = []
    for w in wheels:
        have = snapshot.dist(w["name"])
        before_sha = have.wheel.sha256 if have is not None and have.wheel is not None else None
        same = None if before_sha is None or not w.get("sha256") else before_sha == w["sha256"]
        out.append(
            {
                "name": w["name"],
                "role": w["role"],
                "from": have.version if have else None,
                "to": w["version"],
                "change": _change(have.version if have else None, w["version"], same),
                "note": "",
            }
        )
    incoming = {canonicalize_name(w["name"]) for w in wheels}
    for member in doc["stack"]:
        for name in member["names"]:
            have = snapshot.dist(name)
            if have is None or have.key in incoming:
                continue
            instead = [w for w in wheels if w["role"] == member["role"]]
            note = f"replaced by {instead[0]['name']} {instead[0]['version']}" if instead else ""
            out.append(
                {
                    "name": have.name,
                    "role": member["role"],
                    "from": have.version,
                    "to": None,
                    "change": "removed",
                    "note": note,
                }
            )
    return out


def _cell_label(c: dict[str, Any]) -> str:
    return " + ".join(c["members"])


def rejected(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Cells that did not pass, worst first, with the checks that failed and the explanation."""
    order = {"fail": 0, "unknown": 1, "system": 2, "blocked": 3, "warn": 4}
    bad = [c for c in doc["cells"] if c["status"] != "ok"]
    bad.sort(key=lambda c: order.get(c["status"], 3))
    return [
        {
            "set": _cell_label(c),
            "status": c["status"],
            "checks": [k for k, s in c["checks"].items() if s != "ok"],
            "explanation": c["explanation"],
        }
        for c in bad
    ]


def probes(doc: dict[str, Any], results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Probe outcomes: result files given, then probe/smoke verdicts already merged into the matrix."""
    out = [
        {
            "job": r["job"]["id"],
            "check": v["check"],
            "status": v["status"],
            "explanation": v["explanation"],
            "host": r["host"].get("hostname", ""),
        }
        for r in results
        for v in r["verdicts"]
    ]
    seen = {(p["job"], p["check"]) for p in out}
    for c in doc["cells"]:
        for v in c["set_verdicts"]:
            if v["check"] in ("probe", "smoke") and (v["subject"], v["check"]) not in seen:
                out.append(
                    {
                        "job": v["subject"],
                        "check": v["check"],
                        "status": v["status"],
                        "explanation": v["explanation"],
                        "host": "",
                    }
                )
    return out


def mismatches(snapshot: Snapshot, doc: dict[str, Any]) -> list[str]:
    """What makes the snapshot and the matrix describe different environments (their Pythons differ:
    the chosen wheels are not the ones this environment installs)."""
    tag = str(doc["target"]["python"])
    m = re.fullmatch(r"(?:cp|pp)?(\d)(\d+)", tag)
    target = f"{m.group(1)}.{m.group(2)}" if m else tag
    have = ".".join(snapshot.python.split(".")[:2])
    if have == target:
        return []
    return [
        f"the snapshot is of Python {have}, the matrix is for {tag}: its chosen set is not what this "
        f"environment would install (solve again with --python {have})"
    ]


def ticket_document(
    snapshot: Snapshot,
    doc: dict[str, Any],
    *,
    lock: str | None = None,
    results: Sequence[dict[str, Any]] = (),
    installer: str = "pip",
    torch_upgrade: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the upgrade ticket says, as data (``torch_upgrade``: the torch diff, when torch changes)."""
    cell = chosen_cell(doc)
    plan = restore_plan(snapshot)
    return {
        "kind": TICKET_KIND,
        "schema_version": 1,
        "generated_by": f"abiprobe {__version__}",
        "title": f"Upgrade to {doc['target']['key']}",
        "target": doc["target"],
        "environment": {
            "python": snapshot.python,
            "executable": snapshot.executable,
            "snapshot_created": snapshot.created,
            "distributions": len(snapshot.dists),
        },
        "complete": doc["complete"],
        "problems": doc["problems"],
        "mismatches": mismatches(snapshot, doc),
        "changes": changes(snapshot, doc, lock),
        "chosen": {
            "set": dict(doc["chosen"]) if doc.get("chosen") else None,
            "status": cell["status"] if cell else None,
            "checks": dict(cell["checks"]) if cell else {},
            "explanation": cell["explanation"] if cell else "; ".join(doc["conflicts"]),
            "newer_rejected": doc["near_misses"],
        },
        "rejected": rejected(doc),
        "excluded": doc["excluded"],
        "probes": probes(doc, results),
        "torch_upgrade": torch_upgrade,
        "lock": lock,
        "restore_plan": render_script(plan, "uv" if installer == "uv" else "pip"),
    }


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(t: dict[str, Any]) -> str:
    """The ticket as Markdown: paste it into the upgrade issue."""
    env = t["environment"]
    out = [
        f"# {t['title']}",
        "",
        f"From Python {env['python']} at `{env['executable']}` (snapshot {env['snapshot_created']}, "
        f"{env['distributions']} distributions).",
        "",
    ]
    if not t["complete"]:
        why = _esc("; ".join(t["problems"]) or "an index did not answer")
        out += [f"> ⚠️ The solve was incomplete: {why}", ""]
    for m in t.get("mismatches", ()):
        out += [f"> ⚠️ {_esc(m[0].upper() + m[1:])}", ""]
    out += ["## What changes", "", "| distribution | role | now | after | change |", "|---|---|---|---|---|"]
    for c in t["changes"]:
        note = f" ({_esc(c['note'])})" if c["note"] else ""
        before, after = c["from"] or "—", c["to"] or "—"
        out.append(f"| {c['name']} | {c['role']} | {before} | {after} | {c['change']}{note} |")
    ch = t["chosen"]
    out += ["", "## Chosen set and why", ""]
    if ch["set"]:
        out.append("**" + ", ".join(f"`{v}`" for v in ch["set"].values()) + "**: " + _esc(ch["explanation"]))
        out.append("")
        out.append("Checks: " + ", ".join(f"{k} {SYMBOL.get(s, s)}" for k, s in ch["checks"].items()))
    else:
        out.append("**No passing set.** " + _esc(ch["explanation"]))
    if ch["newer_rejected"]:
        out += ["", "Newer candidates not taken:", ""]
        out += [f"- `{n['id']}`: {_esc(n['reason'])}" for n in ch["newer_rejected"]]
    out += ["", "## Rejected sets", ""]
    out += [
        f"- {SYMBOL.get(r['status'], r['status'])} `{r['set']}` ({', '.join(r['checks'])}): "
        f"{_esc(r['explanation'])}"
        for r in t["rejected"]
    ] or ["None."]
    if t["excluded"]:
        out += ["", "Not candidates:", "", *excluded_lines(t["excluded"])[1:]]
    out += ["", "## Probes", ""]
    out += [
        f"- {SYMBOL.get(p['status'], p['status'])} {p['check']} `{p['job']}`"
        f"{' on ' + p['host'] if p['host'] else ''}: {_esc(p['explanation'])}"
        for p in t["probes"]
    ] or ["No probe results: run `abiprobe probe --job` (docs/probe-jobs.md)."]
    up = t.get("torch_upgrade")
    if up:
        from abiprobe.report.torch_diff_text import render_markdown as render_torch_diff

        if up["diff"] is not None:
            out += ["", render_torch_diff(up["diff"], limit=20).rstrip("\n")]
        else:
            out += [
                "",
                f"## torch {up['from']} → {up['to']}",
                "",
                up["note"][:1].upper() + up["note"][1:] + ".",
            ]
    out += ["", "## Lock file", ""]
    out += ["```", t["lock"].rstrip("\n"), "```"] if t["lock"] else ["No lock file (no set was chosen)."]
    out += [
        "",
        "## Restore plan",
        "",
        "If the upgrade goes wrong, this puts the environment back:",
        "",
        "```bash",
        t["restore_plan"].rstrip("\n"),
        "```",
        "",
        f"<sub>{t['generated_by']}</sub>",
        "",
    ]
    return "\n".join(out)
