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


def to_big_endian(data: bytes, machine: int) -> bytes:
    """Rewrite a little-endian ELF object as big-endian, structure by structure, via its section headers.

    No big-endian linker is available here, so big-endian fixtures are made from real little-endian ones:
    the header, program and section headers, dynamic section, symbol tables, hash tables and GNU version
    tables and relocation tables are re-encoded (code is left as it is). ``machine`` replaces e_machine.
    """
    import struct

    out = bytearray(data)
    is64 = data[4] == 2
    word = "Q" if is64 else "I"

    def swap(fmt: str, off: int) -> tuple[int, ...]:
        values = struct.unpack_from("<" + fmt, data, off)
        struct.pack_into(">" + fmt, out, off, *values)
        return values

    def swap_array(fmt: str, off: int, count: int) -> None:
        for i in range(count):
            swap(fmt, off + i * struct.calcsize(fmt))

    out[5] = 2
    hdr = swap("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH", 16)
    struct.pack_into(">H", out, 18, machine)
    phoff, shoff, phentsize, phnum, shentsize, shnum = hdr[4], hdr[5], hdr[8], hdr[9], hdr[10], hdr[11]
    for i in range(phnum):
        swap("IIQQQQQQ" if is64 else "IIIIIIII", phoff + i * phentsize)
    for i in range(shnum):
        sh = swap("IIQQQQIIQQ" if is64 else "IIIIIIIIII", shoff + i * shentsize)
        sh_type, off, size = sh[1], sh[4], sh[5]
        if sh_type == 6:  # SHT_DYNAMIC
            swap_array("qQ" if is64 else "iI", off, size // (16 if is64 else 8))
        elif sh_type in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            swap_array("IBBHQQ" if is64 else "IIIBBH", off, size // (24 if is64 else 16))
        elif sh_type in (4, 9):  # SHT_RELA, SHT_REL (r_info of 32-bit objects keeps its byte layout)
            rela = sh_type == 4
            swap_array(("QQq" if rela else "QQ") if is64 else ("III" if rela else "II"), off,
                       size // ((24 if rela else 16) if is64 else (12 if rela else 8)))  # fmt: skip
        elif sh_type == 5:  # SHT_HASH
            swap_array("I", off, size // 4)
        elif sh_type == 0x6FFFFFF6:  # SHT_GNU_HASH
            _nbuckets, _symoffset, bloom_size, _shift = swap("IIII", off)
            swap_array(word, off + 16, bloom_size)
            rest = off + 16 + bloom_size * struct.calcsize(word)
            swap_array("I", rest, (off + size - rest) // 4)
        elif sh_type == 0x6FFFFFFF:  # SHT_GNU_versym
            swap_array("H", off, size // 2)
        elif sh_type == 0x6FFFFFFE:  # SHT_GNU_verneed
            at = off
            while True:
                _v, cnt, _file, aux, nxt = swap("HHIII", at)
                aux_at = at + aux
                for _ in range(cnt):
                    aux_next = swap("IHHII", aux_at)[4]
                    aux_at += aux_next
                if not nxt:
                    break
                at += nxt
        elif sh_type == 0x6FFFFFFD:  # SHT_GNU_verdef
            at = off
            while True:
                _v, _f, _ndx, cnt, _h, aux, nxt = swap("HHHHIII", at)
                aux_at = at + aux
                for _ in range(cnt):
                    aux_at += swap("II", aux_at)[1]
                if not nxt:
                    break
                at += nxt
    return bytes(out)
