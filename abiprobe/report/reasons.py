"""Every reason a matrix cell is not ok, worst first: what the Markdown and HTML renderings list in full.

A cell's own explanation is one line with "(+N more)"; people reading a rendering get each verdict that
is not ok, from the cell's pairs and its set, failures first, once each.
"""

from __future__ import annotations

from typing import Any

# worst first: a failure is what a reader looks for, a warning is the least of it
SEVERITY = {"fail": 0, "unknown": 1, "system": 2, "blocked": 3, "warn": 4, "ok": 5}
COLLAPSE_AFTER = 3  # more reasons than this are shown collapsed (<details>)


def cell_reasons(doc: dict[str, Any], cell: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdicts of ``cell`` (its pairs' and its set's) that are not ok, worst first, each once; the
    cell's own explanation when the document holds no verdict that is not ok."""
    verdicts = [v for pid in cell.get("pairs", []) for v in doc["pairs"].get(pid, {}).get("verdicts", [])]
    verdicts += cell.get("set_verdicts", [])
    seen: set[tuple[str, str, str]] = set()
    out = []
    for v in sorted(verdicts, key=lambda v: SEVERITY.get(v["status"], 1)):
        key = (v["check"], v["status"], v["explanation"])
        if v["status"] == "ok" or key in seen:
            continue
        seen.add(key)
        out.append(v)
    return out or [{"check": "", "status": cell["status"], "explanation": cell["explanation"]}]


def problem_cells(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Cells that are not ok, failures first (then unknown, blocked, warn), in matrix order within each."""
    bad = [c for c in doc["cells"] if c["status"] != "ok"]
    return sorted(bad, key=lambda c: SEVERITY.get(c["status"], 1))


def reason_text(reason: dict[str, Any]) -> str:
    """``fail symbols (sglang-kernel==0.4.0): undefined symbol ...``: status, check, subject, why."""
    head = " ".join(x for x in (reason["status"], reason.get("check")) if x)
    subject = f" ({reason['subject']})" if reason.get("subject") else ""
    return f"{head}{subject}: {reason['explanation']}"
