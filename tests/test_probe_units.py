"""Pure parts of the probe: loader-message classification, layer planning, stub source, version specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from abiprobe.errors import UsageError
from abiprobe.model.facts import DistMetadata, ElfFacts, SymbolImport, WheelFacts
from abiprobe.model.target import driver_api_version
from abiprobe.probe.classify import classify_exit, classify_message, classify_report
from abiprobe.probe.interpreters import parse_version_spec, wanted_versions
from abiprobe.probe.model import ProbeResult, ProbeSet
from abiprobe.probe.plan import plan_layers
from abiprobe.probe.stub import driver_symbols, stub_source, version_script


def test_missing_soname_message_names_the_soname() -> None:
    # GIVEN the loader's words for an absent CUDA 12 library
    msg = "libnvrtc.so.12: cannot open shared object file: No such file or directory"
    # WHEN classified
    f = classify_message(msg, "ImportError")
    # THEN it is a missing soname, and the soname is evidence
    assert (f.outcome, f.detail) == ("missing_soname", {"soname": "libnvrtc.so.12"})


def test_undefined_symbol_message_carries_file_and_symbol() -> None:
    msg = "/x/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa"
    f = classify_message(msg, "ImportError")
    assert f.outcome == "undefined_symbol"
    assert f.detail["symbol"] == "_ZN3c104cuda9SetDeviceEa"
    assert f.detail["file"] == "/x/site-packages/sgl_kernel/common_ops.abi3.so"


def test_undefined_driver_symbol_from_ctypes_oserror() -> None:
    msg = "/opt/x/libflash.so: undefined symbol: cuGreenCtxCreate"
    f = classify_message(msg, "OSError")
    assert (f.outcome, f.detail["symbol"], f.detail["demangled"]) == (
        "undefined_symbol",
        "cuGreenCtxCreate",
        "cuGreenCtxCreate",
    )


def test_glibc_version_message_names_version_and_requirer() -> None:
    msg = (
        "/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found "
        "(required by /venv/site-packages/torch/lib/libtorch_cpu.so)"
    )
    f = classify_message(msg, "ImportError")
    assert f.outcome == "symbol_version"
    assert f.detail == {
        "version": "GLIBC_2.34",
        "required_by": "/venv/site-packages/torch/lib/libtorch_cpu.so",
        "provider": "/lib/x86_64-linux-gnu/libc.so.6",
    }


def test_wrong_elf_class_is_a_loader_error() -> None:
    f = classify_message("/x/_C.so: wrong ELF class: ELFCLASS32", "ImportError")
    assert f.outcome == "loader_error"


def test_plain_exception_keeps_type_and_last_frame() -> None:
    f = classify_message(
        "flashinfer-cubin version (0.4) does not match", "RuntimeError", "f/__init__.py:3 in x"
    )
    assert f.outcome == "python_exception"
    assert f.message == "RuntimeError: flashinfer-cubin version (0.4) does not match"
    assert f.detail["last_frame"] == "f/__init__.py:3 in x"


def test_no_kernel_image_message() -> None:
    f = classify_message(
        "CUDA error: no kernel image is available for execution on the device", "RuntimeError"
    )
    assert f.outcome == "no_kernel_image"


def test_negative_returncode_is_a_crash_by_signal() -> None:
    f = classify_exit(
        -11, False, 'Fatal Python error: Segmentation fault\n  File "/v/segv/__init__.py", line 1'
    )
    assert f is not None
    assert (f.outcome, f.message, f.detail["signal_name"]) == ("crash", "killed by SIGSEGV", "SIGSEGV")
    assert f.detail["last_frame"] == 'File "/v/segv/__init__.py", line 1'


def test_timeout_wins_over_returncode() -> None:
    f = classify_exit(None, True)
    assert f is not None and f.outcome == "timeout"


def test_clean_exit_is_not_a_failure() -> None:
    assert classify_exit(0, False) is None


def test_runner_stopped_mid_import_is_a_crash_naming_the_module() -> None:
    f = classify_report({"status": "importing", "module": "sgl_kernel"})
    assert (f.outcome, f.detail["module"]) == ("crash", "sgl_kernel")


def _wheel_facts(needed: tuple[str, ...], imports: tuple[SymbolImport, ...]) -> WheelFacts:
    elf = ElfFacts(path="k/_ops.so", elf_class=64, machine="x86_64", needed=needed, imports=imports)
    return WheelFacts("k-1-py3-none-any.whl", "0" * 64, 1, DistMetadata("k", "1"), elf=(elf,))


def test_driver_symbols_are_the_cu_imports_of_objects_needing_libcuda() -> None:
    # GIVEN one object linking libcuda.so.1 and importing driver and libc symbols
    imports = (SymbolImport("cuInit"), SymbolImport("cuLaunchKernelEx"), SymbolImport("memcpy", "GLIBC_2.14"))
    facts = [_wheel_facts(("libcuda.so.1", "libc.so.6"), imports), _wheel_facts((), (SymbolImport("cuFoo"),))]
    # WHEN the stub's symbol list is collected
    # THEN only the driver API names of the libcuda-linked object are kept
    assert driver_symbols(facts) == (("cuInit", None), ("cuLaunchKernelEx", None))


def test_stub_source_returns_no_device_and_reports_driver_version() -> None:
    src = stub_source(["cuLaunchKernelEx"], 12080)
    assert "CUresult cuLaunchKernelEx(void) { return 100; }" in src
    assert "*v = 12080" in src
    assert "CUresult cuInit(void) { return 100; }" in src


def test_version_script_only_for_versioned_imports() -> None:
    assert version_script([("cuInit", None)]) is None
    assert version_script([("cuA", "libcuda.so.1"), ("cuB", None)]) == "libcuda.so.1 { global: cuA; };\n"


def test_sets_sharing_their_first_import_wheel_share_a_layer() -> None:
    # GIVEN two sets on the same torch wheel and one on another torch
    t1, t2, k1, k2 = Path("t1.whl"), Path("t2.whl"), Path("k1.whl"), Path("k2.whl")
    tops = {t1: ("torch",), t2: ("torch",), k1: ("sgl_kernel",), k2: ("sgl_kernel",)}
    sets = [
        ProbeSet((t1, k1), ("torch", "sgl_kernel"), "a"),
        ProbeSet((t1, k2), ("torch", "sgl_kernel"), "b"),
        ProbeSet((t2, k1), ("torch", "sgl_kernel"), "c"),
    ]
    # WHEN planned
    layers = plan_layers(sets, tops)
    # THEN a and b share the t1 layer (preloading torch); c installs whole
    assert [(lay.wheels, lay.preload, lay.members) for lay in layers] == [
        ((t1,), ("torch",), (0, 1)),
        ((t2, k1), ("torch",), (2,)),
    ]


def test_version_specs() -> None:
    assert [parse_version_spec(s) for s in ("3.12", "cp313", "python3.10", "/usr/bin/python3")] == [
        (3, 12),
        (3, 13),
        (3, 10),
        None,
    ]


def test_wheel_tags_give_exact_versions_and_abi3_floor() -> None:
    names = [
        "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl",
        "sgl_kernel-0.3.21-cp310-abi3-linux_x86_64.whl",
    ]
    assert wanted_versions(names) == ([(3, 12)], (3, 10))


def test_driver_version_text() -> None:
    assert [driver_api_version(s) for s in ("13.0", "12.8", "12080", "cu129")] == [13000, 12080, 12080, 12090]
    with pytest.raises(UsageError):
        driver_api_version("thirteen")


def test_disagreement_is_loud_in_explanation_and_json() -> None:
    r = ProbeResult(label="s", outcome="missing_soname", message="libx.so.1: cannot open", expected="ok")
    assert r.disagrees
    assert r.explanation().startswith("DISAGREES with static verdict 'ok'")
    assert r.to_json()["disagrees"] is True
    assert r.to_verdicts()[0].status == "fail"


def test_probe_result_text_says_a_disagreement_the_versions_and_how_it_ran() -> None:
    import io

    from rich.console import Console

    from abiprobe.report.probe_text import render_result
    from abiprobe.ui.console import print_all

    # GIVEN a probe whose import failed where the static verdict said ok
    result = ProbeResult(
        "torch 2.9.0 + sglang-kernel 0.4.0",
        "missing_library",
        "libcudart.so.13: cannot open shared object file",
        module="sgl_kernel",
        versions=(("torch", "2.9.0"), ("sglang-kernel", None)),
        stubbed=True,
        python="3.12",
        installer="uv",
        duration=1.2349,
        expected="ok",
    )
    # WHEN it is rendered for a log
    stream = io.StringIO()
    print_all(render_result(result), Console(file=stream, width=200, color_system=None))
    lines = [line.rstrip() for line in stream.getvalue().splitlines()]
    # THEN the disagreement comes first, the versions read (a missing one as "-"), and the seconds are the
    # measured duration to two places (not the JSON's three-place rounding rounded again)
    assert lines[0] == " DISAGREEMENT  static verdict said 'ok'"
    assert lines[1] == "missing_library torch 2.9.0 + sglang-kernel 0.4.0"
    assert lines[2].startswith(
        "  DISAGREES with static verdict 'ok': import sgl_kernel failed with missing library"
    )
    assert any(line.split() == ["sglang-kernel", "-"] for line in lines)
    assert "  driver: stubbed (no CUDA driver on this host)" in lines
    assert "  seconds: 1.23" in lines
    assert not any(line.startswith("  kept:") or line.startswith("  smoke:") for line in lines)


def test_probe_text_keeps_square_brackets_of_labels_and_messages() -> None:
    import io

    from rich.console import Console

    from abiprobe.report.probe_text import render_result
    from abiprobe.ui.console import print_all

    # GIVEN a probe whose label, message and kept folder hold square brackets (rich markup's syntax)
    result = ProbeResult(
        "torch[cu130] 2.9.0",
        "missing_library",
        "libfoo[x].so: cannot open shared object file",
        versions=(("torch", "2.9.0"),),
        python="3.12",
        installer="uv",
        duration=1.0,
        temp_root="/tmp/probe[1]",
    )
    # WHEN it is rendered
    stream = io.StringIO()
    print_all(render_result(result), Console(file=stream, width=200, color_system=None))
    text = stream.getvalue()
    # THEN every bracketed part is printed as written, not read as markup and dropped
    assert "torch[cu130] 2.9.0" in text
    assert "libfoo[x].so" in text
    assert "kept: /tmp/probe[1]" in text
