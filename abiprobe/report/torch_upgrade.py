"""The torch diff an upgrade ticket carries when the upgrade changes torch's version.

The old torch is the snapshot's, the new one the chosen set's; the caller (``abiprobe.commands.report``)
finds their facts (the cache, else the wheel file the snapshot found) and the known kernel wheels. Either
torch missing: the ticket says which ``abiprobe diff`` command gives the section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from packaging.utils import canonicalize_name

from abiprobe.analyze.torch_diff import diff_torch
from abiprobe.model.facts import WheelFacts
from abiprobe.model.snapshot import Snapshot
from abiprobe.report.ticket import changes, target_wheels


@dataclass(frozen=True)
class TorchChange:
    """torch's version before and after, and where the facts of each could come from."""

    before: str
    after: str
    old_sha256: str | None  # the snapshot's torch wheel, when it knows it
    old_path: str | None  # the wheel file the snapshot found it in
    new_sha256: str | None  # the chosen torch wheel

    @property
    def command(self) -> str:
        return f"abiprobe diff torch=={self.before} torch=={self.after} --format md"


def torch_change(snapshot: Snapshot, doc: dict[str, Any], lock: str | None) -> TorchChange | None:
    """The change of torch's version the upgrade makes, else None."""
    change = next((c for c in changes(snapshot, doc, lock) if canonicalize_name(c["name"]) == "torch"), None)
    if change is None or change["change"] not in ("upgrade", "downgrade"):
        return None
    have = snapshot.dist("torch")
    wheel = have.wheel if have is not None else None
    new_sha = next(
        (w.get("sha256") for w in target_wheels(doc, lock) if canonicalize_name(w["name"]) == "torch"), None
    )
    return TorchChange(
        change["from"],
        change["to"],
        wheel.sha256 if wheel is not None else None,
        wheel.path if wheel is not None else None,
        new_sha if isinstance(new_sha, str) else None,
    )


def torch_upgrade(
    change: TorchChange, old: WheelFacts | None, new: WheelFacts | None, kernels: Sequence[WheelFacts]
) -> dict[str, Any]:
    """``{"from", "to", "diff": TorchDiff JSON | None, "note"}``: the diff of ``old`` and ``new`` with the
    ``kernels`` it breaks, or, when either is missing, the note that says which command gives it."""
    if old is None or new is None:
        which = "the snapshot's torch" if old is None else "the chosen torch"
        note = f"the facts of {which} are not in the cache: `{change.command}` gives this section"
        return {"from": change.before, "to": change.after, "diff": None, "note": note}
    diff = diff_torch(old, new, kernels)
    return {"from": change.before, "to": change.after, "diff": diff.to_json(), "note": ""}
