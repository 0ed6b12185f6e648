"""`abiprobe inspect` end to end over real fixtures: .so, .cubin, .whl, directory, installed distribution."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.cbuild import build_shared
from support.nvbuild import CudaFixtures, cuda_fixtures, need_nvcc
from support.wheelbuild import build_wheel

from abiprobe.cli import main

SCHEMA = json.loads((Path(__file__).parent.parent / "abiprobe/schemas/inspect.schema.json").read_text())


@pytest.fixture(scope="session")
def cuda(tmp_path_factory: pytest.TempPathFactory) -> CudaFixtures:
    need_nvcc()
    return cuda_fixtures(tmp_path_factory.getbasetemp() / "nvbuild")


@pytest.fixture(scope="session")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inspect-libs")
    base = build_shared(
        d, "libbase.so.2", "int base_add(int a, int b) { return a + b; }\n", soname="libbase.so.2"
    )
    ext = build_shared(
        d,
        "kern.abi3.so",
        "extern int base_add(int, int);\n__attribute__((weak)) extern int maybe(void);\n"
        "int kern_entry(void) { return base_add(1, 2) + (maybe ? maybe() : 0); }\n",
        link=[base],
        runpath=["$ORIGIN/../base/lib"],
    )
    return {"base": base, "ext": ext}


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["inspect", *argv, "--json"])
    out = capsys.readouterr().out
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    return code, doc


def test_shared_object_facts_come_out_as_schema_valid_json(
    libs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an extension linked against libbase.so.2 with a $ORIGIN runpath and a weak import
    # WHEN it is inspected with --json
    code, doc = run_json(capsys, str(libs["ext"]))
    # THEN the document names its needed soname, run path and imports exactly
    assert code == 0
    (obj,) = doc["sources"][0]["objects"]
    assert "libbase.so.2" in obj["needed"]
    assert obj["runpath"] == ["$ORIGIN/../base/lib"]
    imports = {i["name"]: i for i in obj["imports"]}
    assert imports["base_add"]["weak"] is False
    assert imports["maybe"]["weak"] is True
    assert "kern_entry" in {e["name"] for e in obj["exports"]}
    assert obj["arch_verdict"] is None


def test_arch_verdict_for_arch_specific_build(cuda: CudaFixtures, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a library built with `-arch sm_120a` (nvcc 13 embeds sm_120a SASS, compute_120a PTX and also
    # plain compute_120 PTX: seen in the container headers)
    # WHEN it is judged for 12.0 and for 12.1
    _, on_120 = run_json(capsys, str(cuda.arch_specific_so), "--arch", "sm120")
    _, on_121 = run_json(capsys, str(cuda.arch_specific_so), "--arch", "12.1")
    # THEN 12.0 runs the SASS natively and 12.1 can only JIT the plain PTX
    v120 = on_120["sources"][0]["objects"][0]["arch_verdict"]
    v121 = on_121["sources"][0]["objects"][0]["arch_verdict"]
    assert (v120["status"], set(v120["deciding"])) == ("native", {"sm_120a"})
    assert (v121["status"], v121["deciding"]) == ("jit", ["compute_120"])


def test_wheel_lists_every_elf_member_with_metadata(
    libs: dict[str, Path], cuda: CudaFixtures, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a wheel with a plain library, an extension and a fatbin-carrying library
    whl = build_wheel(
        tmp_path,
        "demo-kernel",
        "1.0+cu130",
        {
            "demo_kernel/__init__.py": b"",
            "demo_kernel/kern.abi3.so": libs["ext"],
            "demo_kernel/lib/libbase.so.2": libs["base"],
            "demo_kernel/libgpu.so": cuda.multi_so,
        },
        requires_dist=["torch==2.9.1"],
    )
    # WHEN it is inspected for sm_90
    code, doc = run_json(capsys, str(whl), "--arch", "sm_90")
    # THEN metadata, all three objects and the GPU verdict are there
    src = doc["sources"][0]
    assert code == 0
    assert (src["kind"], src["metadata"]["name"], src["metadata"]["version"]) == (
        "wheel",
        "demo-kernel",
        "1.0+cu130",
    )
    assert src["metadata"]["requires_dist"] == ["torch==2.9.1"]
    assert src["metadata"]["top_level"] == ["demo_kernel"]
    paths = [o["path"] for o in src["objects"]]
    assert paths == ["demo_kernel/kern.abi3.so", "demo_kernel/lib/libbase.so.2", "demo_kernel/libgpu.so"]
    gpu = src["objects"][2]
    # one container per linked unit: the device-link container repeats the SASS targets
    assert gpu["gpu_summary"] == {"compute_120": 1, "sm_120": 2, "sm_90": 2}
    assert gpu["arch_verdict"]["status"] == "native"


def test_unpacked_directory_is_inspected_like_its_wheel(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a wheel unpacked into a directory
    whl = build_wheel(tmp_path, "demo", "2.0", {"demo/kern.abi3.so": libs["ext"]})
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(whl).extractall(unpacked)
    # WHEN the directory is inspected
    code, doc = run_json(capsys, str(unpacked))
    # THEN it reports the distribution and its extension
    src = doc["sources"][0]
    assert (code, src["kind"], src["metadata"]["name"]) == (0, "directory", "demo")
    assert [o["path"] for o in src["objects"]] == ["demo/kern.abi3.so"]


def test_installed_distribution_of_another_interpreter(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a fresh venv with a fixture wheel installed by pip
    whl = build_wheel(tmp_path, "probe-me", "3.1", {"probe_me/kern.abi3.so": libs["ext"]}, tag="py3-none-any")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "install", "-q", "--no-index",
         "--no-deps", str(whl)],
        check=True,
    )  # fmt: skip
    # WHEN the distribution is inspected by name through that interpreter
    code, doc = run_json(capsys, "probe-me", "--python", str(venv / "bin/python"))
    # THEN its installed extension is found
    src = doc["sources"][0]
    assert (code, src["kind"], src["metadata"]["version"]) == (0, "installed", "3.1")
    assert [o["path"] for o in src["objects"]] == ["probe_me/kern.abi3.so"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not an ELF file"),
        (b"\x7fELF\x02\x01\x01" + b"\0" * 9, "truncated"),
        (b"garbage" * 100, "not an ELF file"),
    ],
)
def test_hostile_file_gives_one_line_and_exit_one(tmp_path: Path, content: bytes, message: str) -> None:
    # GIVEN a file that is empty, truncated or garbage
    bad = tmp_path / "bad.so"
    bad.write_bytes(content)
    # WHEN the real command line inspects it
    proc = subprocess.run(
        [sys.executable, "-m", "abiprobe", "inspect", str(bad)], capture_output=True, text=True, check=False
    )
    # THEN it prints one readable error line, no traceback, and exits non-zero
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("abiprobe: error:"), proc.stderr
    assert message in lines[0]
    assert "Traceback" not in proc.stderr


def test_broken_zip_gives_one_line(tmp_path: Path) -> None:
    # GIVEN a .whl that is not a zip
    bad = tmp_path / "x-1.0-py3-none-any.whl"
    bad.write_bytes(b"PK\x03\x04 this is not really a zip")
    # WHEN inspected
    proc = subprocess.run(
        [sys.executable, "-m", "abiprobe", "inspect", str(bad)], capture_output=True, text=True, check=False
    )
    # THEN one error line mentions the zip
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "zip" in proc.stderr


def test_missing_target_is_a_usage_error(tmp_path: Path) -> None:
    code = main(["inspect", str(tmp_path / "nope.so")])
    assert code == 2
