"""Mutated real fatbins and ELF objects only ever raise FatbinFormatError or ElfFormatError."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.nvbuild import CudaFixtures, cuda_fixtures, need_nvcc

from abiprobe.binary.cuda import gpu_code_of_elf, parse_fatbin, read_cubin
from abiprobe.errors import ElfFormatError, FatbinFormatError

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)


@pytest.fixture(scope="session")
def cuda(tmp_path_factory: pytest.TempPathFactory) -> CudaFixtures:
    need_nvcc()
    return cuda_fixtures(tmp_path_factory.getbasetemp() / "nvbuild")


def fatbin_span(path: Path) -> tuple[int, int]:
    with path.open("rb") as f:
        section = ELFFile(f).get_section_by_name(".nv_fatbin")
        assert section is not None
        return section["sh_offset"], section["sh_size"]


@st.composite
def mutations(draw: st.DrawFn, size: int, hot: tuple[int, int]) -> list[tuple[int, int]]:
    """Byte overwrites, mostly in the first 64 bytes or in the ``hot`` span where the headers live."""
    start, length = hot
    position = st.one_of(
        st.integers(0, min(63, size - 1)),
        st.integers(start, min(start + length, size) - 1),
        st.integers(0, size - 1),
    )
    return draw(st.lists(st.tuples(position, st.integers(0, 255)), min_size=1, max_size=8))


def apply(data: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    out = bytearray(data)
    for position, value in edits:
        out[position] = value
    return bytes(out[:cut]) if cut is not None else bytes(out)


def test_mutated_fatbin_raises_only_fatbin_errors(cuda: CudaFixtures) -> None:
    data = cuda.fatbin.read_bytes()

    @FUZZ
    @given(edits=mutations(len(data), (0, 256)), cut=st.one_of(st.none(), st.integers(0, len(data))))
    def check(edits: list[tuple[int, int]], cut: int | None) -> None:
        with contextlib.suppress(FatbinFormatError):
            parse_fatbin(apply(data, edits, cut), "fuzz.fatbin")

    check()


def test_mutated_library_raises_only_format_errors(cuda: CudaFixtures) -> None:
    data = cuda.arch_specific_so.read_bytes()
    hot = fatbin_span(cuda.arch_specific_so)

    @FUZZ
    @given(edits=mutations(len(data), hot), cut=st.one_of(st.none(), st.integers(0, len(data))))
    def check(edits: list[tuple[int, int]], cut: int | None) -> None:
        with contextlib.suppress(FatbinFormatError, ElfFormatError):
            gpu_code_of_elf(apply(data, edits, cut))

    check()


def test_mutated_library_tail_raises_only_format_errors(cuda: CudaFixtures) -> None:
    # The section header table sits at the end of the file: hit it on purpose.
    data = cuda.rodata_so.read_bytes()

    @FUZZ
    @given(edits=mutations(len(data), (len(data) - 2048, 2048)))
    def check(edits: list[tuple[int, int]]) -> None:
        with contextlib.suppress(FatbinFormatError, ElfFormatError):
            gpu_code_of_elf(apply(data, edits, None))

    check()


def test_mutated_cubin_raises_only_elf_errors(cuda: CudaFixtures) -> None:
    data = cuda.cubin_sm120a.read_bytes()

    @FUZZ
    @given(
        edits=mutations(len(data), (len(data) - 1536, 1536)),
        cut=st.one_of(st.none(), st.integers(0, len(data))),
    )
    def check(edits: list[tuple[int, int]], cut: int | None) -> None:
        with contextlib.suppress(ElfFormatError):
            read_cubin(apply(data, edits, cut))

    check()
