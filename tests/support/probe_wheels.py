"""Small real wheels for import probes: one per failure class, plus a torch-like base they load against.

Extensions are abi3 modules (built with the 3.12 headers, limited API 3.10) so any CPython >= 3.10
imports them; ``base`` plays torch: its ``__init__`` preloads ``libbase.so`` with RTLD_GLOBAL.
"""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.wheelbuild import build_wheel

TAG = "cp310-abi3-manylinux_2_28_x86_64"
_INCLUDE = "/root/.pyenv/versions/3.12.1/include/python3.12"
EXT = "_ext.abi3.so"

_PRELOAD = """import ctypes, os
_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "libbase.so"), mode=ctypes.RTLD_GLOBAL)
from . import _ext
"""


def python_include() -> str:
    here = sysconfig.get_paths()["include"]
    return _INCLUDE if Path(_INCLUDE, "Python.h").exists() else here


def extension_source(module: str, body: str = "", init: str = "") -> str:
    """C source of an abi3 extension module ``module._ext``; ``init`` runs inside PyInit."""
    return f"""
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
{body}
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{module}._ext", NULL, -1, NULL}};
PyMODINIT_FUNC PyInit__ext(void) {{ {init} return PyModule_Create(&def); }}
"""


def build_extension(out: Path, name: str, module: str, body: str = "", init: str = "", **kw: object) -> Path:
    return build_shared(
        out,
        name,
        extension_source(module, body, init),
        extra=[f"-I{python_include()}"],
        **kw,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class ProbeWheels:
    """Paths of the fixture wheels; ``base`` is needed by every extension that calls base_v1."""

    base: Path
    base2: Path  # same distribution, version 2: drops base_v1 (like a torch upgrade)
    good: Path
    missing: Path
    undefined: Path
    symver: Path
    pyexc: Path
    segv: Path
    sleeper: Path
    driver: Path


def _package(out: Path, name: str, version: str, files: dict[str, bytes | Path]) -> Path:
    return build_wheel(out, name, version, files, tag=TAG)


def build_probe_wheels(root: Path) -> ProbeWheels:
    work, out = root / "build", root / "wheels"
    lib1 = build_shared(
        work / "b1", "libbase.so", "int base_v1(int x) { return x + 1; }\n", soname="libbase.so"
    )
    lib2 = build_shared(
        work / "b2", "libbase.so", "int base_v2(int x) { return x + 2; }\n", soname="libbase.so"
    )
    init = (_PRELOAD.replace("from . import _ext\n", "")).encode()
    base = _package(out / "b1", "base", "1.0", {"base/__init__.py": init, "base/lib/libbase.so": lib1})
    base2 = _package(out / "b2", "base", "2.0", {"base/__init__.py": init, "base/lib/libbase.so": lib2})
    calls_v1 = "extern int base_v1(int); int use(void) { return base_v1(1); }"
    good_ext = build_extension(work / "good", EXT, "good", calls_v1, link=[lib1])
    good = _package(
        out, "good", "1.0", {"good/__init__.py": b"from . import _ext\n", f"good/{EXT}": good_ext}
    )

    absent = build_shared(
        work / "absent", "libabsent.so.12", "int absent_f(void) { return 0; }\n", soname="libabsent.so.12"
    )
    miss_ext = build_extension(work / "missing", EXT, "missing", "", link=[absent])
    missing = _package(
        out, "missing", "1.0", {"missing/__init__.py": b"from . import _ext\n", f"missing/{EXT}": miss_ext}
    )

    mangled = 'extern int base_v3(int) __asm__("_ZN4base2v3Ei"); int use(void) { return base_v3(1); }'
    und_ext = build_extension(work / "undefined", EXT, "undefined", mangled, link=[lib1])
    undefined = _package(
        out,
        "undefined",
        "1.0",
        {"undefined/__init__.py": b"from . import _ext\n", f"undefined/{EXT}": und_ext},
    )

    ver2 = build_shared(
        work / "ver2",
        "libver.so.1",
        "int vf(void) { return 2; }\n",
        soname="libver.so.1",
        version_script="VER_2 { global: vf; local: *; };\n",
    )
    ver1 = build_shared(
        work / "ver1",
        "libver.so.1",
        "int vf(void) { return 1; }\n",
        soname="libver.so.1",
        version_script="VER_1 { global: vf; local: *; };\n",
    )
    ver_ext = build_extension(
        work / "symver",
        EXT,
        "symver",
        "extern int vf(void); int use(void) { return vf(); }",
        link=[ver2],
        rpath=["$ORIGIN"],
    )
    symver = _package(
        out,
        "symver",
        "1.0",
        {"symver/__init__.py": b"from . import _ext\n", f"symver/{EXT}": ver_ext, "symver/libver.so.1": ver1},
    )

    raising = b"def _setup():\n    raise RuntimeError('fixture refuses to import')\n_setup()\n"
    pyexc = _package(out, "pyexc", "1.0", {"pyexc/__init__.py": raising})

    crash = "__attribute__((constructor)) static void boom(void) { void (*f)(void) = 0; f(); }"
    segv_ext = build_extension(work / "segv", EXT, "segv", crash)
    segv = _package(
        out, "segv", "1.0", {"segv/__init__.py": b"from . import _ext\n", f"segv/{EXT}": segv_ext}
    )

    sleeper = _package(out, "sleeper", "1.0", {"sleeper/__init__.py": b"import time\ntime.sleep(3600)\n"})

    fake_cuda = build_shared(
        work / "cuda",
        "libcuda.so.1",
        "int cuInit(unsigned f) { return 0; }\nint cuDeviceGetCount(int *n) { return 0; }\n",
        soname="libcuda.so.1",
    )
    drv_body = "extern int cuInit(unsigned); extern int cuDeviceGetCount(int *); static int rc;"
    drv_ext = build_extension(
        work / "driver", EXT, "driver", drv_body, init="rc = cuInit(0);", link=[fake_cuda]
    )
    driver = _package(
        out, "driver", "1.0", {"driver/__init__.py": b"from . import _ext\n", f"driver/{EXT}": drv_ext}
    )
    return ProbeWheels(base, base2, good, missing, undefined, symver, pyexc, segv, sleeper, driver)
