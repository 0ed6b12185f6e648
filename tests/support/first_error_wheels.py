"""Real wheels that fail to load in more than one way, built so that the loader's first error is neither
the first in file order nor the first in alphabetical order.

- ``needed``: the extension needs ``libmid.so`` (shipped) and ``libzz_absent.so.1`` (not shipped);
  ``libmid.so`` needs ``libaa_absent.so.1`` (not shipped). ld.so maps breadth first, so it misses
  ``libzz_absent.so.1`` first, though ``libaa_absent`` sorts first and a depth-first walk meets it first.
- ``symbol``: the extension calls ``aardvark_missing`` and needs ``libdep.so``, which calls ``alpha_fn`` and
  reads ``zeta_data``: all three undefined. ld.so relocates ``libdep.so`` before the extension, data
  relocations before PLT ones, so the first error is ``zeta_data`` in ``libdep.so``.
- ``version``: the extension also calls an undefined symbol, and binds ``vf@VER_2`` from a shipped
  ``libver.so.1`` that defines only ``VER_1``: version checks come before relocation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.probe_wheels import EXT, TAG, build_extension
from support.wheelbuild import build_wheel

INIT = b"from . import _ext\n"


@dataclass(frozen=True)
class FirstErrorWheels:
    needed: Path
    symbol: Path
    version: Path


def _wheel(out: Path, name: str, files: dict[str, Path]) -> Path:
    members: dict[str, bytes | Path] = {f"{name}/__init__.py": INIT}
    members.update({f"{name}/{k}": v for k, v in files.items()})
    return build_wheel(out, name, "1.0", members, tag=TAG)


def build_first_error_wheels(root: Path) -> FirstErrorWheels:
    work, out = root / "build", root / "wheels"

    def lib(name: str, source: str, **kw: object) -> Path:
        return build_shared(work / name, name, source, soname=name, **kw)  # type: ignore[arg-type]

    def ext(module: str, body: str, link: list[Path]) -> Path:
        return build_extension(work / module, EXT, module, body, link=link, runpath=["$ORIGIN"])

    aa = lib("libaa_absent.so.1", "int aa(void) { return 1; }\n")
    zz = lib("libzz_absent.so.1", "int zz(void) { return 1; }\n")
    mid = lib("libmid.so", "extern int aa(void); int mid(void) { return aa(); }\n", link=[aa])
    needed = _wheel(out, "fe_needed", {EXT: ext("fe_needed", "", [mid, zz]), "libmid.so": mid})

    dep = lib(
        "libdep.so",
        "extern int zeta_data; int alpha_fn(void); int dep(void) { return alpha_fn() + zeta_data; }",
    )
    calls = "extern int aardvark_missing(void); extern int dep(void);"
    body = calls + " int use(void) { return aardvark_missing() + dep(); }"
    symbol = _wheel(out, "fe_symbol", {EXT: ext("fe_symbol", body, [dep]), "libdep.so": dep})

    ver2 = lib(
        "libver.so.1", "int vf(void) { return 2; }\n", version_script="VER_2 { global: vf; local: *; };\n"
    )
    body = "extern int vf(void); extern int aaa_undefined(void);"
    body += " int use(void) { return vf() + aaa_undefined(); }"
    version_ext = ext("fe_version", body, [ver2])
    ver1 = build_shared(work / "ver1", "libver.so.1", "int vf(void) { return 1; }\n", soname="libver.so.1",
                        version_script="VER_1 { global: vf; local: *; };\n")  # fmt: skip
    version = _wheel(out, "fe_version", {EXT: version_ext, "libver.so.1": ver1})
    return FirstErrorWheels(needed, symbol, version)
