"""The run-time values a package's loading code reads, as the set and the target fix them
(abiprobe.analyze.runtime), over facts read from real wheels."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.held import BUILT_IN_UNREAD
from support.probe_wheels import TAG
from support.wheelbuild import build_wheel

from abiprobe.analyze.runtime import CannotEvaluate, evaluate, runtime_values, substitute
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.target import Target

TARGET = Target.parse(cuda="13.0", arch="sm120", python="cp311", platform="manylinux_2_28_aarch64")
VERSION_PY = b"__version__ = '2.9.0'\ncuda = '12.8'\nhip = None\ngit_version = 'abc'\n"


def _torch(tmp: Path, version: str, files: dict[str, bytes | Path], requires: tuple[str, ...] = ()) -> Path:
    return build_wheel(
        tmp, "torch", version, {"torch/__init__.py": b"", **files}, tag=TAG, requires_dist=requires
    )


def test_torch_values_come_from_its_version_py_over_its_label(tmp_path: Path) -> None:
    # GIVEN a torch wheel labelled +cu130 whose version.py says CUDA 12.8
    facts = wheel_facts_from_path(
        _torch(tmp_path, "2.9.0+cu130", {"torch/version.py": VERSION_PY}), unread_sources=BUILT_IN_UNREAD
    )
    values = runtime_values(TARGET, [facts])
    # THEN version.py decides, and the computed name says which values it read
    assert substitute("lib_cu{=torch.version.cuda.replace('.', '')=}.so", values) == (
        "lib_cu128.so",
        "torch.version.cuda='12.8'",
    )
    assert evaluate("torch.version.git_version", values) == "abc"
    assert evaluate("bool(torch.version.hip)", values) is False


@pytest.mark.parametrize(
    ("version", "requires", "cuda"),
    [
        ("2.9.0+cu130", (), "13.0"),
        ("2.9.0+cpu", (), None),
        ("2.9.0", ("nvidia-cuda-runtime-cu12==12.8.90",), "12.8"),
        # torch 2.14.1's own pin: the toolkit's meta package, cudart among its parts
        ("2.14.1", ('cuda-toolkit[cublas,cudart,nvrtc]==13.0.3; platform_system == "Linux"',), "13.0"),
    ],
)
def test_without_version_py_the_label_or_the_runtime_pin_says_the_build(
    tmp_path: Path, version: str, requires: tuple[str, ...], cuda: str | None
) -> None:
    # GIVEN torch facts stored before version.py was read (a wheel without one)
    facts = wheel_facts_from_path(_torch(tmp_path, version, {}, requires), unread_sources=BUILT_IN_UNREAD)
    # THEN its build's CUDA comes from its label, else from the CUDA runtime it pins
    assert evaluate("torch.version.cuda", runtime_values(TARGET, [facts])) == cuda


def test_a_torch_whose_build_is_not_known_leaves_cuda_unevaluated(tmp_path: Path) -> None:
    # GIVEN a torch wheel with no version.py, no label and no runtime pin
    facts = wheel_facts_from_path(_torch(tmp_path, "2.9.0", {}), unread_sources=BUILT_IN_UNREAD)
    # THEN torch.version.cuda cannot be evaluated (never guessed as a CPU build)
    with pytest.raises(CannotEvaluate, match=r"torch\.version\.cuda"):
        evaluate("torch.version.cuda", runtime_values(TARGET, [facts]))


def test_target_values_and_environment_defaults() -> None:
    values = runtime_values(TARGET, [])
    # THEN the target's Python and machine, Linux, and an override's default
    assert (
        evaluate("f'{sys.version_info.major}{sys.version_info.minor}-{platform.machine()}'", values)
        == "311-aarch64"
    )
    assert evaluate("sys.platform.startswith('linux') and os.name == 'posix'", values) is True
    assert evaluate("os.environ.get('PKG_LIB', 'libdefault.so')", values) == "libdefault.so"
    # AND a value nobody fixes cannot be evaluated
    with pytest.raises(CannotEvaluate):
        evaluate("os.environ['PKG_LIB']", values)


def test_hasattr_on_torch_is_true_for_what_the_target_fixes_and_unknown_otherwise(tmp_path: Path) -> None:
    # GIVEN a CUDA 12.8 torch
    facts = wheel_facts_from_path(
        _torch(tmp_path, "2.9.0", {"torch/version.py": VERSION_PY}), unread_sources=BUILT_IN_UNREAD
    )
    values = runtime_values(TARGET, [facts])
    # THEN torch.xpu exists but is not available, CUDA is, and an attribute nobody fixes is not guessed
    assert evaluate("hasattr(torch, 'xpu') and torch.xpu.is_available()", values) is False
    assert evaluate("torch.cuda.is_available()", values) is True
    with pytest.raises(CannotEvaluate):
        evaluate("hasattr(torch, '_C')", values)


def test_the_device_capability_is_the_target_gpus(tmp_path: Path) -> None:
    # GIVEN a CUDA torch and an sm120 target
    facts = wheel_facts_from_path(
        _torch(tmp_path, "2.9.0", {"torch/version.py": VERSION_PY}), unread_sources=BUILT_IN_UNREAD
    )
    # THEN a package's test of the device capability sees the target's GPU
    assert evaluate("torch.cuda.get_device_capability() >= (10, 0)", runtime_values(TARGET, [facts])) is True


def test_a_value_that_is_no_part_of_a_name_cannot_be_put_in_one() -> None:
    # GIVEN a file name whose run-time part evaluates to a list WHEN it is substituted THEN it is not
    # spelled into a nonsense name ("libcudart.so.['13', '0']"): the unit cannot be evaluated
    from abiprobe.analyze.runtime import CannotEvaluate, RuntimeValues, substitute

    with pytest.raises(CannotEvaluate):
        substitute("libx.so.{=('13.0').split('.')=}", RuntimeValues({}))
