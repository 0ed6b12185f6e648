"""Fatbin, cubin and SM-rule tests over real nvcc 13 builds (see tests/support/nvbuild.py)."""

from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest
from elftools.elf.elffile import ELFFile
from support.cbuild import build_shared
from support.nvbuild import CudaFixtures, cuda_fixtures, need_nvcc

from abiprobe.binary.bounded import ByteSource
from abiprobe.binary.cuda import gpu_code_of_elf, parse_fatbin, read_cubin
from abiprobe.errors import ElfFormatError, FatbinFormatError, UsageError
from abiprobe.model.cuda_arch import GpuArch, arch_verdict, parse_arch
from abiprobe.model.facts import GpuCode

Row = tuple[str, int, str, str | None, str | None, str]


@pytest.fixture(scope="session")
def cuda(tmp_path_factory: pytest.TempPathFactory) -> CudaFixtures:
    need_nvcc()
    return cuda_fixtures(tmp_path_factory.getbasetemp() / "nvbuild")


def rows(codes: Sequence[GpuCode]) -> list[Row]:
    return [(c.kind, c.sm, c.variant, c.ptx_isa, c.compressed, c.container) for c in codes]


def section_bytes(path: Path, name: str) -> tuple[int, bytes]:
    with path.open("rb") as f:
        section = ELFFile(f).get_section_by_name(name)
        assert section is not None
        return section["sh_offset"], section.data()


# --- fatbins in host libraries -------------------------------------------------------------------


def test_gencode_list_gives_both_containers_entries(cuda: CudaFixtures) -> None:
    # GIVEN a library built for sm_90 and sm_120 SASS plus compute_120 PTX
    # WHEN its GPU code is listed
    codes = gpu_code_of_elf(cuda.multi_so.read_bytes())
    # THEN the device-link container (SASS only) and the kernel container both appear, in file order
    assert rows(codes) == [
        ("sass", 90, "", None, None, ".nv_fatbin"),
        ("sass", 120, "", None, None, ".nv_fatbin"),
        ("sass", 90, "", None, None, ".nv_fatbin"),
        ("sass", 120, "", None, None, ".nv_fatbin"),
        ("ptx", 120, "", "9.0", "zstd", ".nv_fatbin"),
    ]


def test_arch_specific_build_is_flagged_a_and_carries_plain_ptx(cuda: CudaFixtures) -> None:
    # GIVEN `nvcc -arch sm_120a` (nvcc 13 also embeds plain compute_120 PTX)
    codes = gpu_code_of_elf(cuda.arch_specific_so.read_bytes())
    assert rows(codes) == [
        ("sass", 120, "a", None, None, ".nv_fatbin"),
        ("ptx", 120, "", "9.0", "zstd", ".nv_fatbin"),
        ("sass", 120, "a", None, None, ".nv_fatbin"),
        ("ptx", 120, "a", "9.0", "zstd", ".nv_fatbin"),
    ]


def test_family_build_is_flagged_f(cuda: CudaFixtures) -> None:
    codes = gpu_code_of_elf(cuda.family_so.read_bytes())
    assert rows(codes) == [
        ("sass", 120, "f", None, None, ".nv_fatbin"),
        ("ptx", 120, "", "9.0", "zstd", ".nv_fatbin"),
        ("sass", 120, "f", None, None, ".nv_fatbin"),
        ("ptx", 120, "f", "9.0", "zstd", ".nv_fatbin"),
    ]


def test_compress_mode_size_compresses_sass_too(cuda: CudaFixtures) -> None:
    codes = gpu_code_of_elf(cuda.compressed_so.read_bytes())
    assert rows(codes) == [
        ("sass", 120, "", None, "zstd", ".nv_fatbin"),
        ("sass", 120, "", None, "zstd", ".nv_fatbin"),
        ("ptx", 120, "", "9.0", "zstd", ".nv_fatbin"),
    ]


def test_rdc_build_lists_the_relocatable_fatbin(cuda: CudaFixtures) -> None:
    codes = gpu_code_of_elf(cuda.rdc_so.read_bytes())
    assert rows(codes) == [
        ("sass", 90, "", None, None, ".nv_fatbin"),
        ("sass", 90, "", None, "zstd", "__nv_relfatbin"),
        ("ptx", 90, "", "9.0", "zstd", "__nv_relfatbin"),
    ]


def test_fatbin_embedded_in_rodata_is_found_and_magic_decoys_are_rejected(cuda: CudaFixtures) -> None:
    # GIVEN a C library holding an nvcc -fatbin (sm_90a, lto_90, compute_120, LZ4) and two fake containers
    codes = gpu_code_of_elf(cuda.rodata_so.read_bytes())
    # THEN only the real container's entries are reported
    assert rows(codes) == [
        ("sass", 90, "a", None, None, ".rodata"),
        ("ltoir", 90, "", None, "lz4", ".rodata"),
        ("ptx", 120, "", "9.0", "lz4", ".rodata"),
    ]


def test_stream_and_bytes_give_the_same_entries(cuda: CudaFixtures) -> None:
    with cuda.multi_so.open("rb") as stream:
        from_stream = gpu_code_of_elf(stream)
    assert from_stream == gpu_code_of_elf(cuda.multi_so.read_bytes())


def test_entry_size_is_the_payload_size(cuda: CudaFixtures) -> None:
    # GIVEN the stand-alone sm_90 cubin and the sm_90 kernel entry of a library built the same way
    kernel_entry = gpu_code_of_elf(cuda.multi_so.read_bytes())[2]
    # THEN the uncompressed entry is as large as the cubin, padded to 8
    assert kernel_entry.size == (cuda.cubin_sm90.stat().st_size + 7) // 8 * 8


def test_nvcc_fatbin_file_parses_directly(cuda: CudaFixtures) -> None:
    codes = parse_fatbin(cuda.fatbin.read_bytes(), "embedded.fatbin")
    assert [c.label() for c in codes] == ["sm_90a", "lto_90", "compute_120"]


def test_memoryview_input_parses_like_bytes(cuda: CudaFixtures) -> None:
    data = cuda.fatbin.read_bytes()
    assert parse_fatbin(memoryview(data), "m") == parse_fatbin(data, "m")


def test_library_without_gpu_code_has_no_entries(tmp_path: Path) -> None:
    lib = build_shared(tmp_path, "libplain.so", "int f(void) { return 1; }\n")
    assert gpu_code_of_elf(lib.read_bytes()) == ()


# --- standalone cubins -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "sm", "variant"),
    [("cubin_sm90", 90, ""), ("cubin_sm120a", 120, "a"), ("cubin_sm120f", 120, "f")],
)
def test_cuda13_cubin_sm_and_variant(cuda: CudaFixtures, name: str, sm: int, variant: str) -> None:
    path: Path = getattr(cuda, name)
    code = read_cubin(path.read_bytes())
    assert (code.kind, code.sm, code.variant, code.container, code.size) == (
        "sass",
        sm,
        variant,
        "<cubin>",
        path.stat().st_size,
    )


def test_cubin_through_gpu_code_of_elf_is_its_single_entry(cuda: CudaFixtures) -> None:
    assert gpu_code_of_elf(cuda.cubin_sm120a.read_bytes()) == (read_cubin(cuda.cubin_sm120a.read_bytes()),)


def test_arch_specific_cubin_is_found_from_nv_compat_without_tkinfo(cuda: CudaFixtures) -> None:
    # GIVEN an sm_120a cubin whose toolkit note no longer names the -arch
    data = bytearray(cuda.cubin_sm120a.read_bytes())
    offset, note = section_bytes(cuda.cubin_sm120a, ".note.nv.tkinfo")
    data[offset : offset + len(note)] = note.replace(b"-arch", b"-xxxx")
    # THEN the .nv.compat attribute still marks it `a`
    assert read_cubin(bytes(data)).variant == "a"


def test_abi_version_7_cubin_reads_sm_from_low_byte(cuda: CudaFixtures) -> None:
    # GIVEN an older-layout cubin header (OS/ABI 0x33, ABI version 7, e_flags sm | 0x800 for `a`)
    data = bytearray(cuda.cubin_sm90.read_bytes())
    data[7], data[8] = 0x33, 7
    struct.pack_into("<I", data, 0x30, 0x005A0000 | 0x800 | 90)
    assert read_cubin(bytes(data)) == GpuCode(
        kind="sass", sm=90, variant="a", container="<cubin>", size=len(data)
    )


def test_host_library_is_not_a_cubin(cuda: CudaFixtures) -> None:
    with pytest.raises(ElfFormatError, match="not a cubin"):
        read_cubin(cuda.multi_so.read_bytes())


# --- hostile input ---------------------------------------------------------------------------------


def fatbin_bytes(cuda: CudaFixtures) -> bytes:
    return cuda.fatbin.read_bytes()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b"", "no fatbin container"),
        (lambda b: bytes(64), "no fatbin container"),
        (lambda b: b"garbage!" * 8, "no fatbin magic"),
        (lambda b: b[:40], "claims"),
        (lambda b: b[:12], "truncated fatbin container header"),
        (lambda b: b[:4] + struct.pack("<H", 2) + b[6:], "has version 2"),
        (lambda b: b[:8] + struct.pack("<Q", 1 << 40) + b[16:], "claims"),
        (lambda b: b[: 16 + 8] + struct.pack("<Q", 1 << 40) + b[32:], "past its container's end"),
        (lambda b: b[: 16 + 4] + struct.pack("<I", 8) + b[24:], "header size 0x8"),
    ],
    ids=[
        "empty",
        "zeros",
        "garbage",
        "truncated",
        "short-header",
        "version",
        "container-size",
        "entry-size",
        "entry-header-size",
    ],
)
def test_broken_fatbin_raises_one_format_error(cuda: CudaFixtures, mutate: object, message: str) -> None:
    data = mutate(fatbin_bytes(cuda))  # type: ignore[operator]
    with pytest.raises(FatbinFormatError, match=message) as info:
        parse_fatbin(data, "t.fatbin")
    assert "\n" not in str(info.value)


def test_corrupt_nv_fatbin_section_raises_fatbin_error(cuda: CudaFixtures) -> None:
    data = bytearray(cuda.multi_so.read_bytes())
    offset, _ = section_bytes(cuda.multi_so, ".nv_fatbin")
    data[offset : offset + 4] = b"\xde\xad\xbe\xef"
    with pytest.raises(FatbinFormatError, match=r"\.nv_fatbin: no fatbin magic at 0x0"):
        gpu_code_of_elf(bytes(data))


@pytest.mark.parametrize(
    ("cut", "message"), [(10, "not an ELF"), (40, "truncated ELF"), (-200, "section header table")]
)
def test_truncated_library_raises_elf_error(cuda: CudaFixtures, cut: int, message: str) -> None:
    data = cuda.multi_so.read_bytes()
    with pytest.raises(ElfFormatError, match=message):
        gpu_code_of_elf(data[:cut])


def with_section_field(path: Path, name: str, field: str, value: int) -> bytes:
    """The file's bytes with one field (sh_offset or sh_size) of section ``name``'s header replaced."""
    data = bytearray(path.read_bytes())
    with path.open("rb") as f:
        elf = ELFFile(f)
        index = next(i for i, s in enumerate(elf.iter_sections()) if s.name == name)
        header_at = elf["e_shoff"] + index * elf["e_shentsize"]
    struct.pack_into("<Q", data, header_at + {"sh_offset": 24, "sh_size": 32}[field], value)
    return bytes(data)


def test_every_bounded_read_past_its_end_raises_never_returns_short(cuda: CudaFixtures) -> None:
    # GIVEN a real library and the window its .nv_fatbin section is read through
    data = cuda.multi_so.read_bytes()
    offset, section = section_bytes(cuda.multi_so, ".nv_fatbin")
    src = ByteSource(data, "x.so")
    read = src.window(offset, len(section), "section .nv_fatbin")
    assert read(0, 16) == section[:16]
    # WHEN a read runs past the window's end, or past the file's, THEN the same kind of error, never b""
    with pytest.raises(ElfFormatError) as past_window:
        read(len(section) - 4, 16)
    assert str(past_window.value) == (
        f"x.so: truncated ELF: 16 bytes at {len(section) - 4:#x} run past the end of section .nv_fatbin"
        f" ({len(section)} bytes)"
    )
    with pytest.raises(ElfFormatError, match=r"^x\.so: truncated ELF: tail runs past end of file$"):
        src.read(len(data) - 4, 16, "tail")


def test_fatbin_section_past_the_end_is_one_labelled_elf_error(cuda: CudaFixtures) -> None:
    # GIVEN a library whose .nv_fatbin header claims more bytes than the file holds
    data = with_section_field(cuda.multi_so, ".nv_fatbin", "sh_size", cuda.multi_so.stat().st_size)
    # WHEN its GPU code is read THEN the bounded reader refuses, naming the file and the section
    with pytest.raises(ElfFormatError) as info:
        gpu_code_of_elf(data, "x.so")
    assert str(info.value) == "x.so: truncated ELF: section .nv_fatbin runs past end of file"


def test_cubin_note_past_the_end_reads_like_any_elf_table(cuda: CudaFixtures) -> None:
    # GIVEN an sm_120a cubin (ABI version 8: its variant comes from .note.nv.tkinfo) whose note lies
    # past the file's end
    size = cuda.cubin_sm120a.stat().st_size
    data = with_section_field(cuda.cubin_sm120a, ".note.nv.tkinfo", "sh_offset", size)
    # THEN the error has the same shape as every ELF reader's: file, kind, what, where
    with pytest.raises(ElfFormatError) as info:
        read_cubin(data, "k.cubin")
    assert str(info.value) == "k.cubin: truncated ELF: section .note.nv.tkinfo runs past end of file"


def test_fatbin_cut_inside_its_first_entry_is_refused_by_its_container_size(cuda: CudaFixtures) -> None:
    # GIVEN a standalone fatbin cut inside its first entry header
    data = cuda.fatbin.read_bytes()[: 16 + 20]
    # THEN the container header, read whole, claims more than remains
    with pytest.raises(FatbinFormatError, match=r"^t\.fatbin: fatbin container at 0x0 claims \d+ bytes"):
        parse_fatbin(data, "t.fatbin")


def test_corrupt_fatbin_in_a_library_names_the_library(cuda: CudaFixtures) -> None:
    data = bytearray(cuda.multi_so.read_bytes())
    offset, _ = section_bytes(cuda.multi_so, ".nv_fatbin")
    data[offset : offset + 4] = b"\xde\xad\xbe\xef"
    with pytest.raises(FatbinFormatError) as info:
        gpu_code_of_elf(bytes(data), "x.so")
    assert str(info.value) == "x.so: .nv_fatbin: no fatbin magic at 0x0 (found 0xefbeadde)"


def test_hostile_library_on_the_command_line_is_one_line(cuda: CudaFixtures, tmp_path: Path) -> None:
    # GIVEN the library with the oversized .nv_fatbin, on disk
    bad = tmp_path / "bad.so"
    bad.write_bytes(with_section_field(cuda.multi_so, ".nv_fatbin", "sh_size", 1 << 40))
    # WHEN the real command line inspects it THEN one readable line, no traceback, exit 1
    proc = subprocess.run(
        [sys.executable, "-m", "abiprobe", "inspect", str(bad)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1, proc.stderr
    expected = f"abiprobe: error: {bad}: truncated ELF: section .nv_fatbin runs past end of file"
    assert proc.stderr.strip() == expected


# --- architectures and rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "arch"),
    [
        ("sm120", GpuArch(12, 0)),
        ("sm_120", GpuArch(12, 0)),
        ("12.0", GpuArch(12, 0)),
        ("120", GpuArch(12, 0)),
        ("sm_120a", GpuArch(12, 0, "a")),
        ("sm_90a", GpuArch(9, 0, "a")),
        ("compute_120", GpuArch(12, 0)),
        ("12.1", GpuArch(12, 1)),
        ("sm_86", GpuArch(8, 6)),
        ("SM_100F", GpuArch(10, 0, "f")),
    ],
)
def test_parse_arch(text: str, arch: GpuArch) -> None:
    assert parse_arch(text) == arch


def test_arch_cc_is_major_minor() -> None:
    assert parse_arch("sm_121").cc == (12, 1)


@pytest.mark.parametrize("text", ["", "sm_", "hopper", "sm_1200", "12.0b"])
def test_unknown_arch_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="unknown GPU architecture"):
        parse_arch(text)


def sass(sm: int, variant: str = "") -> GpuCode:
    return GpuCode(kind="sass", sm=sm, variant=variant)  # type: ignore[arg-type]


def ptx(sm: int, variant: str = "", isa: str = "9.0") -> GpuCode:
    return GpuCode(kind="ptx", sm=sm, variant=variant, ptx_isa=isa)  # type: ignore[arg-type]


RULES = [
    # target, entry, status
    ("12.0", sass(120), "native"),
    ("12.0", sass(120, "a"), "native"),
    ("12.0", sass(120, "f"), "native"),
    ("12.0", sass(121), "none"),
    ("12.0", sass(90), "none"),
    ("12.0", ptx(120), "jit"),
    ("12.0", ptx(90), "jit"),
    ("12.0", ptx(121), "none"),
    ("12.1", sass(120), "native"),
    ("12.1", sass(120, "f"), "native"),
    ("12.1", sass(120, "a"), "none"),
    ("12.1", ptx(120, "a"), "none"),
    ("12.1", ptx(120, "f"), "jit"),
    ("9.0", sass(90, "a"), "native"),
    ("9.0", sass(80), "none"),
    ("9.0", sass(100, "a"), "none"),
    ("8.6", sass(80), "native"),
    ("8.0", sass(86), "none"),
    ("10.3", sass(100, "f"), "native"),
    ("10.3", sass(100, "a"), "none"),
    ("10.0", ptx(100, "a"), "jit"),
    ("9.0", GpuCode(kind="ltoir", sm=90), "none"),
]


@pytest.mark.parametrize(("target", "entry", "status"), RULES, ids=[f"{t}-{e.label()}" for t, e, _ in RULES])
def test_arch_rule(target: str, entry: GpuCode, status: str) -> None:
    assert arch_verdict([entry], parse_arch(target)).status == status


def test_native_wins_over_jit_and_names_the_deciding_sass() -> None:
    verdict = arch_verdict([ptx(90), sass(120), sass(90)], parse_arch("12.0"))
    assert (verdict.status, verdict.deciding, verdict.explanation) == (
        "native",
        (sass(120),),
        "SASS sm_120 runs natively on 12.0",
    )


def test_object_without_gpu_code_is_its_own_case() -> None:
    assert arch_verdict([], parse_arch("12.0")).status == "no_gpu_code"


def test_ptx_newer_than_the_driver_is_refused() -> None:
    verdict = arch_verdict([sass(90), ptx(120, isa="9.0")], parse_arch("12.0"), max_ptx_isa="8.8")
    assert (verdict.status, verdict.explanation) == (
        "none",
        "nothing runs on 12.0: carries sm_90, compute_120; "
        "its PTX (ISA 9.0) is newer than the driver's ISA 8.8",
    )


def test_ptx_within_the_driver_isa_jits() -> None:
    assert arch_verdict([ptx(120, isa="8.8")], parse_arch("12.0"), max_ptx_isa="9.0").status == "jit"


def test_lto_ir_alone_is_explained() -> None:
    verdict = arch_verdict([GpuCode(kind="ltoir", sm=120)], parse_arch("12.0"))
    assert verdict.explanation.endswith("LTO-IR needs nvJitLink at run time and is not loadable by itself")


def test_real_sm120a_build_jits_on_12_1_through_its_plain_ptx(cuda: CudaFixtures) -> None:
    # GIVEN nvcc 13's `-arch sm_120a` output, WHEN judged for a 12.1 GPU (GB10)
    verdict = arch_verdict(gpu_code_of_elf(cuda.arch_specific_so.read_bytes()), parse_arch("12.1"))
    # THEN the sm_120a SASS does not run but the plain compute_120 PTX does, through the JIT
    assert (verdict.status, [c.label() for c in verdict.deciding]) == ("jit", ["compute_120"])


def test_two_digit_number_below_30_is_ambiguous() -> None:
    with pytest.raises(UsageError, match=r"ambiguous GPU architecture '12': write 12\.0 or sm_120"):
        parse_arch("12")


# --- tools/compare_cuobjdump.py over output captured from cuobjdump 13.0 on an H200 host ---------------

CAPTURED_SM120F = """\
ELF file    1: libsm120f.1.sm_120.cubin
ELF file    2: libsm120f.2.sm_120.cubin
PTX file    1: libsm120f.1.sm_120.ptx
PTX file    2: libsm120f.2.sm_120f.ptx
"""
CAPTURED_RDC = "ELF file    1: librdc.1.sm_90.cubin\n"


@pytest.fixture(scope="module")
def compare_tool() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "tools" / "compare_cuobjdump.py"
    spec = importlib.util.spec_from_file_location("compare_cuobjdump", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_cuobjdump_listing_counts_per_kind_sm_and_variant(compare_tool: ModuleType) -> None:
    assert compare_tool.parse_listing(CAPTURED_SM120F) == {
        ("sass", 120, ""): 2,
        ("ptx", 120, ""): 1,
        ("ptx", 120, "f"): 1,
    }


def test_family_entries_agree_with_cuobjdumps_plain_names(
    cuda: CudaFixtures, compare_tool: ModuleType
) -> None:
    # GIVEN our sm_120f entries and cuobjdump's listing, which names the SASS sm_120 and one PTX sm_120f
    ours = compare_tool.count_ours(gpu_code_of_elf(cuda.family_so.read_bytes()))
    comparison = compare_tool.compare(ours, compare_tool.parse_listing(CAPTURED_SM120F))
    # THEN they agree once family entries are folded into plain ones
    assert (
        comparison.agree,
        [(r["entry"], r["ours"], r["ours_family"], r["cuobjdump"]) for r in comparison.rows],
    ) == (True, [("sm_120", 2, 2, 2), ("compute_120", 2, 1, 2)])


def test_relocatable_fatbin_is_outside_cuobjdumps_view(cuda: CudaFixtures, compare_tool: ModuleType) -> None:
    ours = compare_tool.count_ours(gpu_code_of_elf(cuda.rdc_so.read_bytes()))
    assert compare_tool.compare(ours, compare_tool.parse_listing(CAPTURED_RDC)).agree


def test_a_missing_entry_disagrees(cuda: CudaFixtures, compare_tool: ModuleType) -> None:
    ours = compare_tool.count_ours(gpu_code_of_elf(cuda.family_so.read_bytes()))
    assert not compare_tool.compare(ours, compare_tool.parse_listing(CAPTURED_SM120F.split("PTX")[0])).agree


def test_tool_exits_0_with_a_table_when_cuobjdump_agrees(
    cuda: CudaFixtures, compare_tool: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a stand-in cuobjdump that replays the captured listing for the sm_120f library
    fake = tmp_path / "cuobjdump"
    elf, ptx = CAPTURED_SM120F.split("PTX file    1")
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = --list-elf ]; then printf "{elf}"; else printf "PTX file    1{ptx}"; fi\n'
    )
    fake.chmod(0o755)
    out = tmp_path / "cmp.json"
    # WHEN the tool runs
    code = compare_tool.main([str(cuda.family_so), "--cuobjdump", str(fake), "--json", str(out)])
    # THEN it agrees, says how sm_XXf is printed, and writes the JSON
    printed = capsys.readouterr().out
    assert (code, "AGREE" in printed, "prints sm_XXf entries as sm_XX" in printed) == (0, True, True)
    assert json.loads(out.read_text())["agree"] is True
