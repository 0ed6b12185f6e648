"""Fixture wheel sets with real ELF objects: a torch-like wheel in two versions, kernel wheels, runtimes.

Every wheel is a real, importable wheel for the running interpreter (torch's ``__init__`` preloads its libs
and the nvidia wheels' libs with ctypes RTLD_GLOBAL, as real torch does). Build once per session:
``stacks = fixture_stacks(tmp_path_factory.mktemp("stacks"))`` memoises per process.

Keys of ``FixtureStacks.wheels`` (see ``WHEELS``): torch 2.8.0 and 2.9.0 (libc10 changed one parameter
``int`` -> ``unsigned int``; 2.9.0 adds ``aoti_torch_abi_version``), sgl-kernel built against 2.8.0,
a CUDA 13 runtime, a CUDA 12 kernel, libnuma / GLIBC_2.34 / driver-API / old-string-ABI / aoti users,
conflicting and mislabelled wheels, a Requires-Dist violation, flashinfer companions, GPU-code kernels.
"""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from abiprobe.model.facts import WheelFacts
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.nvbuild import need_nvcc
from support.wheelbuild import build_wheel

PY_TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
EXT_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
PLATFORM = "manylinux_2_28_x86_64"
ABI3_TAG = f"cp310-abi3-{PLATFORM}"
CP_TAG = f"{PY_TAG}-{PY_TAG}-{PLATFORM}"
PURE_TAG = "py3-none-any"
PY_INCLUDE = sysconfig.get_paths()["include"]

C10_SRC = """
namespace c10 { namespace cuda {
void c10_cuda_check_implementation(%s err, const char* file, const char* func, int line, bool assertions) {
  (void)err; (void)file; (void)func; (void)line; (void)assertions;
}
}}
extern "C" int c10_marker(void) { return 1; }
"""
TORCH_CPU_SRC = """
#include <string>
extern "C" int c10_marker(void);
namespace torch { namespace jit {
int parseSchemaOrName(const std::string& schema, bool allow_typevars) {
  return (int)schema.size() + allow_typevars;
}
}}
extern "C" int torch_cpu_marker(void) { return c10_marker(); }
%s
"""
AOTI_SRC = 'extern "C" int aoti_torch_abi_version(void) { return 1; }'

MODULE_C = """
#define Py_LIMITED_API 0x030a0000
#include <Python.h>
%(decls)s
static PyObject* run(PyObject* self, PyObject* args) { (void)self; (void)args; %(body)s Py_RETURN_NONE; }
static PyMethodDef methods[] = {{"run", run, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, methods};
PyMODINIT_FUNC PyInit_%(name)s(void) { return PyModule_Create(&mod); }
"""
TORCH_C_SRC = """
#include <Python.h>
extern int torch_cpu_marker(void);
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_C", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__C(void) { torch_cpu_marker(); return PyModule_Create(&mod); }
"""
TORCH_INIT = """import ctypes, glob, os
_here = os.path.dirname(os.path.abspath(__file__))
_site = os.path.dirname(_here)
for _lib in sorted(glob.glob(os.path.join(_site, "nvidia", "*", "lib", "*.so*"))):
    ctypes.CDLL(_lib, mode=ctypes.RTLD_GLOBAL)
for _name in ("libc10.so", "libtorch_cpu.so"):
    ctypes.CDLL(os.path.join(_here, "lib", _name), mode=ctypes.RTLD_GLOBAL)
from torch import _C  # noqa: E402,F401
__version__ = "%s"
"""
GPU_SRC = "__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n"
FATBIN_ASM = '__asm__(".section .nv_fatbin, \\"a\\"\\n.balign 8\\n.incbin \\"%s\\"\\n.previous");'

WHEELS = (
    "torch_v1",
    "torch_v2",
    "sgl_kernel_v1",
    "cuda13_runtime",
    "cu12_kernel",
    "numa_user",
    "new_glibc",
    "driver_user",
    "old_abi_kernel",
    "aoti_user",
    "sglang_kernel_dup",
    "sgl_kernel_label",
    "needs_old_torch",
    "flashinfer_python",
    "flashinfer_cubin",
    "flashinfer_jit_cache",
    "gpu_kernel",
)


@dataclass(frozen=True)
class FixtureStacks:
    """Built fixture wheels by key, plus the directory holding them."""

    root: Path
    wheels: dict[str, Path]

    def paths(self, *keys: str) -> list[Path]:
        return [self.wheels[k] for k in keys]

    def facts(self, *keys: str) -> list[WheelFacts]:
        """WheelFacts of the given wheels, read once per process with abiprobe's own wheel reader."""
        from abiprobe.binary.wheel import wheel_facts_from_path

        out = []
        for k in keys:
            path = self.wheels[k]
            if path not in _FACTS:
                _FACTS[path] = wheel_facts_from_path(path, unread_sources=BUILT_IN_UNREAD)
            out.append(_FACTS[path])
        return out


def _module(
    out: Path,
    filename: str,
    name: str,
    *,
    decls: str = "",
    body: str = "",
    cxx: bool = False,
    link: tuple[Path, ...] = (),
    extra: tuple[str, ...] = (),
) -> Path:
    source = MODULE_C % {"decls": decls, "body": body, "name": name}
    return build_shared(out, filename, source, cxx=cxx, link=link, extra=(f"-I{PY_INCLUDE}", *extra))


def _stub(out: Path, filename: str, soname: str, source: str, node: str | None = None) -> Path:
    script = None if node is None else f"{node} {{ global: *; }};"
    return build_shared(out, filename, source, soname=soname, version_script=script)


def _torch(out: Path, version: str, unsigned: bool, aoti: bool) -> tuple[Path, Path, Path]:
    d = out / f"torch-{version}"
    c10 = build_shared(
        d, "libc10.so", C10_SRC % ("unsigned int" if unsigned else "int"), soname="libc10.so", cxx=True
    )
    cpu = build_shared(
        d,
        "libtorch_cpu.so",
        TORCH_CPU_SRC % (AOTI_SRC if aoti else ""),
        soname="libtorch_cpu.so",
        cxx=True,
        link=[c10],
        runpath=["$ORIGIN"],
    )
    ext = build_shared(
        d, f"_C{EXT_SUFFIX}", TORCH_C_SRC, link=[cpu, c10], runpath=["$ORIGIN/lib"], extra=[f"-I{PY_INCLUDE}"]
    )
    files = {
        "torch/__init__.py": (TORCH_INIT % version).encode(),
        "torch/lib/libc10.so": c10,
        "torch/lib/libtorch_cpu.so": cpu,
        f"torch/_C{EXT_SUFFIX}": ext,
    }
    wheel = build_wheel(
        out / "wheels", "torch", version, files, tag=CP_TAG, requires_dist=["nvidia-cuda-runtime==13.0.96"]
    )
    return wheel, c10, cpu


def build_fatbin(out: Path, name: str, gencode: str) -> Path:
    """``out/name.fatbin``: a trivial kernel compiled by nvcc for one ``-gencode``."""
    out.mkdir(parents=True, exist_ok=True)
    src = out / f"{name}.cu"
    src.write_text(GPU_SRC)
    fatbin = out / f"{name}.fatbin"
    subprocess.run(
        [need_nvcc(), "-fatbin", "-gencode", gencode, "-o", str(fatbin), str(src)],
        check=True,
        capture_output=True,
        text=True,
    )
    return fatbin


def _gpu_module(out: Path, name: str, gencode: str) -> Path:
    """An abi3 module whose ``.nv_fatbin`` section holds an nvcc-built fatbin (no CUDA runtime needed)."""
    fatbin = build_fatbin(out, name, gencode)
    return _module(out, f"{name}.abi3.so", name, decls=FATBIN_ASM % fatbin)


def build_stacks(out: Path) -> FixtureStacks:
    """Compile every fixture object and pack every fixture wheel into ``out/wheels``."""
    w = out / "wheels"
    pkg_init = b"import torch  # noqa: F401\n"
    wheels: dict[str, Path] = {}
    wheels["torch_v1"], c10_v1, cpu_v1 = _torch(out, "2.8.0", unsigned=False, aoti=False)
    wheels["torch_v2"], _c10_v2, cpu_v2 = _torch(out, "2.9.0", unsigned=True, aoti=True)
    rt = out / "runtime"
    cudart13 = _stub(
        rt,
        "libcudart.so.13",
        "libcudart.so.13",
        "int cudaRuntimeGetVersion(int* v) { *v = 13000; return 0; }",
        node="libcudart.so.13",
    )
    wheels["cuda13_runtime"] = build_wheel(
        w,
        "nvidia-cuda-runtime",
        "13.0.96",
        {"nvidia/cu13/lib/libcudart.so.13": cudart13},
        tag="py3-none-manylinux_2_28_x86_64",
    )
    k = out / "sgl_kernel"
    ops = _module(
        k,
        "common_ops.abi3.so",
        "common_ops",
        cxx=True,
        link=(c10_v1, cudart13),
        decls="namespace c10 { namespace cuda { void c10_cuda_check_implementation(int, const char*, "
        'const char*, int, bool); } }\nextern "C" int cudaRuntimeGetVersion(int*);',
        body='c10::cuda::c10_cuda_check_implementation(0, "f", "g", 1, false); int v; '
        "cudaRuntimeGetVersion(&v);",
    )
    wheels["sgl_kernel_v1"] = build_wheel(
        w,
        "sgl-kernel",
        "0.3.0",
        {
            "sgl_kernel/__init__.py": pkg_init + b"from sgl_kernel import common_ops  # noqa: E402,F401\n",
            "sgl_kernel/common_ops.abi3.so": ops,
        },
        tag=ABI3_TAG,
        requires_dist=["torch"],
    )
    cu12 = _stub(
        out / "cu12",
        "libcudart.so.12",
        "libcudart.so.12",
        "int cudaRuntimeGetVersion(int* v) { *v = 12080; return 0; }",
        node="libcudart.so.12",
    )
    wheels["cu12_kernel"] = _simple(
        w,
        out,
        "cu12-kernel",
        "cu12_kernel",
        link=(cu12,),
        decls="int cudaRuntimeGetVersion(int*);",
        body="int v; cudaRuntimeGetVersion(&v);",
    )
    numa = _stub(
        out / "numa",
        "libnuma.so.1",
        "libnuma.so.1",
        "int numa_available(void) { return 0; }",
        node="libnuma_1.1",
    )
    wheels["numa_user"] = _simple(
        w,
        out,
        "numa-user",
        "numa_user",
        link=(numa,),
        decls="int numa_available(void);",
        body="numa_available();",
    )
    wheels["new_glibc"] = _simple(
        w,
        out,
        "new-glibc",
        "new_glibc",
        decls="#include <pthread.h>\nstatic void* work(void* a) { return a; }",
        body="pthread_t t; pthread_create(&t, NULL, work, NULL); pthread_join(t, NULL);",
    )
    cuda = _stub(
        out / "driver",
        "libcuda.so.1",
        "libcuda.so.1",
        "int cuInit(unsigned f) { return (int)f; }\nint cuGreenCtxCreate(void* a, void* b, int c, "
        "unsigned d) { (void)a; (void)b; (void)c; (void)d; return 0; }",
    )
    wheels["driver_user"] = _simple(
        w,
        out,
        "driver-user",
        "driver_user",
        link=(cuda,),
        decls="int cuInit(unsigned);\nint cuGreenCtxCreate(void*, void*, int, unsigned);",
        body="cuInit(0); cuGreenCtxCreate(NULL, NULL, 0, 0);",
    )
    wheels["old_abi_kernel"] = _simple(
        w,
        out,
        "old-abi-kernel",
        "old_abi_kernel",
        link=(cpu_v1,),
        cxx=True,
        extra=("-D_GLIBCXX_USE_CXX11_ABI=0",),
        decls="#include <string>\n"
        "namespace torch { namespace jit { int parseSchemaOrName(const std::string&, bool); } }\n"
        "int (*volatile parse_schema)(const std::string&, bool) = &torch::jit::parseSchemaOrName;",
        body="(void)parse_schema;",
        requires=["torch==2.8.0"],
    )
    wheels["aoti_user"] = _simple(
        w,
        out,
        "aoti-user",
        "aoti_user",
        link=(cpu_v2,),
        requires=["torch>=2.9"],
        decls="int aoti_torch_abi_version(void);",
        body="aoti_torch_abi_version();",
    )
    wheels["sglang_kernel_dup"] = build_wheel(
        w,
        "sglang-kernel",
        "0.4.0",
        {"sgl_kernel/__init__.py": b"__version__ = '0.4.0'\n", "sgl_kernel/version.py": b"v = '0.4.0'\n"},
        tag=PURE_TAG,
    )
    wheels["sgl_kernel_label"] = build_wheel(
        w,
        "sgl-kernel",
        "0.3.1+cu130",
        {"sgl_kernel/__init__.py": b"__version__ = '0.3.1'\n"},
        tag=PURE_TAG,
        metadata_version="0.3.1",
    )
    wheels["needs_old_torch"] = build_wheel(
        w,
        "needs-old-torch",
        "1.0.0",
        {"needs_old_torch/__init__.py": b""},
        tag=PURE_TAG,
        requires_dist=["torch==2.8.0", 'torch>=99; python_version < "3"'],
    )
    for key, name, version in (
        ("flashinfer_python", "flashinfer-python", "0.5.3"),
        ("flashinfer_cubin", "flashinfer-cubin", "0.5.2"),
        ("flashinfer_jit_cache", "flashinfer-jit-cache", "0.5.3+cu130"),
    ):
        pkg = "flashinfer" if name == "flashinfer-python" else name.replace("-", "_")
        wheels[key] = build_wheel(w, name, version, {f"{pkg}/__init__.py": b""}, tag=PURE_TAG)
    g = out / "gpu"
    wheels["gpu_kernel"] = build_wheel(
        w,
        "gpu-kernel",
        "0.1.0",
        {
            "gpu_kernel/__init__.py": b"",
            "gpu_kernel/sm120a_ops.abi3.so": _gpu_module(g, "sm120a_ops", "arch=compute_120a,code=sm_120a"),
            "gpu_kernel/ptx_ops.abi3.so": _gpu_module(g, "ptx_ops", "arch=compute_90,code=compute_90"),
            "gpu_kernel/hopper_ops.abi3.so": _gpu_module(g, "hopper_ops", "arch=compute_90a,code=sm_90a"),
        },
        tag=ABI3_TAG,
    )
    return FixtureStacks(out, wheels)


def _simple(
    w: Path,
    out: Path,
    name: str,
    pkg: str,
    *,
    decls: str = "",
    body: str = "",
    cxx: bool = False,
    link: tuple[Path, ...] = (),
    extra: tuple[str, ...] = (),
    requires: list[str] | None = None,
) -> Path:
    """A one-extension wheel ``pkg/_ext.abi3.so`` whose module runs ``body``."""
    so = _module(out / pkg, "_ext.abi3.so", "_ext", decls=decls, body=body, cxx=cxx, link=link, extra=extra)
    files = {
        f"{pkg}/__init__.py": f"from {pkg} import _ext  # noqa: F401\n".encode(),
        f"{pkg}/_ext.abi3.so": so,
    }
    return build_wheel(w, name, "0.1.0", files, tag=ABI3_TAG, requires_dist=requires or [])


_BUILT: dict[str, FixtureStacks] = {}
_FACTS: dict[Path, WheelFacts] = {}


def fixture_stacks(out: Path) -> FixtureStacks:
    """Build the stacks once per process (later calls return the first build, whatever ``out``)."""
    if "stacks" not in _BUILT:
        _BUILT["stacks"] = build_stacks(out)
    return _BUILT["stacks"]
