"""The torch diff an upgrade ticket carries when the upgrade changes torch's version.

The old torch is the snapshot's (its wheel's facts from the cache, else from the wheel file the snapshot
found), the new one the chosen set's (facts from the cache the solve filled). Either missing: the ticket
says which ``abiprobe diff`` command gives the section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from abiprobe.facts import WheelFacts
from abiprobe.model.snapshot import Snapshot
from abiprobe.report.ticket import changes, target_wheels
from abiprobe.store.cache import Cache


def _old_torch(snapshot: Snapshot, cache: Cache) -> WheelFacts | None:
    have = snapshot.dist("torch")
    wheel = have.wheel if have is not None else None
    if wheel is None:
        return None
    found = cache.load_facts(wheel.sha256, allow_unverified=True)
    if found is None and wheel.path and Path(wheel.path).is_file():
        from abiprobe.wheel import wheel_facts_from_path

        found = wheel_facts_from_path(Path(wheel.path))
    return found


def torch_upgrade(
    snapshot: Snapshot, doc: dict[str, Any], lock: str | None, cache_dir: Path | None
) -> dict[str, Any] | None:
    """``{"from", "to", "diff": TorchDiff JSON | None, "note"}`` when torch changes version, else None."""
    change = next((c for c in changes(snapshot, doc, lock) if canonicalize_name(c["name"]) == "torch"), None)
    if change is None or change["change"] not in ("upgrade", "downgrade"):
        return None
    before, after = change["from"], change["to"]
    command = f"abiprobe diff torch=={before} torch=={after} --format md"
    cache = Cache(cache_dir, readonly=True)
    new_sha = next(
        (w.get("sha256") for w in target_wheels(doc, lock) if canonicalize_name(w["name"]) == "torch"), None
    )
    new = cache.load_facts(new_sha, allow_unverified=True) if new_sha else None
    old = _old_torch(snapshot, cache)
    if old is None or new is None:
        which = "the snapshot's torch" if old is None else "the chosen torch"
        note = f"the facts of {which} are not in the cache: `{command}` gives this section"
        return {"from": before, "to": after, "diff": None, "note": note}
    from abiprobe.analyze.torch_diff import diff_torch
    from abiprobe.known_wheels import cached_kernels

    diff = diff_torch(old, new, cached_kernels(cache_dir))
    return {"from": before, "to": after, "diff": diff.to_json(), "note": ""}
