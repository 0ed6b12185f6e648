"""Group probe sets into shared layers (one venv per torch wheel, say) and per-set overlays. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from abiprobe.probe.model import ProbeSet


@dataclass(frozen=True)
class Layer:
    """Wheels installed once into a venv, the modules a fork-server may import once, and its sets."""

    wheels: tuple[Path, ...]
    preload: tuple[str, ...]
    members: tuple[int, ...]  # indexes into the probed sets


def provider(module: str, wheels: Sequence[Path], tops: Mapping[Path, tuple[str, ...]]) -> Path | None:
    """The wheel of ``wheels`` that installs the top-level package of ``module``."""
    top = module.split(".", 1)[0]
    for w in wheels:
        if top in tops.get(w, ()):
            return w
    return None


def preload_prefix(probe: ProbeSet, layer: Sequence[Path], tops: Mapping[Path, tuple[str, ...]]) -> list[str]:
    """The leading modules of the import order that the layer's wheels alone provide (never all of them)."""
    out: list[str] = []
    for module in probe.import_order[:-1]:
        if provider(module, layer, tops) is None:
            break
        out.append(module)
    return out


def plan_layers(sets: Sequence[ProbeSet], tops: Mapping[Path, tuple[str, ...]]) -> list[Layer]:
    """Sets whose first import comes from the same wheel share a layer: the wheels common to all of them."""
    groups: dict[object, list[int]] = {}
    for i, s in enumerate(sets):
        anchor = provider(s.import_order[0], s.wheels, tops) if s.import_order else None
        groups.setdefault(anchor if anchor is not None else ("alone", i), []).append(i)
    layers: list[Layer] = []
    for members in groups.values():
        first = sets[members[0]].wheels
        if len(members) == 1:
            common = list(first)
        else:
            shared = set(first).intersection(*(set(sets[m].wheels) for m in members[1:]))
            common = [w for w in first if w in shared]
        prefixes = [preload_prefix(sets[m], common, tops) for m in members]
        preload: list[str] = []
        for column in zip(*prefixes, strict=False):
            if len(set(column)) != 1:
                break
            preload.append(column[0])
        layers.append(Layer(tuple(common), tuple(preload), tuple(members)))
    return layers


def overlay_wheels(probe: ProbeSet, layer: Layer) -> tuple[Path, ...]:
    """The set's wheels the layer venv does not already hold."""
    return tuple(w for w in probe.wheels if w not in layer.wheels)
