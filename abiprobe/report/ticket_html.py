"""The upgrade ticket (``ticket_document``) as one self-contained HTML page, no scripts."""

from __future__ import annotations

from html import escape
from typing import Any

_CSS = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:70em}"
    "table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
    "pre{background:#f6f6f6;padding:1em;overflow:auto}.ok{color:#17803d}.fail{color:#b42318}"
    ".warn{color:#a15c00}.blocked{color:#2940a8}.system{color:#0e7490}.unknown{color:#666}"
)


def _status(s: str | None) -> str:
    return f"<span class='{escape(s or 'unknown')}'>{escape(s or '—')}</span>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    heads = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f"<table><thead><tr>{heads}</tr></thead><tbody>{cells}</tbody></table>"


def render_html(t: dict[str, Any]) -> str:
    env, ch = t["environment"], t["chosen"]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{escape(t['title'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(t['title'])}</h1>",
        f"<p>From Python {escape(env['python'])} at <code>{escape(env['executable'])}</code> (snapshot "
        f"{escape(env['snapshot_created'])}, {env['distributions']} distributions).</p>",
    ]
    if not t["complete"]:
        parts.append(f"<p class='warn'>The solve was incomplete: {escape('; '.join(t['problems']))}</p>")
    parts += [f"<p class='warn'>{escape(m[0].upper() + m[1:])}</p>" for m in t.get("mismatches", ())]
    parts.append("<h2>What changes</h2>")
    parts.append(
        _table(
            ["distribution", "role", "now", "after", "change"],
            [
                [
                    escape(c["name"]),
                    escape(c["role"]),
                    escape(c["from"] or "—"),
                    escape(c["to"] or "—"),
                    escape(c["change"] + (f" ({c['note']})" if c["note"] else "")),
                ]
                for c in t["changes"]
            ],
        )
    )
    parts.append("<h2>Chosen set and why</h2>")
    if ch["set"]:
        members = ", ".join(f"<code>{escape(v)}</code>" for v in ch["set"].values())
        parts.append(f"<p><strong>{members}</strong>: {escape(ch['explanation'])}</p>")
        parts.append(_table(["check", "status"], [[escape(k), _status(s)] for k, s in ch["checks"].items()]))
    else:
        parts.append(f"<p><strong>No passing set.</strong> {escape(ch['explanation'])}</p>")
    if ch["newer_rejected"]:
        parts.append(
            "<p>Newer candidates not taken:</p><ul>"
            + "".join(
                f"<li><code>{escape(n['id'])}</code>: {escape(n['reason'])}</li>"
                for n in ch["newer_rejected"]
            )
            + "</ul>"
        )
    parts.append("<h2>Rejected sets</h2>")
    parts.append(
        _table(
            ["set", "status", "checks", "why"],
            [
                [
                    f"<code>{escape(r['set'])}</code>",
                    _status(r["status"]),
                    escape(", ".join(r["checks"])),
                    escape(r["explanation"]),
                ]
                for r in t["rejected"]
            ],
        )
        if t["rejected"]
        else "<p>None.</p>"
    )
    if t["excluded"]:
        parts.append(
            "<p>Not candidates:</p><ul>"
            + "".join(
                f"<li><code>{escape(e['filename'])}</code>: {escape(e['reason'])}</li>" for e in t["excluded"]
            )
            + "</ul>"
        )
    parts.append("<h2>Probes</h2>")
    probe_rows = [
        [
            f"<code>{escape(p['job'])}</code>",
            escape(p["check"]),
            _status(p["status"]),
            escape(p["host"]),
            escape(p["explanation"]),
        ]
        for p in t["probes"]
    ]
    parts.append(
        _table(["job", "check", "status", "host", "what happened"], probe_rows)
        if probe_rows
        else "<p>No probe results.</p>"
    )
    up = t.get("torch_upgrade")
    if up:
        parts.append(f"<h2>torch {escape(up['from'])} → {escape(up['to'])}</h2>")
        if up["diff"] is None:
            parts.append(f"<p>{escape(up['note'])}</p>")
        else:
            d = up["diff"]
            parts.append(f"<p><strong>{escape(d['headline'])}</strong></p>")
            rows = [
                [
                    f"<code>{escape(c['demangled'])}</code>",
                    f"<code>{escape(c['replacement_demangled'])}</code>",
                ]
                for c in d["changed"][:20]
            ]
            if rows:
                parts.append(_table(["signature changed", "now"], rows))
            broken = [f"<li>{escape(k['wheel'])}</li>" for k in d["kernels"]["broken"]]
            if broken:
                parts.append(
                    "<p>Known kernel wheels importing a removed export:</p><ul>" + "".join(broken) + "</ul>"
                )
    parts.append("<h2>Lock file</h2>")
    parts.append(f"<pre>{escape(t['lock'])}</pre>" if t["lock"] else "<p>No lock file (no set chosen).</p>")
    parts.append("<h2>Restore plan</h2><p>If the upgrade goes wrong, this puts the environment back:</p>")
    parts.append(f"<pre>{escape(t['restore_plan'])}</pre>")
    parts.append(f"<p><small>{escape(t['generated_by'])}</small></p></body></html>")
    return "\n".join(parts) + "\n"
