"""Hostile local wheels: every zip failure is one WheelFormatError line (inspect, check, probe's unpacking,
snapshot's fingerprint), members are capped before they inflate, and mutated wheels never raise anything
else (a property test, as the ELF and fatbin readers have)."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.wheelbuild import build_wheel

from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.cli import main
from abiprobe.errors import AbiprobeError, BinaryFormatError, WheelFormatError
from abiprobe.host.snapshot import wheel_fingerprint
from abiprobe.probe.parallel import wheel_tops
from abiprobe.probe.venv import unpack_wheel

LIB = "oddzip/libodd.so"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("oddzip")
    lib = build_shared(d, "libodd.so", "int odd(void) { return 7; }\n", soname="libodd.so")
    files: dict[str, bytes | Path] = {"oddzip/__init__.py": b"", LIB: lib}
    return build_wheel(d / "w", "oddzip", "1.0", files, tag="py3-none-any", compression=zipfile.ZIP_STORED)


def _patched(sample: Path, out: Path, member: str, central: dict[int, tuple[str, int]],
             local: dict[int, tuple[str, int]] | None = None) -> Path:  # fmt: skip
    """A copy of ``sample`` with fields of ``member``'s central (and local) header overwritten:
    {offset in the header: (struct format, value)}."""
    data = bytearray(sample.read_bytes())
    with zipfile.ZipFile(sample) as zf:
        info = zf.getinfo(member)
    encoded = member.encode()
    cd = data.find(b"PK\x01\x02")
    while cd >= 0 and data[cd + 46 : cd + 46 + len(encoded)] != encoded:
        cd = data.find(b"PK\x01\x02", cd + 4)
    assert cd >= 0
    for offset, (fmt, value) in central.items():
        struct.pack_into(fmt, data, cd + offset, value)
    for offset, (fmt, value) in (local or {}).items():
        struct.pack_into(fmt, data, info.header_offset + offset, value)
    out.mkdir(parents=True, exist_ok=True)
    path = out / sample.name
    path.write_bytes(bytes(data))
    return path


# central header: version needed @6, flags @8, method @10, local header offset @42; local: flags @6, method @8
ODD_ZIPS: dict[str, tuple[dict[int, tuple[str, int]], dict[int, tuple[str, int]]]] = {
    "compression method 97": ({10: ("<H", 97)}, {8: ("<H", 97)}),
    "zip version 25.4": ({6: ("<H", 254)}, {4: ("<H", 254)}),
    "encrypted member": ({8: ("<H", 1)}, {6: ("<H", 1)}),
    "huge local-header offset": ({42: ("<I", 0xFFFFFFF0)}, {}),
}


def _bad_utf8_name(sample: Path, out: Path) -> Path:
    """A member whose name is flagged UTF-8 (bit 11) but is not UTF-8."""
    data = bytearray(sample.read_bytes())
    encoded = b"oddzip/__init__.py"
    for sig, name_at, flags_at in ((b"PK\x01\x02", 46, 8), (b"PK\x03\x04", 30, 6)):
        at = data.find(sig)
        while at >= 0 and data[at + name_at : at + name_at + len(encoded)] != encoded:
            at = data.find(sig, at + 4)
        struct.pack_into("<H", data, at + flags_at, struct.unpack_from("<H", data, at + flags_at)[0] | 0x800)
        data[at + name_at : at + name_at + 2] = b"\xff\xfe"
    out.mkdir(parents=True, exist_ok=True)
    path = out / sample.name
    path.write_bytes(bytes(data))
    return path


def _odd(sample: Path, tmp_path: Path, case: str) -> Path:
    if case == "name flagged UTF-8 but not":
        return _bad_utf8_name(sample, tmp_path / "odd")
    central, local = ODD_ZIPS[case]
    return _patched(sample, tmp_path / "odd", LIB, central, local)


CASES = [*ODD_ZIPS, "name flagged UTF-8 but not"]


def _facts_or_format_error(path: Path) -> str:
    """What reading a wheel ends in: its facts (and their member errors), or one WheelFormatError line."""
    try:
        facts = wheel_facts_from_path(path, unread_sources=BUILT_IN_UNREAD)
    except BinaryFormatError as exc:
        assert "\n" not in str(exc)
        return f"error: {exc}"
    return f"facts: {facts.unreadable}"


# 3. no traceback from an odd local zip, in any reader


@pytest.mark.parametrize("case", CASES)
def test_odd_zips_end_in_one_line_in_every_reader(
    sample: Path, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _odd(sample, tmp_path, case)
    # WHEN the readers inspect, check, unpack, list and fingerprint it
    outcome = _facts_or_format_error(wheel)
    # THEN the library is either unreadable (a failing verdict) or the whole wheel is one format error
    assert outcome.startswith("error: ") or LIB in outcome, outcome
    for reader in (lambda: unpack_wheel(wheel, tmp_path / "unpacked"), lambda: wheel_tops(wheel)):
        try:
            reader()
        except AbiprobeError as exc:
            assert "\n" not in str(exc)
    assert wheel_fingerprint(wheel) is None or isinstance(wheel_fingerprint(wheel), str)
    for argv in (["inspect", str(wheel)], ["check", str(wheel), "--cache-dir", str(tmp_path / "c")]):
        code = main(argv)
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        assert code != 0 or case == "name flagged UTF-8 but not", (argv, out, err)


# 6. and 7. members are capped before they inflate


def _wheel_with(tmp_path: Path, name: str, extra: Callable[[zipfile.ZipFile], None]) -> Path:
    base = build_wheel(tmp_path / "base", "bombpkg", "1.0", {"bombpkg/__init__.py": b""}, tag="py3-none-any")
    with zipfile.ZipFile(base, "a", zipfile.ZIP_DEFLATED) as zf:
        extra(zf)
    return base


def _add_zeros(zf: zipfile.ZipFile, name: str, size: int) -> None:
    with zf.open(name, "w", force_zip64=True) as fh:
        chunk = bytes(1 << 20)
        for _ in range(size >> 20):
            fh.write(chunk)


def test_a_zip_bomb_library_is_refused_before_it_inflates(tmp_path: Path) -> None:
    # GIVEN a wheel with a 1 GiB member of zeros named like a library (about 1 MiB on disk)
    wheel = _wheel_with(tmp_path, "bomb", lambda zf: _add_zeros(zf, "bombpkg/bomb.so", 1 << 30))
    assert wheel.stat().st_size < 4 << 20
    # WHEN its facts are read
    facts = wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)
    # THEN it is an unreadable member (a failing verdict) known from its sizes: nothing was inflated
    assert facts.unreadable == ("bombpkg/bomb.so",)
    assert any("zip bomb" in e for e in facts.errors)
    # AND probe's unpacking refuses it too, in one line
    with pytest.raises(AbiprobeError, match="zip bomb"):
        unpack_wheel(wheel, tmp_path / "unpacked")


def test_a_huge_metadata_is_one_line_not_gigabytes_of_memory(tmp_path: Path) -> None:
    # GIVEN a wheel whose METADATA inflates to 200 MiB (a few hundred kB on disk)
    wheel = tmp_path / "bigmeta-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bigmeta/__init__.py", b"")
        _add_zeros(zf, "bigmeta-1.0.dist-info/METADATA", 200 << 20)
        zf.writestr("bigmeta-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nTag: py3-none-any\n")
    assert wheel.stat().st_size < 2 << 20
    # WHEN it is read
    with pytest.raises(WheelFormatError) as caught:
        wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)
    # THEN one line says the member is too big, known from its declared size
    assert "METADATA: inflates to" in str(caught.value) and "\n" not in str(caught.value)


# the property: whatever the bytes, a wheel ends in facts or one format error, quickly


@FUZZ
@given(data=st.data())
def test_mutated_wheels_end_in_facts_or_one_format_error(
    sample: Path, tmp_path: Path, data: st.DataObject
) -> None:
    raw = bytearray(sample.read_bytes())
    for _ in range(data.draw(st.integers(1, 6), label="mutations")):
        kind = data.draw(st.sampled_from(["byte", "u16", "u32", "cut"]), label="kind")
        at = data.draw(st.integers(0, len(raw) - 1), label="offset")
        if kind == "cut":
            del raw[at:]
            if not raw:
                raw = bytearray(b"P")
        elif kind == "byte":
            raw[at] = data.draw(st.integers(0, 255))
        else:
            width = 2 if kind == "u16" else 4
            value = data.draw(st.sampled_from([0, 1, 0x7F, 0xFFFF, 0xFFFFFFFF, 97, 0x800]))
            chunk = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
            raw[at : at + width] = chunk
    path = tmp_path / "fuzz" / sample.name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(bytes(raw))
    _facts_or_format_error(path)
    for reader in (lambda: unpack_wheel(path, tmp_path / "fuzz-unpacked"), lambda: wheel_tops(path)):
        try:
            reader()
        except AbiprobeError as exc:
            assert "\n" not in str(exc)
    wheel_fingerprint(path)


def test_a_zip_bomb_served_by_an_index_is_refused_before_it_inflates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.indexserver import IndexServer

    # GIVEN the bomb wheel on an index
    wheel = _wheel_with(tmp_path, "bomb", lambda zf: _add_zeros(zf, "bombpkg/bomb.so", 1 << 30))
    with IndexServer() as server:
        served = server.add_wheel(wheel)
        url = f"{server.file_url(served.filename)}#sha256={served.sha256}"
        # WHEN it is inspected by URL
        code = main(["inspect", url, "--cache-dir", str(tmp_path / "cache")])
    # THEN one line names the member, from its declared sizes (the ratio rule runs before inflating)
    err = capsys.readouterr().err
    assert code == 1 and "bombpkg/bomb.so" in err and "zip bomb" in err
