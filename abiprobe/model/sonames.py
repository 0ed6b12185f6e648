"""CUDA sonames: which CUDA major a soname implies and which wheel provides it (a pure table)."""

from __future__ import annotations

import re

# Libraries whose soname major follows the CUDA toolkit major (libcudart.so.13 -> CUDA 13).
# Sources: the file lists of the nvidia-* runtime wheels (CUDA 12: nvidia/<component>/lib/, CUDA 13:
# nvidia/cu13/lib/, as installed with torch 2.11+cu130: libcudart.so.13, libnvrtc.so.13, libcupti.so.13,
# libnvJitLink.so.13, libcublas.so.13, libcublasLt.so.13, libcufft.so.12, libcusolver.so.12,
# libcusparse.so.12, libcurand.so.10, libcufile.so.0).
_TOOLKIT_LIBS: dict[str, str] = {
    "libcudart": "nvidia-cuda-runtime",
    "libnvrtc": "nvidia-cuda-nvrtc",
    "libnvrtc-builtins": "nvidia-cuda-nvrtc",
    "libcupti": "nvidia-cuda-cupti",
    "libnvJitLink": "nvidia-nvjitlink",
    "libcublas": "nvidia-cublas",
    "libcublasLt": "nvidia-cublas",
}
# Libraries with their own major numbering: soname major -> CUDA major, only where the major tells the
# CUDA release apart. libcusparse.so.12 (CUDA 12 and 13), libcurand.so.10, libcufile.so.0 and
# libnvToolsExt.so.1 are shared by several CUDA releases, so they say nothing about the CUDA major.
_OWN_NUMBERING: dict[str, tuple[str, dict[int, int]]] = {
    "libcufft": ("nvidia-cufft", {10: 11, 11: 12, 12: 13}),
    "libcufftw": ("nvidia-cufft", {10: 11, 11: 12, 12: 13}),
    "libcusolver": ("nvidia-cusolver", {12: 13}),
    "libcusparse": ("nvidia-cusparse", {11: 11}),
    "libcurand": ("nvidia-curand", {}),
    "libcufile": ("nvidia-cufile", {}),
    "libnvToolsExt": ("nvidia-nvtx", {}),
    "libnpp": ("nvidia-npp", {12: 12, 13: 13}),
}
_CUDA_SUFFIXED: dict[str, str] = {
    "libcudnn": "nvidia-cudnn",
    "libnccl": "nvidia-nccl",
    "libcusparseLt": "nvidia-cusparselt",
    "libnvshmem_host": "nvidia-nvshmem",
}

_SONAME = re.compile(r"^(?P<stem>lib[A-Za-z0-9_+-]+?)\.so\.(?P<major>\d+)(?:\.\d+)*$")


def split_soname(soname: str) -> tuple[str, int] | None:
    """``libcudart.so.13`` -> ``("libcudart", 13)``; None for names without a numeric major."""
    m = _SONAME.match(soname)
    if not m:
        return None
    return m.group("stem"), int(m.group("major"))


def cuda_major_of_soname(soname: str) -> int | None:
    """The CUDA major a soname implies, or None when the soname says nothing about CUDA."""
    parts = split_soname(soname)
    if parts is None:
        return None
    stem, major = parts
    if stem in _TOOLKIT_LIBS:
        return major
    if stem in _OWN_NUMBERING:
        return _OWN_NUMBERING[stem][1].get(major)
    return None


def providing_wheel(soname: str, cuda_major: int | None = None) -> str | None:
    """The distribution name that ships ``soname`` for a CUDA major (cu13 wheels are unsuffixed)."""
    parts = split_soname(soname)
    if parts is None:
        return None
    stem, major = parts
    base: str | None = None
    implied: int | None = None
    if stem in _TOOLKIT_LIBS:
        base, implied = _TOOLKIT_LIBS[stem], major
    elif stem in _OWN_NUMBERING:
        base, implied = _OWN_NUMBERING[stem][0], _OWN_NUMBERING[stem][1].get(major)
    elif stem in _CUDA_SUFFIXED:
        base, implied = _CUDA_SUFFIXED[stem], cuda_major
    if base is None:
        return None
    cuda = implied if implied is not None else cuda_major
    if cuda is None:
        return base
    if stem in _CUDA_SUFFIXED or cuda < 13:
        return f"{base}-cu{cuda}"
    return base


def is_driver_library(soname: str) -> bool:
    """libcuda.so.1 and friends come from the GPU driver, never from a wheel."""
    return soname in {"libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1"}
