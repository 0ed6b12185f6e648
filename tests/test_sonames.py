"""CUDA sonames: the CUDA major they imply, from the file lists of real CUDA 12 and CUDA 13 runtime wheels."""

from __future__ import annotations

import pytest

from abiprobe.model.sonames import cuda_major_of_soname, providing_wheel


@pytest.mark.parametrize(
    ("soname", "major"),
    [
        ("libcudart.so.13", 13),
        ("libcudart.so.12", 12),
        ("libnvrtc.so.12", 12),
        ("libcublas.so.13", 13),
        ("libcublasLt.so.12", 12),
        ("libcufft.so.12", 13),  # cufft 12 ships with CUDA 13
        ("libcufft.so.11", 12),
        ("libcusolver.so.12", 13),
        ("libcusolver.so.11", None),  # CUDA 11 and 12 both
        ("libcusparse.so.12", None),  # CUDA 12 and 13 both
        ("libcurand.so.10", None),
        ("libcufile.so.0", None),
        ("libcudnn.so.9", None),
        ("libc.so.6", None),
        ("libfoo.so", None),
    ],
)
def test_cuda_major_only_where_the_soname_tells_the_release_apart(soname: str, major: int | None) -> None:
    assert cuda_major_of_soname(soname) == major


def test_a_cuda13_torch_library_needs_only_cuda13_sonames() -> None:
    # GIVEN the CUDA sonames torch 2.15's libtorch_cuda.so needs (read from the real wheel)
    needed = [
        "libcudart.so.13",
        "libcusparse.so.12",
        "libcufft.so.12",
        "libcufile.so.0",
        "libcusparseLt.so.0",
        "libnccl.so.2",
        "libcurand.so.10",
        "libcublas.so.13",
        "libcublasLt.so.13",
        "libcudnn.so.9",
    ]
    # THEN every one that implies a CUDA major implies 13
    assert {m for n in needed if (m := cuda_major_of_soname(n)) is not None} == {13}


@pytest.mark.parametrize(
    ("soname", "cuda", "wheel"),
    [
        ("libnvrtc.so.12", 13, "nvidia-cuda-nvrtc-cu12"),
        ("libnvrtc.so.13", 13, "nvidia-cuda-nvrtc"),
        ("libcudnn.so.9", 13, "nvidia-cudnn-cu13"),
        ("libcusparse.so.12", 13, "nvidia-cusparse"),
        ("libcusparse.so.12", 12, "nvidia-cusparse-cu12"),
        ("libc.so.6", 13, None),
    ],
)
def test_providing_wheel(soname: str, cuda: int, wheel: str | None) -> None:
    assert providing_wheel(soname, cuda) == wheel
