"""The machine a wheel set must run on: CUDA, GPU arch, Python, platform tag, driver; its wheel tags.

Everything here is pure except ``Target.from_host``, which reads the running interpreter and libc.
"""

from __future__ import annotations

import platform as _platform
import re
import sys
from dataclasses import dataclass, field, replace
from functools import cached_property

from packaging import tags as _tags

from abiprobe.binary.cuda_arch import GpuArch, parse_known_arch
from abiprobe.errors import UsageError

# NVIDIA CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding Driver Versions"
# (Linux x86_64 "Toolkit Driver Version" column, minimum driver of each GA release), and the PTX ISA
# version each toolkit introduced (PTX ISA manual, "Release Notes" table).
# Row: (minimum driver, CUDA (major, minor), PTX ISA (major, minor)).
CUDA_DRIVER_TABLE: tuple[tuple[tuple[int, ...], tuple[int, int], tuple[int, int]], ...] = (
    ((450, 36, 6), (11, 0), (7, 0)),
    ((455, 23), (11, 1), (7, 1)),
    ((460, 27, 3), (11, 2), (7, 2)),
    ((465, 19, 1), (11, 3), (7, 3)),
    ((470, 42, 1), (11, 4), (7, 4)),
    ((495, 29, 5), (11, 5), (7, 5)),
    ((510, 39, 1), (11, 6), (7, 6)),
    ((515, 43, 4), (11, 7), (7, 7)),
    ((520, 61, 5), (11, 8), (7, 8)),
    ((525, 60, 13), (12, 0), (8, 0)),
    ((530, 30, 2), (12, 1), (8, 1)),
    ((535, 54, 3), (12, 2), (8, 2)),
    ((545, 23, 6), (12, 3), (8, 3)),
    ((550, 54, 14), (12, 4), (8, 4)),
    ((555, 42, 2), (12, 5), (8, 5)),
    ((560, 28, 3), (12, 6), (8, 5)),
    ((570, 26), (12, 8), (8, 7)),
    ((575, 51, 3), (12, 9), (8, 8)),
    ((580, 65, 6), (13, 0), (9, 0)),
    ((590, 44, 1), (13, 1), (9, 1)),
)

_MANYLINUX_LEGACY = {(2, 17): "manylinux2014", (2, 12): "manylinux2010", (2, 5): "manylinux1"}
_PLATFORM = re.compile(
    r"^(?:manylinux_(?P<maj>\d+)_(?P<min>\d+)|(?P<legacy>manylinux(?:2014|2010|1))|linux)_(?P<arch>.+)$"
)
_LEGACY_GLIBC = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
_MACHINES = ("x86_64", "aarch64", "ppc64le", "s390x", "i686", "armv7l")


def parse_driver_version(text: str) -> tuple[int, ...]:
    """``"580.95"`` / ``"580.95.05"`` -> ``(580, 95)`` / ``(580, 95, 5)``."""
    if not re.fullmatch(r"\d+(\.\d+){0,2}", text.strip()):
        raise UsageError(f"not a driver version: {text!r} (expected e.g. 580.95.05)")
    return tuple(int(p) for p in text.strip().split("."))


def driver_api_version(text: str) -> int:
    """A CUDA version as ``cuDriverGetVersion`` reports it: ``"13.0"`` -> 13000, ``"12.8"`` -> 12080; an
    already encoded value (``"12080"``) passes through."""
    if text.strip().isdigit() and int(text) >= 1000:
        return int(text)
    major, minor = parse_cuda_version(text)
    return major * 1000 + minor * 10


def driver_cuda(driver: tuple[int, ...]) -> tuple[int, int] | None:
    """The newest CUDA version whose driver API a driver implements; None when older than CUDA 11.0."""
    best: tuple[int, int] | None = None
    for minimum, cuda, _ptx in CUDA_DRIVER_TABLE:
        if driver >= minimum:
            best = cuda
    return best


def driver_ptx_isa(driver: tuple[int, ...]) -> tuple[int, int] | None:
    """The newest PTX ISA version a driver's JIT accepts; None when older than CUDA 11.0."""
    best: tuple[int, int] | None = None
    for minimum, _cuda, ptx in CUDA_DRIVER_TABLE:
        if driver >= minimum:
            best = ptx
    return best


def cuda_ptx_isa(cuda: tuple[int, int]) -> tuple[int, int] | None:
    """The PTX ISA version a CUDA toolkit release introduced (the newest one it emits)."""
    best: tuple[int, int] | None = None
    for _minimum, row_cuda, ptx in CUDA_DRIVER_TABLE:
        if row_cuda <= cuda:
            best = ptx
    return best


def parse_cuda_version(text: str) -> tuple[int, int]:
    """``"13.0"``, ``"13"``, ``"cu130"``, ``"12.8.1"`` -> ``(major, minor)``."""
    t = text.strip().lower()
    m = re.fullmatch(r"cu(\d{2,3})", t)
    if m:
        digits = m.group(1)
        return int(digits[:-1]), int(digits[-1])
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?(?:\.\d+)?", t)
    if not m:
        raise UsageError(f"not a CUDA version: {text!r} (expected e.g. 13.0 or cu130)")
    return int(m.group(1)), int(m.group(2) or 0)


def parse_python_version(text: str) -> tuple[str, tuple[int, int]]:
    """``"cp312"``, ``"3.12"``, ``"312"``, ``"pp310"`` -> (implementation tag, (major, minor))."""
    t = text.strip().lower()
    m = re.fullmatch(r"(cp|pp)?(\d)\.?(\d{1,2})", t)
    if not m:
        raise UsageError(f"not a Python version: {text!r} (expected e.g. cp312 or 3.12)")
    return m.group(1) or "cp", (int(m.group(2)), int(m.group(3)))


def parse_platform(text: str) -> tuple[str, tuple[int, int] | None, str]:
    """A platform tag (or a bare machine name) -> (normalised tag, glibc or None for linux_*, machine)."""
    t = text.strip()
    if t in _MACHINES:
        t = f"manylinux_2_28_{t}"
    m = _PLATFORM.match(t)
    if not m:
        raise UsageError(f"not a Linux platform tag: {text!r} (expected e.g. manylinux_2_28_x86_64)")
    arch = m.group("arch")
    if m.group("maj"):
        return t, (int(m.group("maj")), int(m.group("min"))), arch
    if m.group("legacy"):
        glibc = _LEGACY_GLIBC[m.group("legacy")]
        return f"manylinux_{glibc[0]}_{glibc[1]}_{arch}", glibc, arch
    return t, None, arch


@dataclass(frozen=True)
class Target:
    """Where a set must load: CUDA (major, minor), GPU arch (None: unknown), Python, platform, driver."""

    cuda: tuple[int, int] = (13, 0)
    arch: GpuArch | None = None
    python: tuple[int, int] = (3, 12)
    implementation: str = "cp"
    platform: str = "manylinux_2_28_x86_64"
    driver: tuple[int, ...] | None = None
    # derived once, when the target is made (each a value, not a property re-derived at every use)
    glibc: tuple[int, int] | None = field(init=False, repr=False, compare=False)
    machine: str = field(init=False, repr=False, compare=False)
    python_tag: str = field(init=False, repr=False, compare=False)  # cp312

    def __post_init__(self) -> None:
        platform, glibc, machine = parse_platform(self.platform)
        object.__setattr__(self, "platform", platform)
        object.__setattr__(self, "glibc", glibc)
        object.__setattr__(self, "machine", machine)
        object.__setattr__(self, "python_tag", f"{self.implementation}{self.python[0]}{self.python[1]}")

    @classmethod
    def parse(
        cls,
        *,
        cuda: str | None = None,
        arch: str | None = None,
        python: str | None = None,
        platform: str | None = None,
        driver: str | None = None,
        base: Target | None = None,
    ) -> Target:
        """Build a Target from command-line strings; fields not given come from ``base`` (default: host)."""
        t = base if base is not None else cls.from_host()
        if cuda is not None:
            t = replace(t, cuda=parse_cuda_version(cuda))
        if arch is not None:
            t = replace(t, arch=parse_known_arch(arch))
        if python is not None:
            impl, version = parse_python_version(python)
            t = replace(t, implementation=impl, python=version)
        if platform is not None:
            t = replace(t, platform=platform)
        if driver is not None:
            t = replace(t, driver=parse_driver_version(driver))
        return t

    @classmethod
    def from_host(cls) -> Target:
        """This interpreter and libc; CUDA 13.0, no GPU arch and no driver unless overridden."""
        impl = "cp" if sys.implementation.name == "cpython" else "pp"
        libc, version = _platform.libc_ver()
        machine = _platform.machine() or "x86_64"
        glibc = (2, 28)
        if libc == "glibc" and re.fullmatch(r"\d+\.\d+", version or ""):
            major, minor = version.split(".")
            glibc = (int(major), int(minor))
        return cls(
            python=(sys.version_info[0], sys.version_info[1]),
            implementation=impl,
            platform=f"manylinux_{glibc[0]}_{glibc[1]}_{machine}",
        )

    @property
    def driver_cuda(self) -> tuple[int, int]:
        """The newest CUDA driver API the target driver offers; the target CUDA when no driver is given."""
        if self.driver is None:
            return self.cuda
        return driver_cuda(self.driver) or (10, 0)

    @property
    def driver_ptx_isa(self) -> tuple[int, int] | None:
        """The newest PTX ISA the target driver can JIT (from the driver, else the target CUDA)."""
        if self.driver is None:
            return cuda_ptx_isa(self.cuda)
        return driver_ptx_isa(self.driver)

    def key(self) -> str:
        """A stable string naming this target, for caches and file names."""
        arch = f"sm_{self.arch.sm}{self.arch.variant}" if self.arch is not None else "nogpu"
        drv = "-drv" + ".".join(map(str, self.driver)) if self.driver else ""
        return f"cu{self.cuda[0]}.{self.cuda[1]}-{arch}-{self.python_tag}-{self.platform}{drv}"

    def platform_tags(self) -> tuple[str, ...]:
        """Platform tags the target accepts, most specific first (manylinux_2_N down to 2_5, then linux)."""
        arch, glibc = self.machine, self.glibc
        result: list[str] = []
        if glibc is not None:
            for minor in range(glibc[1], 4, -1):
                result.append(f"manylinux_{glibc[0]}_{minor}_{arch}")
                legacy = _MANYLINUX_LEGACY.get((glibc[0], minor))
                if legacy:
                    result.append(f"{legacy}_{arch}")
        result.append(f"linux_{arch}")
        return tuple(result)

    @cached_property
    def _tag_list(self) -> tuple[_tags.Tag, ...]:
        plats = list(self.platform_tags())
        if self.implementation == "cp":
            main = _tags.cpython_tags(
                self.python, abis=[f"cp{self.python[0]}{self.python[1]}"], platforms=plats
            )
        else:
            main = _tags.generic_tags(
                self.python_tag, abis=[f"pypy{self.python[0]}{self.python[1]}_pp73"], platforms=plats
            )
        rest = _tags.compatible_tags(self.python, interpreter=self.python_tag, platforms=plats)
        seen: dict[_tags.Tag, None] = {}
        for tag in (*main, *rest):
            seen.setdefault(tag, None)
        return tuple(seen)

    def supported_tags(self) -> tuple[_tags.Tag, ...]:
        """Wheel tags installable on the target, best first (computed for the target, not this host)."""
        return self._tag_list

    def accepts_tag(self, tag: str) -> bool:
        """Whether a wheel tag string (possibly compressed, ``cp310.cp311-abi3-…``) installs on the target."""
        wanted = set(self._tag_list)
        return any(t in wanted for t in _tags.parse_tag(tag))
