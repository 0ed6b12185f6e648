"""Build real ELF shared objects with the system C compiler, for fixtures."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

CC = shutil.which("cc") or shutil.which("gcc") or "cc"
CXX = shutil.which("c++") or shutil.which("g++") or "c++"


def build_shared(
    out_dir: Path,
    filename: str,
    source: str,
    *,
    soname: str | None = None,
    link: Sequence[Path] = (),
    link_names: Sequence[str] = (),
    version_script: str | None = None,
    rpath: Sequence[str] = (),
    runpath: Sequence[str] = (),
    cxx: bool = False,
    extra: Sequence[str] = (),
    allow_undefined: bool = True,
) -> Path:
    """Compile ``source`` into ``out_dir/filename`` as a shared object and return its path.

    ``link`` are shared objects to put in DT_NEEDED (linked by path, their soname is recorded);
    ``rpath``/``runpath`` set DT_RPATH / DT_RUNPATH (``$ORIGIN`` is kept literally).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".cpp" if cxx else ".c"
    src = out_dir / (filename + suffix)
    src.write_text(source)
    out = out_dir / filename
    cmd = [CXX if cxx else CC, "-shared", "-fPIC", "-O1", "-o", str(out), str(src)]
    if soname:
        cmd.append(f"-Wl,-soname,{soname}")
    if version_script is not None:
        vs = out_dir / (filename + ".map")
        vs.write_text(version_script)
        cmd.append(f"-Wl,--version-script,{vs}")
    if rpath:
        cmd += ["-Wl,--disable-new-dtags", "-Wl,-rpath," + ":".join(rpath)]
    if runpath:
        cmd += ["-Wl,--enable-new-dtags", "-Wl,-rpath," + ":".join(runpath)]
    for lib in link:
        cmd += ["-Wl,--no-as-needed", str(lib)]
    for name in link_names:
        cmd += ["-Wl,--no-as-needed", f"-l{name}"]
    if not allow_undefined:
        cmd.append("-Wl,--no-undefined")
    cmd += list(extra)
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def build_executable(out_dir: Path, filename: str, source: str, *, extra: Sequence[str] = ()) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / (filename + ".c")
    src.write_text(source)
    out = out_dir / filename
    subprocess.run([CC, "-o", str(out), str(src), *extra], check=True, capture_output=True, text=True)
    return out
