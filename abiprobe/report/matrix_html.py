"""The matrix document as one self-contained HTML page: a coloured grid, filters, details per cell.

The grid is rendered here (readable without scripts); a small inline script adds status/check/text
filters and shows a cell's pair and set verdicts when it is clicked. No external resources.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from abiprobe.model.verdict import STATUSES
from abiprobe.report.matrix_json import axis_ids, index_state, title_of
from abiprobe.report.reasons import COLLAPSE_AFTER, cell_reasons, problem_cells, reason_text

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}table.grid{border-collapse:collapse;margin:1em 0}
.grid th,.grid td{border:1px solid #ccc;padding:4px 8px;text-align:center;white-space:nowrap}
.grid th.rowh{text-align:left}td.cell{cursor:pointer}
.ok{background:#c8efc8}.warn{background:#fbe7a6}.blocked{background:#cfd8f7}.fail{background:#f6b3b3}
.unknown{background:#ddd}.system{background:#c9ecf2}
td.chosen{outline:3px solid #1a56db;outline-offset:-3px}.hidden{display:none}
.mark{display:inline-block;background:#1a56db;color:#fff;border-radius:3px;padding:0 4px;font-size:.85em}
td.cell small.reason{display:block;max-width:22em;overflow:hidden;text-overflow:ellipsis;color:#333}
table.legend{border-collapse:collapse;margin:.5em 0}.legend td{padding:2px 8px;border:1px solid #ccc}
p.use{font-size:1.1em;border-left:4px solid #1a56db;padding-left:.6em}
#details{border:1px solid #999;padding:.6em;margin-top:1em;min-height:2em;white-space:pre-wrap}
.filters label{margin-right:1em}small{color:#555}
"""

_JS = """
(function(){
  var doc = JSON.parse(document.getElementById('matrix-data').textContent);
  var byKey = {};
  doc.cells.forEach(function(c){ byKey[c.row + '\\u0000' + (c.col || '')] = c; });
  function apply(){
    var want = {};
    document.querySelectorAll('input.status').forEach(function(b){ want[b.value] = b.checked; });
    var check = document.getElementById('check').value;
    var text = document.getElementById('text').value.toLowerCase();
    document.querySelectorAll('td.cell').forEach(function(td){
      var c = byKey[td.dataset.row + '\\u0000' + td.dataset.col];
      var st = check ? (c.checks[check] || 'ok') : c.status;
      var hay = (c.row + ' ' + (c.col || '') + ' ' + c.explanation).toLowerCase();
      td.classList.toggle('hidden', !want[st] || (text && hay.indexOf(text) < 0));
    });
  }
  function show(td){
    var c = byKey[td.dataset.row + '\\u0000' + td.dataset.col];
    var lines = [c.members.join(' + ') + ': ' + c.status, c.explanation, ''];
    c.pairs.concat(['(set)']).forEach(function(pid){
      var vs = pid === '(set)' ? c.set_verdicts : doc.pairs[pid].verdicts;
      vs.filter(function(v){ return v.status !== 'ok'; }).forEach(function(v){
        var who = v.subject ? v.subject + ': ' : '';
        lines.push('[' + v.status + '] ' + v.check + ' ' + who + v.explanation);
      });
    });
    c.choices.forEach(function(ch){
      lines.push(ch.role + ': ' + ch.options.map(function(o){ return o.id + ' ' + o.status; }).join(', '));
    });
    document.getElementById('details').textContent = lines.join('\\n');
  }
  document.querySelectorAll('input.status, #check, #text').forEach(function(el){
    el.addEventListener('input', apply); el.addEventListener('change', apply);
  });
  document.querySelectorAll('td.cell').forEach(function(td){
    td.addEventListener('click', function(){ show(td); });
  });
  apply();
  var opened = /^#cell=(.*)$/.exec(location.hash);
  if (opened) {
    var want = decodeURIComponent(opened[1]);
    document.querySelectorAll('td.cell').forEach(function(td){
      if (td.dataset.row + '|' + td.dataset.col === want) { td.click(); }
    });
  }
  document.body.dataset.ready = 'yes';
})();
"""


def _embed(doc: dict[str, Any]) -> str:
    """JSON safe inside a script element: no ``</`` or ``<!--`` can end it early."""
    text = json.dumps(doc, ensure_ascii=True, sort_keys=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(doc: dict[str, Any]) -> str:
    axes = doc["axes"]
    title = title_of(doc)
    chosen = doc["chosen"]
    chosen_members = set(chosen.values()) if chosen else set()
    rows, cols = axis_ids(doc)
    cells = {(c["row"], c["col"]): c for c in doc["cells"]}
    checks = sorted({k for c in doc["cells"] for k in c["checks"]})
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        "<p class='use'>"
        + (
            "Use this set (<span class='mark'>★ chosen</span> in the grid, the newest that passes every "
            "check): " + ", ".join(f"<code>{escape(v)}</code>" for v in chosen.values())
            if chosen
            else "No passing set. " + escape("; ".join(doc["conflicts"]))
        )
        + "</p>",
        _indexes(doc),
        _notes(doc),
        _override(doc.get("if_pins_overridden")),
        "<div class='filters'>",
        *[
            f"<label><input type='checkbox' class='status' value='{s}' checked> <span class='{s}'>{s}</span>"
            "</label>"
            for s in STATUSES
        ],
        "<label>check <select id='check'><option value=''>any</option>",
        *[f"<option value='{escape(c)}'>{escape(c)}</option>" for c in checks],
        "</select></label><label>text <input id='text' type='search'></label></div>",
        _legend(),
        "<table class='grid'><thead><tr>",
        f"<th>{escape(axes['rows'])} \\ {escape(axes['cols'] or '')}</th>",
        *[f"<th>{escape(c or '')}</th>" for c in cols],
        "</tr></thead><tbody>",
    ]
    for r in rows:
        parts.append(f"<tr><th class='rowh'>{escape(r)}</th>")
        for col in cols:
            cell = cells.get((r, col))
            if cell is None:
                parts.append("<td></td>")
                continue
            picks = [ch["chosen"] for ch in cell["choices"] if ch["chosen"]]
            is_chosen = bool(chosen_members) and set(cell["members"]) <= chosen_members
            cls = f"cell {cell['status']}" + (" chosen" if is_chosen else "")
            reasons = _cell_reason_lines(doc, cell)
            mark = "<span class='mark'>★ chosen</span> " if is_chosen else ""
            parts.append(
                f"<td class='{cls}' data-row='{escape(r)}' data-col='{escape(col or '')}' "
                f"title='{escape(chr(10).join(reasons))}'>{mark}{escape(cell['status'])}"
                + "".join(f"<br><small>{escape(p)}</small>" for p in picks)
                + f"<small class='reason'>{escape(_shortened(reasons[0]))}</small>"
                + "</td>"
            )
        parts.append("</tr>")
    s = doc["stats"]
    parts += [
        "</tbody></table><div id='details'>Click a cell for its verdicts.</div>",
        _problems(doc),
        f"<p><small>{s['cells']} cells from {s['analyses']} pair analyses (a naive loop: "
        f"{s['naive_analyses']}); {escape(doc['generated_by'])}</small></p>",
        f"<script type='application/json' id='matrix-data'>{_embed(doc)}</script>",
        f"<script>{_JS}</script></body></html>",
    ]
    return "\n".join(parts) + "\n"


# What each status promises, in the words the legend shows.
MEANINGS = {
    "ok": "loads and passes every check",
    "warn": "loads and runs; something is worth knowing (the reason says what)",
    "blocked": "would load, but a declared requirement forbids the set",
    "system": "loads where the target's system has the library the reason names (and who ships it)",
    "unknown": "not enough was read to tell; never taken as passing",
    "fail": "will not load or will not run on this target",
}
REASON_CHARS = 70  # the first reason as shown inside a cell; the whole text is in its tooltip and details


def _legend() -> str:
    rows = "".join(
        f"<tr><td class='{s}'>{s}</td><td>{escape(MEANINGS.get(s, s))}</td></tr>" for s in STATUSES
    )
    chosen = "<tr><td><span class='mark'>★ chosen</span></td><td>the set to use</td></tr>"
    return f"<table class='legend'><caption>Legend</caption>{rows}{chosen}</table>"


def _cell_reason_lines(doc: dict[str, Any], cell: dict[str, Any]) -> list[str]:
    """Every reason of a cell as one line each, worst first; an ok cell's line says it passes."""
    if cell["status"] == "ok":
        return [MEANINGS["ok"]]
    return [reason_text(r).split(" ", 1)[1] if r.get("check") else r["explanation"]
            for r in cell_reasons(doc, cell)]  # fmt: skip


def _shortened(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1].rstrip() + "…"


def _notes(doc: dict[str, Any]) -> str:
    """Roles without candidates, twin filenames, and the provider each shim loads (or why none)."""
    lines = [escape(e["explanation"]) for e in doc.get("empty_roles", ())]
    lines += [escape(t["explanation"]) for t in doc.get("twins", ())]
    lines += [
        f"<code>{escape(g['id'])}</code> + {escape(p['shim'])}: "
        + (f"<code>{escape(p['chosen'])}</code>, " if p["chosen"] else "no provider: ")
        + escape(p["reason"])
        for groups in doc["groups"].values()
        for g in groups
        for p in g.get("providers", ())
    ]
    return f"<ul class='notes'>{''.join(f'<li>{line}</li>' for line in lines)}</ul>" if lines else ""


def _problems(doc: dict[str, Any]) -> str:
    """Each cell that is not ok, failures first, with every reason; long lists start collapsed."""
    blocks = []
    for c in problem_cells(doc):
        where = " × ".join(x for x in (c["row"], c["col"]) if x)
        reasons = cell_reasons(doc, c) or [
            {"check": "", "status": c["status"], "explanation": c["explanation"]}
        ]
        items = "".join(
            f"<li><span class='{escape(r['status'])}'>{escape(r['status'])}</span> "
            f"{escape(reason_text(r).split(' ', 1)[1])}</li>"
            for r in reasons
        )
        opened = "" if len(reasons) > COLLAPSE_AFTER else " open"
        blocks.append(
            f"<details class='problem'{opened}><summary><span class='{escape(c['status'])}'>"
            f"{escape(c['status'])}</span> {escape(where)}: {len(reasons)} reason"
            f"{'s' if len(reasons) != 1 else ''}</summary><ul>{items}</ul></details>"
        )
    return f"<h2>Problems</h2>{''.join(blocks)}" if blocks else ""


def _override(override: dict[str, Any] | None) -> str:
    if not override:
        return ""
    chosen = ", ".join(f"<code>{escape(v)}</code>" for v in override["chosen"].values())
    why = "".join(
        f"<li><span class='blocked'>blocked</span> by <code>{escape(b['by'])}</code> requiring "
        f"<code>{escape(b['requirement'])}</code> (the set has {escape(b['found'])})</li>"
        for b in override["blocked_by"]
    )
    uv, pip = (escape("\n".join(override[k])) for k in ("uv", "pip"))
    return (
        f"<div class='override'><p>If declared pins were overridden, the newest set the loader checks pass "
        f"for: {chosen}</p><ul>{why}</ul><p>uv:</p><pre>{uv}</pre><p>pip, in this order:</p><pre>{pip}</pre>"
        "</div>"
    )


def _indexes(doc: dict[str, Any]) -> str:
    items = []
    for i in doc["indexes"]:
        items.append(f"<li><code>{escape(i['url'])}</code>: {escape(index_state(i))}</li>")
    incomplete = "Incomplete: some indexes did not answer in full, or a wheel could not be read."
    warn = "" if doc["complete"] else f"<p class='warn'>{incomplete}</p>"
    return f"{warn}<ul class='indexes'>{''.join(items)}</ul>"
