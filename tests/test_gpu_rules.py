"""On a GPU host: abiprobe's GPU-code verdict for each fixture library agrees with what the real driver does.

Each fixture is a shared library built by nvcc for one set of ``-gencode`` targets (statically linked
cudart, as extension wheels usually are), exporting ``run_scale()``: it launches a kernel and returns the
CUDA runtime's error code (0 and a checked result when it ran). The verdict comes from abiprobe's own
fatbin reader and rules for the device's compute capability; the truth from loading the library and
launching, once as is and once with ``CUDA_DISABLE_PTX_JIT=1``: ``native`` runs both times, ``jit`` only
with the JIT, ``none`` never. Marked ``gpu``: run by hand on a GPU host, ``pytest -m gpu``.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.nvbuild import need_nvcc

from abiprobe.binary.cuda import gpu_code_of_elf
from abiprobe.model.cuda_arch import GpuArch, arch_verdict
from abiprobe.model.target import cuda_ptx_isa

pytestmark = pytest.mark.gpu

SOURCE = r"""
#include <cuda_runtime.h>
__global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }
extern "C" int run_scale(void) {
  float h[32];
  for (int i = 0; i < 32; i++) h[i] = (float)i;
  float* d = 0;
  cudaError_t e = cudaMalloc(&d, sizeof h);
  if (e != cudaSuccess) return 1000 + (int)e;
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  scale<<<1, 32>>>(d);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (e != cudaSuccess) return (int)e;
  for (int i = 0; i < 32; i++) if (h[i] != 2.0f * (float)i) return -1;
  return 0;
}
"""

# name -> the -gencode values of one fixture library
CASES: dict[str, tuple[str, ...]] = {
    "sm75": ("arch=compute_75,code=sm_75",),
    "sm80": ("arch=compute_80,code=sm_80",),
    "sm86": ("arch=compute_86,code=sm_86",),
    "sm89": ("arch=compute_89,code=sm_89",),
    "sm90": ("arch=compute_90,code=sm_90",),
    "sm90a": ("arch=compute_90a,code=sm_90a",),
    "sm100": ("arch=compute_100,code=sm_100",),
    "sm100a": ("arch=compute_100a,code=sm_100a",),
    "sm100f": ("arch=compute_100f,code=sm_100f",),
    "sm103a": ("arch=compute_103a,code=sm_103a",),
    "sm120": ("arch=compute_120,code=sm_120",),
    "sm120a": ("arch=compute_120a,code=sm_120a",),
    "sm120f": ("arch=compute_120f,code=sm_120f",),
    "sm121a": ("arch=compute_121a,code=sm_121a",),
    "ptx75": ("arch=compute_75,code=compute_75",),
    "ptx80": ("arch=compute_80,code=compute_80",),
    "ptx89": ("arch=compute_89,code=compute_89",),
    "ptx90": ("arch=compute_90,code=compute_90",),
    "ptx90a": ("arch=compute_90a,code=compute_90a",),
    "ptx100": ("arch=compute_100,code=compute_100",),
    "ptx100a": ("arch=compute_100a,code=compute_100a",),
    "ptx100f": ("arch=compute_100f,code=compute_100f",),
    "ptx120": ("arch=compute_120,code=compute_120",),
    "sm80+ptx80": ("arch=compute_80,code=[sm_80,compute_80]",),
    "sm89+ptx86": ("arch=compute_89,code=sm_89", "arch=compute_86,code=compute_86"),
    "sm120a+ptx120": ("arch=compute_120a,code=sm_120a", "arch=compute_120,code=compute_120"),
    "sm100+sm120+ptx120": ("arch=compute_100,code=sm_100", "arch=compute_120,code=[sm_120,compute_120]"),
    "arch-sm_120a": (),  # nvcc -arch sm_120a: what its shorthand embeds
    "arch-sm_90a": (),
}
SHORTHAND = {"arch-sm_120a": "sm_120a", "arch-sm_90a": "sm_90a"}


def _build(out_dir: Path, name: str) -> Path:
    out = out_dir / f"lib{name.replace('+', '_')}.so"
    if out.exists():
        return out
    src = out_dir / "scale.cu"
    targets = (
        ["-arch", SHORTHAND[name]] if name in SHORTHAND else [a for g in CASES[name] for a in ("-gencode", g)]
    )
    cmd = [need_nvcc(), "-shared", "-Xcompiler", "-fPIC", "-cudart", "static", *targets]
    subprocess.run([*cmd, "-o", str(out) + ".tmp", str(src)], check=True, capture_output=True, text=True)
    os.replace(str(out) + ".tmp", out)
    return out


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every case built once; ``ABIPROBE_GPU_FIXTURES`` names a folder that keeps them between runs."""
    kept = os.environ.get("ABIPROBE_GPU_FIXTURES")
    out_dir = Path(kept) if kept else tmp_path_factory.mktemp("gpu-rules")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "scale.cu").write_text(SOURCE)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = dict(zip(CASES, pool.map(lambda n: _build(out_dir, n), CASES), strict=True))
    return built


@dataclass(frozen=True)
class Device:
    arch: GpuArch
    driver_cuda: tuple[int, int]


@pytest.fixture(scope="module")
def device() -> Device:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        pytest.skip("no NVIDIA driver (libcuda.so.1) on this host: run on a GPU host")
    dev, major, minor, version = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        pytest.skip("the NVIDIA driver finds no GPU on this host")
    cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
    cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
    cuda.cuDriverGetVersion(ctypes.byref(version))
    return Device(GpuArch(major.value, minor.value), divmod(version.value // 10, 100))


def run_on_gpu(library: Path, jit: bool) -> int:
    """``run_scale()``'s return code in a fresh process (a CUDA context per run), JIT allowed or not."""
    env = {**os.environ, "CUDA_DISABLE_PTX_JIT": "0" if jit else "1", "CUDA_CACHE_DISABLE": "1"}
    code = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).run_scale())"
    done = subprocess.run(
        [sys.executable, "-c", code, str(library)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


@pytest.mark.parametrize("name", list(CASES))
def test_static_gpu_verdict_matches_the_driver(name: str, libraries: dict[str, Path], device: Device) -> None:
    # GIVEN a library built for one set of GPU targets, and abiprobe's verdict for this GPU
    entries = gpu_code_of_elf(libraries[name].read_bytes())
    verdict = arch_verdict(entries, device.arch, cuda_ptx_isa(device.driver_cuda))
    # WHEN its kernel is launched on the real GPU, with and without the driver's PTX JIT
    with_jit, without_jit = run_on_gpu(libraries[name], True), run_on_gpu(libraries[name], False)
    # THEN native runs either way, jit only through the JIT, none never (209: no kernel image)
    real = "native" if without_jit == 0 else ("jit" if with_jit == 0 else "none")
    carried = ", ".join(e.label() for e in entries)
    print(
        f"GPU-RULE {name}: carries [{carried}] predicted={verdict.status} real={real} "
        f"(codes {with_jit}/{without_jit}) on {device.arch}"
    )
    assert verdict.status == real, verdict.explanation
    if real == "none":
        assert with_jit in (209, 222, 218), with_jit  # no image / unsupported PTX / invalid PTX
