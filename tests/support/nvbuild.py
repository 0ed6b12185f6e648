"""Build real CUDA fixtures with nvcc: host libraries with fatbins, standalone cubins, an embedded fatbin.

nvcc is slow, so every fixture is built once per test session (cached by output directory), two at a
time, from one trivial kernel. Host libraries link the CUDA runtime dynamically to stay small.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from support.cbuild import CC
from support.tools import system_tool


def need_nvcc() -> str:
    """nvcc, part of the machine image: skips a test on a user's machine without it, fails it under CI."""
    return system_tool("nvcc", hint="install the CUDA toolkit and put its bin/ on PATH")


KERNEL = """\
__global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }
void launch_scale(float* x) { scale<<<1, 32>>>(x); }
"""

SHARED = ["-shared", "-Xcompiler", "-fPIC", "-cudart", "shared"]

# name -> (output file, nvcc arguments before "-o")
BUILDS: dict[str, tuple[str, list[str]]] = {
    "multi_so": (
        "libmulti.so",
        [
            *SHARED,
            "-gencode",
            "arch=compute_90,code=sm_90",
            "-gencode",
            "arch=compute_120,code=[sm_120,compute_120]",
        ],
    ),
    "arch_specific_so": ("libsm120a.so", [*SHARED, "-arch", "sm_120a"]),
    "family_so": ("libsm120f.so", [*SHARED, "-arch", "sm_120f"]),
    "compressed_so": (
        "libcompressed.so",
        [*SHARED, "-gencode", "arch=compute_120,code=[sm_120,compute_120]", "--compress-mode=size"],
    ),
    "rdc_so": ("librdc.so", [*SHARED, "-rdc=true", "-arch", "sm_90"]),
    "cubin_sm90": ("sm90.cubin", ["-cubin", "-arch", "sm_90"]),
    "cubin_sm120a": ("sm120a.cubin", ["-cubin", "-arch", "sm_120a"]),
    "cubin_sm120f": ("sm120f.cubin", ["-cubin", "-arch", "sm_120f"]),
    "fatbin": (
        "embedded.fatbin",
        [
            "-fatbin",
            "-gencode",
            "arch=compute_90,code=[sm_90a,lto_90]",
            "-gencode",
            "arch=compute_120,code=compute_120",
            "--compress-mode=speed",
        ],
    ),
}

# Data that starts with the fatbin magic but is no container: a lying size, and a garbage entry kind.
DECOYS = """\
__attribute__((aligned(8))) const unsigned char decoy_lying_size[24] = {
  0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0};
__attribute__((aligned(8))) const unsigned char decoy_garbage_entry[96] = {
  0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00, 0x40, 0, 0, 0, 0, 0, 0, 0,
  0x77, 0x77, 0x01, 0x01, 0x40, 0, 0, 0};
"""


@dataclass(frozen=True)
class CudaFixtures:
    """Paths of the built fixtures; ``rodata_so`` embeds ``fatbin`` as a C array in ``.rodata``."""

    multi_so: Path
    arch_specific_so: Path
    family_so: Path
    compressed_so: Path
    rdc_so: Path
    cubin_sm90: Path
    cubin_sm120a: Path
    cubin_sm120f: Path
    fatbin: Path
    rodata_so: Path


_BUILT: dict[Path, CudaFixtures] = {}


def _nvcc(source: Path, out: Path, args: list[str]) -> Path:
    cmd = [need_nvcc(), *args, "-o", str(out), str(source)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def embed_fatbin(out_dir: Path, fatbin: Path) -> Path:
    """A C shared object whose ``.rodata`` holds ``fatbin`` as an aligned array, plus two magic decoys."""
    data = fatbin.read_bytes()
    array = ", ".join(str(b) for b in data)
    source = out_dir / "rodata_fatbin.c"
    source.write_text(
        f"__attribute__((aligned(8))) const unsigned char embedded_fatbin[{len(data)}] = {{{array}}};\n"
        + DECOYS
        + "const unsigned char* fatbin_address(int i) {\n"
        "  return i == 0 ? embedded_fatbin : i == 1 ? decoy_lying_size : decoy_garbage_entry;\n}\n"
    )
    out = out_dir / "librodata.so"
    subprocess.run(
        [CC, "-shared", "-fPIC", "-O0", "-o", str(out), str(source)], check=True, capture_output=True
    )
    return out


def cuda_fixtures(out_dir: Path) -> CudaFixtures:
    """Build (once per directory and process) every CUDA fixture; needs nvcc on PATH."""
    if out_dir in _BUILT:
        return _BUILT[out_dir]
    need_nvcc()
    out_dir.mkdir(parents=True, exist_ok=True)
    source = out_dir / "scale.cu"
    source.write_text(KERNEL)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            name: pool.submit(_nvcc, source, out_dir / filename, args)
            for name, (filename, args) in BUILDS.items()
        }
        paths = {name: future.result() for name, future in futures.items()}
    fixtures = CudaFixtures(**paths, rodata_so=embed_fatbin(out_dir, paths["fatbin"]))
    _BUILT[out_dir] = fixtures
    return fixtures
