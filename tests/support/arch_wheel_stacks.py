"""A fixture flashinfer stack in the provider layout: flashinfer-python 0.7.0, flashinfer-cubin 0.7.0, the
``flashinfer-jit-cache`` 0.7.0+cu130 shim pinning three providers, and the providers themselves.

As flashinfer builds them (flashinfer-ai/flashinfer ``flashinfer-jit-cache-provider/package_config.py``):
each provider is ``flashinfer-jit-cache-<tag>`` installing ``flashinfer_jit_cache/providers/<tag>/``, its
module built for that one target only (no PTX). The modules here are plain shared libraries (flashinfer
loads them on first use, not at import) whose ``.nv_fatbin`` sections hold nvcc-built SASS for
``sm_90a`` / ``sm_120f`` / ``sm_121a``. A second ``sm120f`` provider, 0.7.1+cu130, is for the
version-mismatch case; ``provider_sm121a_mislabelled`` is named sm121a but carries ``sm_90a`` code.
"""

from __future__ import annotations

from pathlib import Path

from support.cbuild import build_shared
from support.stacks import FATBIN_ASM, PLATFORM, PURE_TAG, build_fatbin
from support.wheelbuild import build_wheel

PROVIDER_GENCODES = {
    "sm90a": "arch=compute_90a,code=sm_90a",
    "sm120f": "arch=compute_120f,code=sm_120f",
    "sm121a": "arch=compute_121a,code=sm_121a",
}
VERSION = "0.7.0"
# the tag flashinfer's own jit-cache wheels carry (its cu130 page): filenames match the saved pages
JIT_TAG = f"cp39-abi3-{PLATFORM}"


def arch_wheel(out: Path, tag: str, version: str, code_for: str | None = None) -> Path:
    """``flashinfer-jit-cache-<tag> <version>``: one module with SASS for ``tag`` (or ``code_for``) alone."""
    d = out / f"{tag}-{version}"
    fatbin = build_fatbin(d, "norm", PROVIDER_GENCODES[code_for or tag])
    module = build_shared(d, "norm.so", FATBIN_ASM % fatbin + "\nint norm_marker(void) { return 1; }\n")
    root = f"flashinfer_jit_cache/providers/{tag}"
    files = {f"{root}/__init__.py": b"", f"{root}/jit_cache/norm/norm.so": module}
    return build_wheel(out / "wheels", f"flashinfer-jit-cache-{tag}", version, files, tag=JIT_TAG)


def build_arch_wheel_stack(out: Path) -> dict[str, Path]:
    """Wheels by key: ``fi``, ``cubin``, ``shim`` and ``provider_<tag>``, plus ``provider_sm120f_071``."""
    w = out / "wheels"
    local = f"{VERSION}+cu130"
    wheels = {
        "fi": build_wheel(
            w,
            "flashinfer-python",
            VERSION,
            {"flashinfer/__init__.py": b""},
            tag=PURE_TAG,
            requires_dist=["torch>=2.9"],
        ),
        "cubin": build_wheel(
            w, "flashinfer-cubin", VERSION, {"flashinfer_cubin/__init__.py": b""}, tag=PURE_TAG
        ),
        "shim": build_wheel(
            w,
            "flashinfer-jit-cache",
            local,
            {"flashinfer_jit_cache/__init__.py": b""},
            tag=JIT_TAG,
            requires_dist=[f"flashinfer-jit-cache-{tag}=={local}" for tag in PROVIDER_GENCODES],
        ),
    }
    for tag in PROVIDER_GENCODES:
        wheels[f"provider_{tag}"] = arch_wheel(out, tag, local)
    wheels["provider_sm120f_071"] = arch_wheel(out / "next", "sm120f", "0.7.1+cu130")
    wheels["provider_sm121a_mislabelled"] = arch_wheel(out / "wrong", "sm121a", local, code_for="sm90a")
    return wheels


_BUILT: dict[str, dict[str, Path]] = {}


def arch_wheel_stack(out: Path) -> dict[str, Path]:
    """Build once per process."""
    if "stack" not in _BUILT:
        _BUILT["stack"] = build_arch_wheel_stack(out)
    return _BUILT["stack"]
