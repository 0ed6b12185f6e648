"""Mutated and truncated real objects: the reader ends in ElfFacts or ElfFormatError, every time."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cbuild import build_shared, to_big_endian

from abiprobe.binary.elf import list_sections, read_elf
from abiprobe.errors import ElfFormatError

SOURCE = """
extern int a_func(void);
extern int maybe(void) __attribute__((weak));
int f_one(void) { return a_func() + (maybe ? maybe() : 0); }
int f_two_v1(void) { return 1; }
int f_two_v2(void) { return 2; }
__asm__(".symver f_two_v1, f_two@V1");
__asm__(".symver f_two_v2, f_two@@V2");
"""
MAP = "V1 { global: f_two; local: *; };\nV2 { global: f_one; } V1;\n"
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """A small versioned object in three encodings: 64-bit LE (both hash styles), 32-bit LE, 64-bit BE."""
    d = tmp_path_factory.mktemp("elf-fuzz")
    dep = build_shared(
        d, "liba.so", "int a_func(void) { return 1; }\n", soname="liba.so.1", extra=["-nostdlib"]
    )
    flags = ["-nostdlib", "-Wl,--hash-style=both"]
    lib64 = build_shared(
        d, "lib64.so", SOURCE, link=[dep], version_script=MAP, runpath=["$ORIGIN"], extra=flags
    )
    dep32 = build_shared(d, "liba32.so", "int a_func(void) { return 1; }\n", extra=["-m32", "-nostdlib"])
    lib32 = build_shared(d, "lib32.so", SOURCE, link=[dep32], version_script=MAP, extra=["-m32", "-nostdlib"])
    data64 = lib64.read_bytes()
    return [data64, lib32.read_bytes(), to_big_endian(data64, 21)]


def interesting_ranges(data: bytes) -> list[tuple[int, int]]:
    """Header, program headers and every dynamic table: where mutations reach the reader's decisions."""
    ranges = [(0, 64)]
    for sec in list_sections(data):
        if sec.name in (".dynamic", ".dynsym", ".dynstr", ".hash", ".gnu.hash") or sec.name.startswith(
            ".gnu.version"
        ):
            ranges.append((sec.offset, sec.offset + sec.size))
    return ranges


def check(data: bytes) -> None:
    try:
        read_elf(data, "fuzz.so")
    except ElfFormatError as err:
        message = str(err)
        assert message.startswith("fuzz.so: ") and "\n" not in message
    try:
        list_sections(data, "fuzz.so")
    except ElfFormatError as err:
        assert "\n" not in str(err)


@FUZZ
@given(which=st.integers(0, 2), cut=st.floats(0.0, 1.0))
def test_truncation_anywhere(samples: list[bytes], which: int, cut: float) -> None:
    data = samples[which]
    check(data[: int(len(data) * cut)])


@FUZZ
@given(
    which=st.integers(0, 2), picks=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), max_size=12)
)
def test_random_byte_mutations(samples: list[bytes], which: int, picks: list[tuple[float, int]]) -> None:
    data = bytearray(samples[which])
    for where, value in picks:
        data[int(where * (len(data) - 1))] = value
    check(bytes(data))


@FUZZ
@given(
    which=st.integers(0, 2),
    picks=st.lists(
        st.tuples(st.integers(0, 50), st.floats(0.0, 1.0), st.sampled_from([0, 1, 0x7F, 0x80, 0xFF])),
        min_size=1,
        max_size=6,
    ),
)
def test_mutations_inside_the_dynamic_tables(
    samples: list[bytes], which: int, picks: list[tuple[int, float, int]]
) -> None:
    data = bytearray(samples[which])
    ranges = interesting_ranges(samples[which])
    for region, where, value in picks:
        lo, hi = ranges[region % len(ranges)]
        data[lo + int(where * max(0, hi - lo - 1))] = value
    check(bytes(data))


@FUZZ
@given(which=st.integers(0, 2), word=st.integers(0, 2**64 - 1), where=st.floats(0.0, 1.0))
def test_wild_eight_byte_values_in_the_tables(
    samples: list[bytes], which: int, word: int, where: float
) -> None:
    data = bytearray(samples[which])
    ranges = interesting_ranges(samples[which])
    lo, hi = ranges[int(where * (len(ranges) - 1))]
    at = min(lo + int(where * max(0, hi - lo)), len(data) - 8)
    data[at : at + 8] = word.to_bytes(8, "little")
    check(bytes(data))


def test_unmutated_samples_read_cleanly(samples: list[bytes]) -> None:
    for data in samples:
        facts = read_elf(data, "fuzz.so")
        assert {e.display() for e in facts.exports} >= {"f_one@@V2", "f_two@V1", "f_two@@V2"}
        assert Path(facts.needed[0]).name.startswith("liba")
