"""Where the loader's tables sit in real nvidia runtime wheels (run by hand; reads each wheel whole, once).

For every runtime wheel whose facts the committed ``wheel_index_cache/`` holds (the runtime wheels of the
committed matrix's torch candidates), the wheel is streamed from the default index in one range, hashed,
and each ELF member inflated to a temporary file. Per member it reports, as offsets into the inflated
file: the end of the tables addressed from the dynamic section (dynsym, dynstr, versions, hash tables,
relocations), where the dynamic section itself lies, and where a CUDA fatbin (``.nv_fatbin``) lies. A
reader that stops inflating a member once everything the loader needs was read must inflate up to the
later of the tables' end and the dynamic section's end: "stop at" below.

    python tools/runtime_layout.py [--only SUBSTRING ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abiprobe.binary.bounded import ByteSource  # noqa: E402
from abiprobe.binary.elf import (  # noqa: E402
    DT_GNU_HASH,
    DT_HASH,
    DT_JMPREL,
    DT_PLTRELSZ,
    DT_RELA,
    DT_RELASZ,
    DT_STRSZ,
    DT_STRTAB,
    DT_SYMTAB,
    DT_VERDEF,
    DT_VERNEED,
    DT_VERSYM,
    read_dynamic,
)
from abiprobe.binary.elf_layout import (  # noqa: E402
    PT_DYNAMIC,
    AddressMap,
    read_header,
    read_sections,
    read_segments,
)
from abiprobe.binary.objects import looks_like_binary_member  # noqa: E402
from abiprobe.index.client import IndexClient  # noqa: E402
from abiprobe.index.config import default_index  # noqa: E402
from abiprobe.net.http import Http  # noqa: E402
from abiprobe.net.remote_wheel import RemoteZip  # noqa: E402
from abiprobe.store.cache import Cache  # noqa: E402

_TABLES = (DT_STRTAB, DT_SYMTAB, DT_VERSYM, DT_VERNEED, DT_VERDEF, DT_GNU_HASH, DT_HASH, DT_RELA, DT_JMPREL)


def layout(fh: Any, name: str) -> dict[str, Any] | None:
    """Offsets of the loader's tables, the dynamic section and the fatbin in one inflated ELF member."""
    src = ByteSource(fh, name)
    if src.size < 64 or src.read(0, 4, "magic") != b"\x7fELF":
        return None
    hdr = read_header(src)
    segments = read_segments(src, hdr)
    dyn = next((s for s in segments if s.type == PT_DYNAMIC), None)
    sections = read_sections(src, hdr)
    by_name = {s.name: s for s in sections}
    out: dict[str, Any] = {"member": name, "size": src.size}
    fat = by_name.get(".nv_fatbin")
    out["fatbin"] = [fat.offset, fat.offset + fat.size] if fat is not None else None
    if dyn is None:
        return out
    dynamic = read_dynamic(hdr, src.read(dyn.offset, dyn.filesz, "dynamic"))
    amap = AddressMap(src, segments)
    ends: dict[str, int] = {}
    for tag in _TABLES:
        vaddr = dynamic.get(tag)
        if vaddr is None:
            continue
        try:
            start = amap.offset(vaddr, 1, f"tag {tag:#x}")
        except Exception:  # a tag pointing nowhere is left out, not fatal
            continue
        section = next((s for s in sections if s.offset <= start < s.offset + max(1, s.size)), None)
        size = {DT_STRTAB: dynamic.get(DT_STRSZ), DT_RELA: dynamic.get(DT_RELASZ),
                DT_JMPREL: dynamic.get(DT_PLTRELSZ)}.get(tag) or (section.size if section else 0)  # fmt: skip
        ends[section.name if section else f"{tag:#x}"] = start + size
    out["tables_end"] = max(ends.values(), default=0)
    out["tables"] = ends
    out["dynamic"] = [dyn.offset, dyn.offset + dyn.filesz]
    out["stop_at"] = max(out["tables_end"], dyn.offset + dyn.filesz)
    return out


def runtime_wheels(cache: Cache) -> list[tuple[str, str]]:
    """(project, filename) of every runtime wheel with ELF members whose facts the cache holds."""
    found = []
    for path in sorted((cache.root / "facts").rglob("*.facts.gz")):
        facts = cache.load_facts(path.name.split(".")[0], allow_partial=True, allow_unverified=True)
        if (
            facts is not None
            and facts.filename.startswith(("nvidia_", "cuda_"))
            and (facts.elf or facts.unread)
        ):
            found.append((facts.metadata.name, facts.filename))
    return found


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", default=[], help="only wheels whose filename has this")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cache = Cache(ROOT / "wheel_index_cache", readonly=True)
    wheels = [w for w in runtime_wheels(cache) if not args.only or any(s in w[1] for s in args.only)]
    index, _origin = default_index(os.environ, Path.cwd())
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    with Http(progress=False) as http:
        client = IndexClient([index], None, http)
        for project, filename in wheels:
            listing = client.list_project(project)
            file = next((c.file for c in listing.candidates if c.file.filename == filename), None)
            if file is None:
                print(f"{filename}: not listed on the default index", file=sys.stderr)
                continue
            with RemoteZip(http, file.url, file.sha256, file.size) as remote:
                names = [n for n in remote.names() if looks_like_binary_member(n)]
                fetched = remote.read_members(names, verify=True)
                try:
                    for name, fh in fetched.items():
                        row = layout(fh, name)
                        if row is not None:
                            rows.append({"wheel": filename, **row})
                finally:
                    for fh in fetched.values():
                        fh.close()
            print(
                f"{filename}: {len(names)} members read ({time.monotonic() - started:.0f} s)", file=sys.stderr
            )
    total = sum(r["size"] for r in rows)
    stop = sum(r.get("stop_at", r["size"]) for r in rows)
    tables = sum(r.get("tables_end", r["size"]) for r in rows)
    fatbin = sum(r["fatbin"][1] - r["fatbin"][0] for r in rows if r["fatbin"])
    fat_before = sum(1 for r in rows if r["fatbin"] and "dynamic" in r and r["fatbin"][1] <= r["dynamic"][0])
    with_fat = sum(1 for r in rows if r["fatbin"])
    for r in rows:
        size = r["size"]
        stop_at = r.get("stop_at")
        where = (
            f"tables end {r['tables_end'] / size:6.1%}, dynamic at {r['dynamic'][0] / size:6.1%}"
            if stop_at
            else "no dynamic section"
        )
        fat = f", fatbin {r['fatbin'][0] / size:.1%}..{r['fatbin'][1] / size:.1%}" if r["fatbin"] else ""
        print(f"{r['member'][-48:]:>48} {size / 2**20:8.1f} MiB  {where}{fat}")
    print(f"{len(rows)} ELF members of {len(wheels)} wheels, {total / 2**20:.0f} MiB inflated")
    print(f"tables (dynsym, dynstr, versions, hash, relocations) end within the first {tables / total:.1%}")
    print(f"a reader that stops after the dynamic section too inflates {stop / total:.1%} of the bytes")
    print(
        f"fatbins: {fatbin / 2**20:.0f} MiB ({fatbin / total:.1%}); "
        f"before the dynamic section: {fat_before} of {with_fat}"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "total": total, "stop": stop, "tables": tables}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
