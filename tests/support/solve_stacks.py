"""A fixture *stack* for solve tests: torch-like versions, kernels built against each, flashinfer groups.

Real wheels with real ELF objects (for the running interpreter's tag):

- torch 2.8.0 (``c10_cuda_check_implementation(int, ...)``) and 2.9.0 (``unsigned int``), both pinning
  ``nvidia-cuda-runtime==13.0.96``; torch 2.9.0+cu128 (CUDA 12 by label), torch 2.10.0rc1 (pre-release).
- sgl-kernel 0.3.0 built against torch 2.8.0; sglang-kernel 0.4.0 built against 2.9.0 with sm_120 SASS;
  sglang-kernel 0.4.1 unlabelled but needing ``libcudart.so.12``; sglang-kernel 0.4.2 with only
  ``sm_100a`` code (an arch-specific-only build); sglang-kernel 0.4.3 (served yanked).
- flashinfer-python 0.5.3 (requires torch>=2.9) + cubin 0.5.3 + jit-cache 0.5.3+cu130 / +cu128;
  flashinfer-python 0.5.2 + cubin 0.5.2 (no jit-cache).

Expected newest passing set: torch 2.9.0, sglang-kernel 0.4.0, flashinfer 0.5.3 with both companions;
flashinfer 0.5.3 also requires ``tinydep>=1.0,<3`` (2.0 wins, and brings ``tinyextra[fast]`` -> ``tinyfast``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.stacks import (
    ABI3_TAG,
    C10_SRC,
    CP_TAG,
    EXT_SUFFIX,
    FATBIN_ASM,
    PURE_TAG,
    PY_INCLUDE,
    PY_TAG,
    TORCH_C_SRC,
    TORCH_CPU_SRC,
    TORCH_INIT,
    _module,
    _stub,
    _torch,
    build_fatbin,
)
from support.wheelbuild import build_wheel

C10_DECL = (
    "namespace c10 { namespace cuda { void c10_cuda_check_implementation(%s, const char*, const char*, int, "
    'bool); } }\nextern "C" int cudaRuntimeGetVersion(int*);\n'
)
C10_CALL = (
    'c10::cuda::c10_cuda_check_implementation(0, "f", "g", 1, false); int v; cudaRuntimeGetVersion(&v);'
)


@dataclass(frozen=True)
class SolveStack:
    """Built wheels by key and the options to serve them with (``yanked`` keys)."""

    root: Path
    wheels: dict[str, Path]
    yanked: frozenset[str]


def _kernel(
    w: Path,
    out: Path,
    name: str,
    version: str,
    c10: Path,
    cudart: Path,
    *,
    unsigned: bool,
    requires: list[str],
    gencode: str | None = None,
) -> Path:
    d = out / f"{name}-{version}"
    decls = C10_DECL % ("unsigned int" if unsigned else "int")
    if gencode is not None:
        decls += FATBIN_ASM % build_fatbin(d, "gpu", gencode)
    ops = _module(
        d, "common_ops.abi3.so", "common_ops", cxx=True, link=(c10, cudart), decls=decls, body=C10_CALL
    )
    files = {
        "sgl_kernel/__init__.py": b"import torch  # noqa: F401\nfrom sgl_kernel import common_ops\n",
        "sgl_kernel/common_ops.abi3.so": ops,
    }
    return build_wheel(w, name, version, files, tag=ABI3_TAG, requires_dist=requires)


def build_solve_stack(out: Path) -> SolveStack:
    w = out / "wheels"
    wheels: dict[str, Path] = {}
    wheels["torch_28"], c10_28, _ = _torch(out / "t28", "2.8.0", unsigned=False, aoti=False)
    wheels["torch_29"], c10_29, _ = _torch(out / "t29", "2.9.0", unsigned=True, aoti=True)
    for key in ("torch_28", "torch_29"):
        moved = w / wheels[key].name
        w.mkdir(parents=True, exist_ok=True)
        shutil.copy(wheels[key], moved)
        wheels[key] = moved
    wheels["torch_29_cu128"] = build_wheel(w, "torch", "2.9.0+cu128", {"torch/__init__.py": b""}, tag=CP_TAG)
    wheels["torch_210rc"] = build_wheel(w, "torch", "2.10.0rc1", {"torch/__init__.py": b""}, tag=CP_TAG)
    rt = out / "runtime"
    cudart13 = _stub(
        rt,
        "libcudart.so.13",
        "libcudart.so.13",
        "int cudaRuntimeGetVersion(int* v) { *v = 13000; return 0; }",
        node="libcudart.so.13",
    )
    cudart12 = _stub(
        out / "rt12",
        "libcudart.so.12",
        "libcudart.so.12",
        "int cudaRuntimeGetVersion(int* v) { *v = 12080; return 0; }",
        node="libcudart.so.12",
    )
    wheels["runtime"] = build_wheel(
        w,
        "nvidia-cuda-runtime",
        "13.0.96",
        {"nvidia/cu13/lib/libcudart.so.13": cudart13},
        tag="py3-none-manylinux_2_28_x86_64",
    )
    wheels["k030"] = _kernel(
        w, out, "sgl-kernel", "0.3.0", c10_28, cudart13, unsigned=False, requires=["torch==2.8.0"]
    )
    wheels["k040"] = _kernel(
        w,
        out,
        "sglang-kernel",
        "0.4.0",
        c10_29,
        cudart13,
        unsigned=True,
        requires=["torch==2.9.0"],
        gencode="arch=compute_120,code=sm_120",
    )
    wheels["k041_cu12"] = _kernel(
        w, out, "sglang-kernel", "0.4.1", c10_29, cudart12, unsigned=True, requires=["torch==2.9.0"]
    )
    wheels["k042_sm100a"] = _kernel(
        w,
        out,
        "sglang-kernel",
        "0.4.2",
        c10_29,
        cudart13,
        unsigned=True,
        requires=["torch==2.9.0"],
        gencode="arch=compute_100a,code=sm_100a",
    )
    wheels["k043_yanked"] = build_wheel(
        w, "sglang-kernel", "0.4.3", {"sgl_kernel/__init__.py": b""}, tag=PURE_TAG
    )
    fi_053 = ["torch>=2.9", "tinydep>=1.0,<3", "notthere; python_version < '3'"]
    for version, torch_req in (("0.5.3", fi_053), ("0.5.2", [])):
        wheels[f"fi_{version}"] = build_wheel(
            w,
            "flashinfer-python",
            version,
            {"flashinfer/__init__.py": b""},
            tag=PURE_TAG,
            requires_dist=torch_req,
        )
        wheels[f"cubin_{version}"] = build_wheel(
            w, "flashinfer-cubin", version, {"flashinfer_cubin/__init__.py": b""}, tag=PURE_TAG
        )
    for label in ("cu130", "cu128"):
        wheels[f"jit_{label}"] = build_wheel(
            w,
            "flashinfer-jit-cache",
            f"0.5.3+{label}",
            {"flashinfer_jit_cache/__init__.py": b""},
            tag=ABI3_TAG,
        )
    # plain dependencies, for the lock's closure: the newest tinydep below 3, its extra, the extra's own
    for version in ("1.0", "2.0", "3.0"):
        wheels[f"tinydep_{version}"] = build_wheel(
            w, "tinydep", version, {f"tinydep_{version[0]}.py": b""}, tag=PURE_TAG,
            requires_dist=["tinyextra[fast]>=1"] if version == "2.0" else [],
        )  # fmt: skip
    wheels["tinyextra"] = build_wheel(
        w,
        "tinyextra",
        "1.0",
        {"tinyextra.py": b""},
        tag=PURE_TAG,
        requires_dist=["tinyfast; extra == 'fast'"],
    )
    wheels["tinyfast"] = build_wheel(w, "tinyfast", "1.0", {"tinyfast.py": b""}, tag=PURE_TAG)
    return SolveStack(out, wheels, frozenset({"k043_yanked"}))


_BUILT: dict[str, SolveStack] = {}


def solve_stack(out: Path) -> SolveStack:
    """Build once per process."""
    if "stack" not in _BUILT:
        _BUILT["stack"] = build_solve_stack(out)
    return _BUILT["stack"]


def solve_argv(index_url: str, cache: Path, out: Path, *extra: str) -> list[str]:
    """``abiprobe solve`` for the fixture stack's target (CUDA 13.0, sm120, this interpreter's Python)."""
    return ["solve", "--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG,
            "--platform", "manylinux_2_28_x86_64", "--index", index_url,
            "--cache-dir", str(cache), "--out-dir", str(out), *extra]  # fmt: skip


def serve(server: object, stack: SolveStack, **options_for_all: object) -> dict[str, object]:
    """Add every wheel of ``stack`` to an ``IndexServer`` (yanked ones marked yanked; tinydep offers no
    PEP 658 file, so its METADATA has to be read out of the wheel); ``options_for_all``: more add_wheel
    options for every wheel. Returns the served files by key."""
    served: dict[str, object] = {}
    for key, path in sorted(stack.wheels.items()):
        options: dict[str, object] = {"yanked": "broken build"} if key in stack.yanked else {}
        options.update(options_for_all)
        if key.startswith("tinydep"):
            options["metadata"] = False
        served[key] = server.add_wheel(path, **options)  # type: ignore[attr-defined]
    return served


@dataclass(frozen=True)
class HistoryStack:
    """Many releases of each role (``solve --all-versions`` at scale): wheels and what should pass."""

    wheels: tuple[Path, ...]
    torch: tuple[str, ...]  # versions, oldest first
    kernels: dict[str, str]  # kernel version -> the torch version it was built against (and pins)
    flashinfer: dict[str, str]  # flashinfer version -> its torch lower bound


def build_history_stack(out: Path, torch: int = 10, kernels: int = 15, flashinfer: int = 20) -> HistoryStack:
    """``torch`` x ``kernels`` x ``flashinfer`` releases as real wheels, from few compiled objects.

    torch releases alternate between two libc10 ABIs (``int`` / ``unsigned int`` in one parameter); each
    kernel is built against one torch release's ABI and pins it; each flashinfer release (with a
    version-locked flashinfer-cubin) requires a torch lower bound. Releases of one role share their ELF
    objects but differ in their files, so every wheel has its own sha256 and is inspected on its own.
    """
    w = out / "wheels"
    wheels: list[Path] = []
    abis: list[tuple[Path, Path, Path]] = []
    for unsigned in (False, True):
        d = out / ("abi-u" if unsigned else "abi-i")
        c10 = build_shared(
            d, "libc10.so", C10_SRC % ("unsigned int" if unsigned else "int"), soname="libc10.so", cxx=True
        )
        cpu = build_shared(
            d, "libtorch_cpu.so", TORCH_CPU_SRC % "", soname="libtorch_cpu.so", cxx=True, link=[c10],
            runpath=["$ORIGIN"],
        )  # fmt: skip
        ext = build_shared(
            d, f"_C{EXT_SUFFIX}", TORCH_C_SRC, link=[cpu, c10], runpath=["$ORIGIN/lib"],
            extra=[f"-I{PY_INCLUDE}"],
        )  # fmt: skip
        abis.append((c10, cpu, ext))
    cudart = _stub(
        out / "runtime",
        "libcudart.so.13",
        "libcudart.so.13",
        "int cudaRuntimeGetVersion(int* v) { *v = 13000; return 0; }",
        node="libcudart.so.13",
    )
    wheels.append(
        build_wheel(
            w,
            "nvidia-cuda-runtime",
            "13.0.96",
            {"nvidia/cu13/lib/libcudart.so.13": cudart},
            tag="py3-none-manylinux_2_28_x86_64",
        )
    )
    torch_versions = tuple(f"2.{i}.0" for i in range(torch))
    for i, version in enumerate(torch_versions):
        c10, cpu, ext = abis[i % 2]
        files = {
            "torch/__init__.py": (TORCH_INIT % version).encode(),
            "torch/lib/libc10.so": c10,
            "torch/lib/libtorch_cpu.so": cpu,
            f"torch/_C{EXT_SUFFIX}": ext,
        }
        wheels.append(
            build_wheel(
                w, "torch", version, files, tag=CP_TAG, requires_dist=["nvidia-cuda-runtime==13.0.96"]
            )
        )
    ops: list[Path] = []
    for unsigned in (False, True):
        c10 = abis[int(unsigned)][0]
        decls = C10_DECL % ("unsigned int" if unsigned else "int")
        ops.append(
            _module(
                out / ("k-u" if unsigned else "k-i"),
                "common_ops.abi3.so",
                "common_ops",
                cxx=True,
                link=(c10, cudart),
                decls=decls,
                body=C10_CALL,
            )
        )
    kernel_torch: dict[str, str] = {}
    for k in range(kernels):
        version = f"0.{k // 10}.{k % 10}"
        t = (k * torch) // kernels  # spread over the torch releases, oldest kernels against oldest torch
        kernel_torch[version] = torch_versions[t]
        files = {
            "sgl_kernel/__init__.py": f"import torch  # noqa: F401\nfrom sgl_kernel import common_ops\n"
            f"__version__ = {version!r}\n".encode(),
            "sgl_kernel/common_ops.abi3.so": ops[t % 2],
        }
        wheels.append(
            build_wheel(
                w,
                "sglang-kernel",
                version,
                files,
                tag=ABI3_TAG,
                requires_dist=[f"torch=={torch_versions[t]}"],
            )
        )
    fi_torch: dict[str, str] = {}
    for f in range(flashinfer):
        version = f"0.{f // 10}.{f % 10}"
        floor = torch_versions[(f * torch) // flashinfer]
        fi_torch[version] = floor
        init = f"__version__ = {version!r}\n".encode()
        wheels.append(
            build_wheel(
                w,
                "flashinfer-python",
                version,
                {"flashinfer/__init__.py": init},
                tag=PURE_TAG,
                requires_dist=[f"torch>={floor}"],
            )
        )
        wheels.append(
            build_wheel(w, "flashinfer-cubin", version, {"flashinfer_cubin/__init__.py": init}, tag=PURE_TAG)
        )
    return HistoryStack(tuple(wheels), torch_versions, kernel_torch, fi_torch)
