"""Wheel-variant claims (variant.json, NVIDIA plugin vocabulary) against the fatbins and sonames."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.indexserver import IndexServer
from support.stacks import ABI3_TAG, _gpu_module
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.analyze.variants import parse_variant_json
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.cli import main
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

BUILT_IN_STACK = default_stack()

SCHEMA = json.loads((Path(__file__).parent.parent / "abiprobe/schemas/inspect.schema.json").read_text())
NEEDS13 = "its libraries need CUDA 13 (needs libcudart.so.13)"
CLAIMS = {"nvidia": {"cuda_version_lower_bound": "12.8", "sm_arch": ["120_real", "90_real", "90_virtual"]}}


@pytest.fixture(scope="module")
def variant_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # GIVEN an sm_120a-only module and an sm_90 + compute_90 module, linking a CUDA 13 runtime, whose
    # variant.json claims a CUDA 12.8 driver floor and sm_arch 120_real, 90_real, 90_virtual
    out = tmp_path_factory.mktemp("variants")
    cudart = build_shared(out, "libcudart.so.13", "int cudaGetDeviceCount(int* n) { *n = 0; return 0; }",
                          soname="libcudart.so.13")  # fmt: skip
    blackwell = _gpu_module(out, "bw_ops", "arch=compute_120a,code=sm_120a")
    hopper = _gpu_module(out, "hp_ops", "arch=compute_90,code=[sm_90,compute_90]")
    user = build_shared(
        out,
        "cuda_user.so",
        "int cudaGetDeviceCount(int*); int f(void) { int n; return cudaGetDeviceCount(&n); }",
        link=[cudart],
    )
    variant = {"variants": {"cu13sm": CLAIMS}}
    files = {
        "vk/bw_ops.abi3.so": blackwell,
        "vk/hp_ops.abi3.so": hopper,
        "vk/libcuda_user.so": user,
        "vk-1.0.dist-info/variant.json": json.dumps(variant).encode(),
    }
    return build_wheel(out / "wheels", "vk", "1.0", files, tag=ABI3_TAG)


def test_variant_json_is_read_for_the_wheel_label() -> None:
    data = json.dumps({"variants": {"a": {"nvidia": {"sm_arch": "90_real"}}, "b": {}}}).encode()
    assert parse_variant_json(data, "a") == {"sm_arch": ["90_real"]}
    assert parse_variant_json(data, "zzz") == {}


def test_claims_the_bytes_contradict_are_named_with_why(
    variant_wheel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(variant_wheel), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    v = doc["sources"][0]["variants"]
    assert v["claimed"] == {
        "cuda_version_lower_bound": ["12.8"],
        "sm_arch": ["120_real", "90_real", "90_virtual"],
    }
    # THEN the 12.8 floor (CUDA 13 sonames) and 120_real (only sm_120a) are contradicted; sm_90 claims hold
    assert [(c["feature"], c["value"]) for c in v["contradicted"]] == [
        ("cuda_version_lower_bound", "12.8"),
        ("sm_arch", "120_real"),
    ]
    assert v["contradicted"][1]["why"].startswith("only sm_120a SASS: arch-specific code runs on 12.0 alone")
    # AND the properties the bytes do support are printed in the plugin's vocabulary
    assert v["supported"] == {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real", "90_virtual"]}
    assert v["arch_specific_only"] == ["sm_120a"]


def test_human_output_names_contradicted_claims(
    variant_wheel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(variant_wheel)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "variant properties its bytes support (nvidia): cuda_version_lower_bound: 13.0; sm_arch: 90_real"
        in out
    )
    assert "contradicted sm_arch 120_real: only sm_120a SASS" in out


@pytest.fixture(scope="module")
def cuda13_user(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cuda13-user")
    cudart = build_shared(out, "libcudart.so.13", "int cudaFree(void* p) { (void)p; return 0; }",
                          soname="libcudart.so.13")  # fmt: skip
    return build_shared(
        out, "libuser.so", "int cudaFree(void*); int g(void) { return cudaFree(0); }", link=[cudart]
    )


def _labelled(out: Path, version: str, requires: list[str], lib: Path) -> Path:
    return build_wheel(out, "lk", version, {"lk/libuser.so": lib}, tag=ABI3_TAG, requires_dist=requires)


@pytest.mark.parametrize(
    ("version", "requires", "expected"),
    [
        ("1.0+cu128", [], f"local label +cu128 says CUDA 12, but {NEEDS13}"),
        ("1.0", ["nvidia-cublas-cu12"], f"requires nvidia-cublas-cu12 says CUDA 12, but {NEEDS13}"),
        ("1.0+cpu", [], f"local label +cpu claims a CPU-only build, but {NEEDS13}"),
        ("1.0+cu130", ["nvidia-cublas"], None),
    ],
)  # fmt: skip
def test_label_and_metadata_cuda_claims_are_checked_against_sonames(
    cuda13_user: Path, tmp_path: Path, version: str, requires: list[str], expected: str | None
) -> None:
    wheel = _labelled(tmp_path, version, requires, cuda13_user)
    t = Target.parse(cuda="13.0", python="cp312", platform="manylinux_2_28_x86_64")
    a = analyze_set(
        [wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)],
        t,
        builtin_profile("manylinux_2_28_x86_64"),
        stack=BUILT_IN_STACK,
    )
    found = [v.explanation for v in a.set_verdicts if v.check == "metadata" and v.status == "warn"]
    assert found == ([expected] if expected else [])


def test_a_remote_wheels_variant_json_is_read_by_range(
    variant_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the variant wheel on the local index server
    with IndexServer() as server:
        server.add_wheel(variant_wheel)
        argv = [
            "inspect",
            "vk==1.0",
            "--index-url",
            server.index_url,
            "--cache-dir",
            str(tmp_path / "c"),
            "--json",
        ]
        # WHEN it is inspected by name
        assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    # THEN its variant.json was read from the server and its claims judged against the bytes
    v = doc["sources"][0]["variants"]
    assert (doc["sources"][0]["kind"], v["claimed"]["sm_arch"]) == (
        "remote",
        ["120_real", "90_real", "90_virtual"],
    )
    assert [c["value"] for c in v["contradicted"]] == ["12.8", "120_real"]
