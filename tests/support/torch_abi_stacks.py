"""Two fixture "torch" releases and kernel wheels built against them, for the torch range and the diff.

torch 2.12.0 -> 2.13.0: ``at::legacy_helper(int)`` is removed; ``c10::cuda::c10_cuda_check_implementation``
takes ``unsigned int`` instead of ``int``; ``at::kept_helper(int)`` stays; the stable C shim gains
``torch_new_stable_ivalue`` (first released in 2.13 by torch's own table). Kernels (real ELF objects):

- ``removed_pinned`` / ``removed_unpinned``: import ``at::legacy_helper``; ``torch==2.12.0`` / nothing;
- ``changed_floating``: imports the ``int`` form of the check function; declares ``torch>=2.12``;
- ``stable_pinned`` / ``stable_floating`` / ``stable_low``: import only shim functions (newest:
  ``torch_library_def_with_tags``, 2.12); ``torch==2.12.0`` / ``torch>=2.12`` / ``torch>=2.10``;
- ``stable_new``: imports ``torch_new_stable_ivalue`` (2.13); declares ``torch>=2.13``;
- ``kept_pinned`` / ``kept_unpinned`` / ``kept_labelled``: import only ``at::kept_helper`` (every symbol
  resolves in both releases) and register their operators from a static initialiser, as
  ``TORCH_LIBRARY`` does; 2.13.0's ``c10::register_operators`` rejects 2.12.0's schema layout with
  ``std::length_error``, so a real load into 2.13.0 aborts. ``torch==2.12.0`` / nothing / version
  ``1.0.0+torch2.12``;
- ``no-torch`` (:func:`no_torch_wheel`): an extension importing ``at::kept_helper`` from its own
  ``libat.so``: it needs no torch library.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.stacks import PY_TAG
from support.wheelbuild import build_wheel

PLATFORM = "manylinux_2_28_x86_64"
ABI3_TAG = f"cp310-abi3-{PLATFORM}"
TORCH_TAG = f"{PY_TAG}-{PY_TAG}-{PLATFORM}"  # installable into a venv of the running interpreter

C10 = """
#include <stdexcept>
namespace c10 {
void register_operators(unsigned long layout) {
  if (layout != %d) throw std::length_error("vector::_M_default_append");
}
}
namespace c10 { namespace cuda {
void c10_cuda_check_implementation(%s err, const char* file, const char* func, int line, bool assertions) {
  (void)err; (void)file; (void)func; (void)line; (void)assertions;
}
}}
"""
TORCH_CPU = """
namespace at {
int kept_helper(int x) { return x + 1; }
%(legacy)s
}
extern "C" {
int aoti_torch_abi_version(void) { return 1; }
int torch_library_impl(void) { return 0; }
int torch_library_def_with_tags(void) { return 0; }
%(shim)s
}
"""
LEGACY = "int legacy_helper(int x) { return x - 1; }"
NEW_SHIM = "int torch_new_stable_ivalue(void) { return 0; }"

KERNEL = """
%(decls)s
%(init)s
extern "C" void* PyInit_%(name)s(void) { %(body)s return 0; }
"""
SCHEMA_LAYOUT = {False: 24, True: 32}  # the size of an operator schema in 2.12.0 and in 2.13.0
REGISTER = "namespace c10 { void register_operators(unsigned long); }\n"
REGISTER += "static int registered = (c10::register_operators(24), 0);"
DECL_LEGACY = "namespace at { int legacy_helper(int); int kept_helper(int); }"
DECL_CHECK = (
    "namespace c10 { namespace cuda { void c10_cuda_check_implementation(int, const char*, const char*, "
    "int, bool); }}"
)
DECL_SHIM = (
    'extern "C" { int aoti_torch_abi_version(void); int torch_library_impl(void); '
    "int torch_library_def_with_tags(void); int torch_new_stable_ivalue(void); }"
)


@dataclass(frozen=True)
class TorchAbiStacks:
    torch_old: Path
    torch_new: Path
    kernels: dict[str, Path]


def torch_wheel(out: Path, version: str, new: bool, tag: str = TORCH_TAG) -> Path:
    """A fixture torch ``version`` tagged ``tag``, with 2.12.0's exports, or 2.13.0's when ``new``."""
    d = out / f"torch-{version}-{tag}"
    c10_src = C10 % (SCHEMA_LAYOUT[new], "unsigned int" if new else "int")
    c10 = build_shared(d, "libc10.so", c10_src, soname="libc10.so", cxx=True)
    cpu_src = TORCH_CPU % {"legacy": "" if new else LEGACY, "shim": NEW_SHIM if new else ""}
    cpu = build_shared(d, "libtorch_cpu.so", cpu_src, soname="libtorch_cpu.so", cxx=True, link=[c10])
    files = {"torch/__init__.py": b"", "torch/lib/libc10.so": c10, "torch/lib/libtorch_cpu.so": cpu}
    return build_wheel(out / "wheels", "torch", version, files, tag=tag)


def _kernel(out: Path, key: str, version: str, body: str, requires: list[str], link: list[Path]) -> Path:
    name = key.replace("-", "_")
    module = f"{name}_ops"
    decls = f"{DECL_LEGACY}\n{DECL_CHECK}\n{DECL_SHIM}"
    init = REGISTER if key.startswith("kept-") else ""
    source = KERNEL % {"decls": decls, "init": init, "name": module, "body": body}
    so = build_shared(out / "kernels" / key, f"{module}.abi3.so", source, cxx=True, link=link)
    files = {f"{name}/__init__.py": b"", f"{name}/{module}.abi3.so": so}
    return build_wheel(out / "wheels", key, version, files, tag=ABI3_TAG, requires_dist=requires)


_REMOVED = "at::legacy_helper(1); at::kept_helper(2);"
_CHANGED = 'c10::cuda::c10_cuda_check_implementation(0, "f", "g", 1, true);'
_STABLE = "aoti_torch_abi_version(); torch_library_impl(); torch_library_def_with_tags();"
_STABLE_NEW = "aoti_torch_abi_version(); torch_new_stable_ivalue();"
_KEPT = "at::kept_helper(2);"

KERNELS: dict[str, tuple[str, str, list[str]]] = {
    "removed-pinned": ("1.0.0", _REMOVED, ["torch==2.12.0"]),
    "removed-unpinned": ("1.0.0", _REMOVED, []),
    "changed-floating": ("1.0.0", _CHANGED, ["torch>=2.12"]),
    "stable-pinned": ("1.0.0", _STABLE, ["torch==2.12.0"]),
    "stable-floating": ("1.0.0", _STABLE, ["torch>=2.12"]),
    "stable-low": ("1.0.0", _STABLE, ["torch>=2.10"]),
    "stable-new": ("1.0.0", _STABLE_NEW, ["torch>=2.13"]),
    "kept-pinned": ("1.0.0", _KEPT, ["torch==2.12.0"]),
    "kept-unpinned": ("1.0.0", _KEPT, []),
    "kept-labelled": ("1.0.0+torch2.12", _KEPT, []),
}
_BUILT: dict[Path, TorchAbiStacks] = {}


def torch_abi_stacks(out: Path) -> TorchAbiStacks:
    """Build (once per process and directory) both torch releases and every kernel of ``KERNELS``."""
    if out in _BUILT:
        return _BUILT[out]
    old = torch_wheel(out, "2.12.0", new=False)
    new = torch_wheel(out, "2.13.0", new=True)
    libs = [
        out / f"torch-2.12.0-{TORCH_TAG}" / "libc10.so",
        out / f"torch-2.12.0-{TORCH_TAG}" / "libtorch_cpu.so",
    ]
    kernels = {
        key: _kernel(out, key, version, body, requires, libs)
        for key, (version, body, requires) in KERNELS.items()
    }
    _BUILT[out] = TorchAbiStacks(old, new, kernels)
    return _BUILT[out]


def no_torch_wheel(out: Path) -> Path:
    """``no-torch 1.0.0``: ``no_torch/_ext.abi3.so`` imports ``at::kept_helper`` from its own ``libat.so``
    (RPATH ``$ORIGIN``), whose name torch's libraries export too; nothing in it needs a torch library."""
    d = out / "no-torch"
    lib = build_shared(d, "libat.so", "namespace at { int kept_helper(int x) { return x; } }",
                       soname="libat.so", cxx=True)  # fmt: skip
    source = KERNEL % {"decls": DECL_LEGACY, "init": "", "name": "_ext", "body": _KEPT}
    ext = build_shared(d, "_ext.abi3.so", source, cxx=True, link=[lib], rpath=["$ORIGIN"])
    files: dict[str, bytes | Path] = {
        "no_torch/__init__.py": b"",
        "no_torch/_ext.abi3.so": ext,
        "no_torch/libat.so": lib,
    }
    return build_wheel(out / "wheels", "no-torch", "1.0.0", files, tag=ABI3_TAG)
