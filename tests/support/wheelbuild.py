"""Pack real wheels (zip + dist-info with METADATA, WHEEL, RECORD) from files, for fixtures."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def build_wheel(
    out_dir: Path,
    name: str,
    version: str,
    files: Mapping[str, bytes | Path],
    *,
    tag: str = "cp312-cp312-manylinux_2_28_x86_64",
    requires_dist: Sequence[str] = (),
    requires_python: str | None = None,
    metadata_version: str | None = None,
    build_tag: str | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
    extra_metadata: Sequence[str] = (),
    wheel_file_tags: Sequence[str] | None = None,
) -> Path:
    """Write ``{name}-{version}[-{build}]-{tag}.whl`` and return its path.

    ``version`` is the filename version (may carry a local label); ``metadata_version`` overrides the
    ``Version:`` written to METADATA (to build a filename/metadata mismatch); ``wheel_file_tags`` the
    ``Tag:`` lines of the WHEEL file (by default the filename's).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")
    fname_version = version
    parts = [dist, fname_version] + ([build_tag] if build_tag else []) + [tag]
    wheel_path = out_dir / ("-".join(parts) + ".whl")
    distinfo = f"{dist}-{version if metadata_version is None else metadata_version}.dist-info"
    meta = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {metadata_version if metadata_version is not None else version}",
    ]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires_dist]
    meta += list(extra_metadata)
    wheel_meta = ["Wheel-Version: 1.0", "Generator: abiprobe-tests", "Root-Is-Purelib: false"]
    wheel_meta += [
        f"Tag: {t}" for t in (wheel_file_tags if wheel_file_tags is not None else _expand_tag(tag))
    ]
    if build_tag:
        wheel_meta.append(f"Build: {build_tag}")
    contents: list[tuple[str, bytes]] = []
    for arcname, data in files.items():
        contents.append((arcname, data.read_bytes() if isinstance(data, Path) else data))
    contents.append((f"{distinfo}/METADATA", ("\n".join(meta) + "\n").encode()))
    contents.append((f"{distinfo}/WHEEL", ("\n".join(wheel_meta) + "\n").encode()))
    record_lines = [f"{n},{_record_hash(d)},{len(d)}" for n, d in contents]
    record_lines.append(f"{distinfo}/RECORD,,")
    contents.append((f"{distinfo}/RECORD", ("\n".join(record_lines) + "\n").encode()))
    with zipfile.ZipFile(wheel_path, "w", compression=compression) as zf:
        for arcname, data in contents:
            info = zipfile.ZipInfo(arcname, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = compression
            info.external_attr = 0o755 << 16 if arcname.endswith(".so") or ".so." in arcname else 0o644 << 16
            zf.writestr(info, data)
    return wheel_path


def _expand_tag(tag: str) -> list[str]:
    py, abi, plat = tag.split("-")
    return [f"{p}-{a}-{pl}" for p in py.split(".") for a in abi.split(".") for pl in plat.split(".")]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def repack(wheel: Path, out: Path, name: str, version: str, tag: str, requires: Sequence[str] = ()) -> Path:
    """The installed files of ``wheel`` as another wheel (another name, version or tag)."""
    with zipfile.ZipFile(wheel) as zf:
        files = {n: zf.read(n) for n in zf.namelist() if ".dist-info/" not in n}
    return build_wheel(out, name, version, files, tag=tag, requires_dist=requires)
