"""PyTorch's index as its generator writes it: wheels on a second host, ``%2B`` in hrefs, PEP 658 files
named by ``data-dist-info-metadata`` / ``data-core-metadata``, a non-standard ``data-upload-time``, and
nightly anchors without hashes. Each is read, and used."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.indexserver import IndexServer, ServedFile
from support.pytorch_pages import Anchor, key_of, pytorch_page
from support.solve_stacks import solve_stack
from support.stacks import CP_TAG, PY_TAG
from support.wheelbuild import repack

from abiprobe.cli import main
from abiprobe.index.pep503 import parse_html_page

RUNTIME = ["nvidia-cuda-runtime==13.0.96"]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = solve_stack(tmp_path_factory.mktemp("solve-stack")).wheels
    out = tmp_path_factory.mktemp("pytorch")
    return {
        "runtime": base["runtime"],
        "t28": repack(base["torch_28"], out, "torch", "2.8.0+cu130", CP_TAG, RUNTIME),
        "t29": repack(base["torch_29"], out, "torch", "2.9.0+cu130", CP_TAG, RUNTIME),
        "nightly": repack(base["torch_29"], out, "torch", "2.10.0.dev20260101+cu130", CP_TAG, RUNTIME),
    }


class PyTorchIndex:
    """Pages on one server (``/whl/cu130/<project>/``), torch's wheels on a second one, as in production."""

    def __init__(self, wheels: dict[str, Path], *, nightly: bool = False) -> None:
        self.pages, self.files = IndexServer(), IndexServer()
        self.served: dict[str, ServedFile] = {}
        for key in ("t28", "t29", "nightly"):
            path = wheels[key]
            self.served[key] = self.files.add_wheel(path, listed=False, at=f"/whl/cu130/{path.name}")
        runtime = wheels["runtime"]
        self.served["runtime"] = self.pages.add_wheel(runtime, listed=False, at=f"/whl/cu130/{runtime.name}")
        torch = [
            Anchor(self.served["t28"], self.files.url, "2025-10-15T17:02:11Z"),
            Anchor(self.served["t29"], self.files.url, "2026-02-03T09:30:00.123000Z"),
        ]
        if nightly:
            torch = [Anchor(self.served["nightly"], self.files.url, "2026-01-01T08:00:00Z", nightly=True)]
        self.pages.add_page("/whl/cu130/torch/", pytorch_page("torch", torch))
        runtime_anchor = Anchor(self.served["runtime"], "", "2025-08-01T00:00:00Z")
        self.pages.add_page(
            "/whl/cu130/nvidia-cuda-runtime/", pytorch_page("nvidia-cuda-runtime", [runtime_anchor])
        )
        self.index_url = self.pages.url + "/whl/cu130/"

    def close(self) -> None:
        self.pages.stop()
        self.files.stop()


@pytest.fixture
def index(wheels: dict[str, Path]) -> Iterator[PyTorchIndex]:
    idx = PyTorchIndex(wheels)
    yield idx
    idx.close()


def _solve(index: PyTorchIndex, tmp: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    stack = tmp / "stack.toml"
    stack.write_text('[stack]\nmembers = [{role = "torch", names = ["torch"]}]\n')
    argv = ["solve", "--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG, "--platform"]
    argv += ["manylinux_2_28_x86_64", "--index", index.index_url, "--stack", str(stack)]
    argv += ["--cache-dir", str(tmp / "c"), "--out-dir", str(tmp / "m"), *extra]
    rc = main(argv)
    doc: dict[str, Any] = json.loads(next((tmp / "m").glob("*.json")).read_text())
    lock = next((tmp / "m").glob("*.lock.txt"), None)
    return rc, doc, lock.read_text() if lock is not None else ""


def test_every_attribute_of_a_generated_anchor_is_read(index: PyTorchIndex) -> None:
    # GIVEN torch's page as the generator writes it; WHEN it is parsed
    body = pytorch_page("torch", [Anchor(index.served["t29"], index.files.url, "2026-02-03T09:30:00Z")])
    (f,) = parse_html_page(body, index.index_url + "torch/").files
    t29 = index.served["t29"]
    # THEN the %2B href names the second host's file, the text's + gives the filename, and every attribute
    assert f.filename == "torch-2.9.0+cu130-" + CP_TAG + ".whl"
    assert f.url == index.files.url + key_of(t29)
    assert "%2B" in f.url
    assert f.sha256 == t29.sha256
    assert t29.metadata is not None
    assert f.metadata_url == f.url + ".metadata"
    assert f.has_metadata
    assert f.upload_time == "2026-02-03T09:30:00Z"


def test_pep658_metadata_alone_names_the_core_metadata(index: PyTorchIndex) -> None:
    # GIVEN an older anchor with only data-dist-info-metadata (before PEP 714 renamed it)
    href = f"{index.files.url}{key_of(index.served['t28'])}"
    body = f'<a href="{href}" data-dist-info-metadata="sha256=abc">x.whl</a>'.encode()
    (f,) = parse_html_page(body, index.index_url + "torch/").files
    # THEN the metadata file and its hash are known all the same
    assert dict(f.metadata_hashes) == {"sha256": "abc"}


def test_torch_comes_from_the_second_host_and_its_metadata_from_url_dot_metadata(
    index: PyTorchIndex, tmp_path: Path
) -> None:
    # WHEN solving a torch-only stack against the PyTorch-shaped index
    rc, doc, lock = _solve(index, tmp_path)
    t29 = index.served["t29"]
    # THEN torch 2.9.0+cu130 is chosen, read from the second host (its pages host never serves a wheel)
    assert rc == 0
    assert doc["chosen"] == {"torch": "torch==2.9.0+cu130"}
    assert index.files.requests[t29.path] > 0
    assert not [p for p in index.pages.requests if "/torch-" in p]
    # AND the lock pins it by the index's hash at its %2B URL
    assert f"torch @ {index.files.url}{key_of(t29)} \\" in lock
    assert f"--hash=sha256:{t29.sha256}" in lock


def test_dependencies_are_resolved_from_the_pep658_files(index: PyTorchIndex, tmp_path: Path) -> None:
    # WHEN solving: THEN the runtime torch pins was resolved from its URL.metadata file (hash-checked
    # against data-core-metadata), and is in the lock
    rc, _doc, lock = _solve(index, tmp_path)
    assert rc == 0
    assert index.pages.requests[index.served["runtime"].path + ".metadata"] == 1
    assert "nvidia-cuda-runtime" in lock


def test_exclude_newer_is_decided_by_the_upload_time(index: PyTorchIndex, tmp_path: Path) -> None:
    # WHEN solving with --exclude-newer between the two torch uploads
    rc, doc, _lock = _solve(index, tmp_path, "--exclude-newer", "2026-01-01")
    # THEN torch 2.9.0 (uploaded 2026-02-03) is not a candidate, and 2.8.0 (2025-10-15) is chosen
    assert rc == 0
    assert doc["chosen"] == {"torch": "torch==2.8.0+cu130"}
    (why,) = [e["reason"] for e in doc["excluded"] if e["version"] == "2.9.0+cu130"]
    assert why == "uploaded 2026-02-03T09:30:00.123000Z, after --exclude-newer"


def test_a_nightly_anchor_without_a_hash_is_read_whole_and_locked_by_its_bytes(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN a nightly page whose torch anchor carries no #sha256
    idx = PyTorchIndex(wheels, nightly=True)
    try:
        rc, doc, lock = _solve(idx, tmp_path, "--pre")
        nightly = idx.served["nightly"]
        # THEN the nightly is chosen, its bytes hashed whole, and the lock pins that sha256
        assert rc == 0
        assert doc["chosen"] == {"torch": "torch==2.10.0.dev20260101+cu130"}
        assert f"--hash=sha256:{nightly.sha256}" in lock
    finally:
        idx.close()


def test_a_bad_exclude_newer_is_one_line(
    index: PyTorchIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["solve", "--cuda", "13.0", "--index", index.index_url, "--exclude-newer", "last tuesday"]
    assert main([*argv, "--cache-dir", str(tmp_path / "c"), "--out-dir", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "abiprobe: error: --exclude-newer 'last tuesday': expected a date (2026-03-01) or an RFC 3339 time"
    ]
