"""``check PROJECT==VERSION...`` answers for what pip would install on the *target*: the install closure
(resolved as the lock resolves it) judged with the items, wheels picked by the target's tags, a wheel's
tags read from its filename, and wheels whose bytes could not be read left ``unknown``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.indexserver import IndexServer
from support.solve_stacks import SolveStack, serve, solve_stack
from support.stacks import PLATFORM, PY_TAG, _torch
from support.wheelbuild import build_wheel

from abiprobe.cli import main

CHECK_SCHEMA = json.loads((Path(__file__).parents[1] / "abiprobe/schemas/check.schema.json").read_text())
OTHER_PY = "cp312" if PY_TAG != "cp312" else "cp311"
TARGET = ["--cuda", "13.0", "--arch", "sm120", "--platform", PLATFORM]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("solve-stack"))


@pytest.fixture(scope="module")
def tagged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``demo 1.0`` for this Python and another, plus a macOS wheel; ``hostonly`` for this Python only."""
    out = tmp_path_factory.mktemp("tagged")
    files = {"demo/__init__.py": b""}
    host, other = f"{PY_TAG}-{PY_TAG}-{PLATFORM}", f"{OTHER_PY}-{OTHER_PY}-{PLATFORM}"
    return {
        "host": build_wheel(out, "demo", "1.0", files, tag=host),
        "other": build_wheel(out, "demo", "1.0", files, tag=other),
        "mac": build_wheel(out, "demo", "1.0", files, tag=f"{OTHER_PY}-{OTHER_PY}-macosx_11_0_arm64"),
        "hostonly": build_wheel(out, "hostonly", "1.0", {"hostonly.py": b""}, tag=host),
        # the WHEEL file says linux_x86_64 (any glibc); the filename, which installers read, says 2.31
        "newer_glibc": build_wheel(
            out,
            "newglibc",
            "1.0",
            {"newglibc.py": b""},
            tag="py3-none-manylinux_2_31_x86_64",
            wheel_file_tags=["py3-none-linux_x86_64"],
        ),
    }


@pytest.fixture(scope="module")
def server(
    stack: SolveStack, tagged: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IndexServer]:
    # torch 2.9.1 keeps 2.9.0's ABI: sglang-kernel 0.4.0 loads with it but pins torch==2.9.0
    torch_291, _c10, _cpu = _torch(tmp_path_factory.mktemp("t291"), "2.9.1", unsigned=True, aoti=True)
    with IndexServer() as srv:
        serve(srv, stack)
        for path in (*tagged.values(), torch_291):
            srv.add_wheel(path)
        yield srv


def check(
    server: IndexServer, tmp: Path, capsys: pytest.CaptureFixture[str], *items: str, python: str = PY_TAG
) -> tuple[int, dict[str, Any]]:
    argv = ["check", *items, *TARGET, "--python", python, "--index-url", server.index_url]
    rc = main([*argv, "--cache-dir", str(tmp / "cache"), "--json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, CHECK_SCHEMA)
    return rc, doc


def test_a_req_check_judges_the_install_closure_and_says_what_it_added(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a kernel that needs libcudart.so.13, which only torch's pinned runtime wheel provides
    rc, doc = check(server, tmp_path, capsys, "torch==2.9.0", "sglang-kernel==0.4.0")
    # THEN the runtime wheel is added, with the requirement that brought it, and the set loads
    added = {a["wheel"]: a["why"] for a in doc["install"]["added"]}
    assert added == {"nvidia-cuda-runtime 13.0.96": "torch 2.9.0 requires nvidia-cuda-runtime==13.0.96"}
    assert (rc, doc["checks"]["sonames"], doc["checks"]["symbols"]) == (0, "ok", "ok")
    assert doc["status"] in ("ok", "warn")


def test_no_deps_judges_the_named_items_alone(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, doc = check(server, tmp_path, capsys, "torch==2.9.0", "sglang-kernel==0.4.0", "--no-deps")
    assert doc["install"]["added"] == [] and doc["install"]["closure"] is False
    assert (rc & 4, doc["checks"]["sonames"], doc["status"]) == (4, "fail", "fail")


def test_the_closure_follows_extras_and_markers_for_the_target(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # flashinfer 0.5.3 requires torch>=2.9, tinydep<3 (-> tinyextra[fast] -> tinyfast) and a dependency
    # whose marker is false on the target
    _rc, doc = check(server, tmp_path, capsys, "torch==2.9.0", "flashinfer-python==0.5.3")
    added = {a["wheel"]: a["why"] for a in doc["install"]["added"]}
    assert list(added) == ["nvidia-cuda-runtime 13.0.96", "tinydep 2.0", "tinyextra 1.0", "tinyfast 1.0"]
    assert added["tinyextra 1.0"] == "tinydep 2.0 requires tinyextra[fast]>=1"  # the extra's requirement
    assert added["tinyfast 1.0"] == "tinyextra 1.0 requires tinyfast"
    assert doc["checks"]["requires"] != "warn"  # nothing it requires is missing from the judged set


def test_project_version_is_looked_up_with_the_target_python_not_the_host(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, doc = check(server, tmp_path, capsys, "demo==1.0", "--no-deps", python=OTHER_PY)
    assert [i["filename"] for i in doc["install"]["items"]] == [
        f"demo-1.0-{OTHER_PY}-{OTHER_PY}-{PLATFORM}.whl"
    ]
    assert (rc, doc["checks"]["tags"]) == (0, "ok")


def test_a_version_with_no_wheel_for_the_target_is_one_line_not_another_platform(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["check", "hostonly==1.0", *TARGET, "--python", OTHER_PY, "--index-url", server.index_url]
    assert main([*argv, "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"no wheel of that version installs on {OTHER_PY} {PLATFORM}" in err and "Traceback" not in err


def test_tags_are_the_filename_s_not_the_wheel_file_s(
    tagged: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["check", str(tagged["newer_glibc"]), *TARGET, "--python", PY_TAG, "--no-deps", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert (rc, doc["checks"]["tags"]) == (64, "fail")
    assert "manylinux_2_31" in json.dumps(doc["set_verdicts"])


def test_an_added_wheel_that_cannot_be_read_leaves_the_set_unknown(
    stack: SolveStack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with IndexServer() as srv:
        serve(srv, stack)
        # GIVEN the runtime wheel's host drops every connection
        srv.fail(match=stack.wheels["runtime"].name, unless=".metadata", reset_after=0)
        rc, doc = check(srv, tmp_path, capsys, "torch==2.9.0", "sglang-kernel==0.4.0")
    # THEN the missing libcudart is not called a failure: the set is unknown, and exit 3 says so
    (added,) = doc["install"]["added"]
    assert added["wheel"] == "nvidia-cuda-runtime 13.0.96" and "connection" in added["unread"]
    assert (rc, doc["status"], doc["checks"]["sonames"]) == (3, "unknown", "unknown")
    assert doc["ok"] is False


def test_text_output_lists_the_added_wheels_and_why(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["check", "torch==2.9.0", "sglang-kernel==0.4.0", *TARGET, "--python", PY_TAG]
    main([*argv, "--index-url", server.index_url, "--cache-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "added by the install closure (1):" in out
    assert "+ nvidia-cuda-runtime 13.0.96: torch 2.9.0 requires nvidia-cuda-runtime==13.0.96" in out


def test_a_pin_that_forbids_the_named_set_blocks_it_and_the_rest_is_still_resolved(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN torch 2.9.1 and a kernel pinning torch==2.9.0: pip refuses them together
    rc, doc = check(server, tmp_path, capsys, "torch==2.9.1", "sglang-kernel==0.4.0")
    # THEN the closure is resolved for the named wheels as they are (the runtime wheel is added), the
    # loader checks pass, and the pin blocks the set: its own status, and exit bit 64 alone
    assert [a["wheel"] for a in doc["install"]["added"]] == ["nvidia-cuda-runtime 13.0.96"]
    assert (doc["checks"]["sonames"], doc["checks"]["symbols"]) == ("ok", "ok")
    assert (rc, doc["status"], doc["checks"]["requires"]) == (64, "blocked", "blocked")
    blocked = [v for v in doc["set_verdicts"] if v["status"] == "blocked"]
    assert [(v["subject"], v["explanation"]) for v in blocked] == [
        ("sglang-kernel 0.4.0", "requires torch==2.9.0 (set has torch 2.9.1)")
    ]


def test_a_named_wheel_that_cannot_be_read_is_unknown_not_an_error(
    stack: SolveStack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with IndexServer() as srv:
        serve(srv, stack)
        # GIVEN the kernel's wheel host drops every connection (its PEP 658 metadata still answers)
        srv.fail(match=stack.wheels["k040"].name, unless=".metadata", reset_after=0)
        rc, doc = check(srv, tmp_path, capsys, "torch==2.9.0", "sglang-kernel==0.4.0")
    # THEN every check that needs its bytes is unknown, with the reason, and so is the set (exit 3)
    (kernel,) = [i for i in doc["install"]["items"] if i["item"] == "sglang-kernel==0.4.0"]
    assert "connection" in kernel["unread"]
    unknown = {v["check"] for v in doc["set_verdicts"] if v["subject"] == kernel["filename"]}
    assert {"metadata", "files", "sonames", "symbols", "gpu_arch"} <= unknown
    assert (rc, doc["status"]) == (3, "unknown")


def _sdist(out: Path, name: str, version: str) -> Path:
    """A real source distribution of a pure-Python project (setup.py, PKG-INFO), as the index serves it."""
    import tarfile

    root = out / f"{name}-{version}"
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (root / "setup.py").write_text(
        f"from setuptools import setup\nsetup(name={name!r}, version={version!r}, packages=[{name!r}])\n"
    )
    path = out / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(root, arcname=root.name)
    return path


def test_a_requirement_only_an_sdist_meets_leaves_the_rest_of_the_closure_resolved(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN srcneed 1.0 (a wheel), which requires srconly==1.0, a release the index has only as an sdist
    # (a newer srconly has a wheel, which the pin rules out)
    out = tmp_path / "files"
    out.mkdir()
    server.add_wheel(build_wheel(out, "srcneed", "1.0", {"srcneed.py": b""}, tag="py3-none-any",
                                 requires_dist=["srconly==1.0"]))  # fmt: skip
    server.add_wheel(build_wheel(out, "srconly", "2.0", {"srconly/__init__.py": b""}, tag="py3-none-any"))
    server.add_wheel(_sdist(out, "srconly", "1.0"), project="srconly", metadata=False)
    # WHEN it is checked beside a kernel that needs the runtime wheel torch pins
    rc, doc = check(server, tmp_path, capsys, "torch==2.9.0", "sglang-kernel==0.4.0", "srcneed==1.0")
    # THEN the rest of the install is still resolved (the runtime wheel is added and the kernel loads),
    # and the sdist is said: pip builds it, and abiprobe does not judge what it builds
    added = [a["wheel"] for a in doc["install"]["added"]]
    assert "nvidia-cuda-runtime 13.0.96" in added and not any(a.startswith("srconly") for a in added)
    assert (doc["checks"]["sonames"], doc["checks"]["symbols"]) == ("ok", "ok")
    source = [v for v in doc["set_verdicts"] if v["evidence"].get("from_source")]
    assert len(source) == 1 and source[0]["status"] == "warn", doc["set_verdicts"]
    assert "srconly==1.0" in source[0]["explanation"] and "source distribution" in source[0]["explanation"]
    assert rc & 4 == 0 and doc["status"] in ("ok", "warn")


def test_a_library_a_build_from_source_may_install_is_not_known_missing(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN srcuse 1.0, whose library needs libsrcprov.so.1 and which requires srcprov==1.0, a release
    # the index has only as an sdist (torch-tensorrt's tensorrt, whose build fetches the TensorRT
    # libraries); and plainmiss 1.0, whose library needs libplainmiss.so.1 and which requires
    # puresrc==1.0, also only an sdist, of a project whose other releases are pure-Python wheels
    from support.cbuild import build_shared

    out = tmp_path / "files"
    prov = build_shared(
        out / "prov", "libsrcprov.so.1", "int prov(void) { return 1; }\n", soname="libsrcprov.so.1"
    )
    miss = build_shared(
        out / "miss", "libplainmiss.so.1", "int pm(void) { return 1; }\n", soname="libplainmiss.so.1"
    )
    use = build_shared(out / "use", "libsrcuse.so", "int prov(void);\nint use(void) { return prov(); }\n",
                       soname="libsrcuse.so", link=(prov,))  # fmt: skip
    plain = build_shared(out / "plain", "libplain.so", "int pm(void);\nint pl(void) { return pm(); }\n",
                         soname="libplain.so", link=(miss,))  # fmt: skip
    files = {"srcuse/__init__.py": b"from . import _ext\n", "srcuse/_ext.abi3.so": use}
    server.add_wheel(build_wheel(out, "srcuse", "1.0", files, tag=f"py3-none-{PLATFORM}",
                                 requires_dist=["srcprov==1.0"]))  # fmt: skip
    server.add_wheel(_sdist(out, "srcprov", "1.0"), project="srcprov", metadata=False)
    server.add_wheel(build_wheel(out, "plainmiss", "1.0", {"plainmiss/__init__.py": b"from . import _ext\n",
                                 "plainmiss/_ext.abi3.so": plain}, tag=f"py3-none-{PLATFORM}",
                                 requires_dist=["puresrc==1.0"]))  # fmt: skip
    server.add_wheel(build_wheel(out, "puresrc", "2.0", {"puresrc/__init__.py": b""}, tag="py3-none-any"))
    server.add_wheel(_sdist(out, "puresrc", "1.0"), project="puresrc", metadata=False)
    # WHEN each is checked as a user types it
    rc, doc = check(server, tmp_path, capsys, "srcuse==1.0")
    rc_plain, plain_doc = check(server, tmp_path, capsys, "plainmiss==1.0")
    # THEN the library the build may install is not known missing: unknown, naming the build
    unit = next(u for u in doc["units"] if u["path"] == "srcuse/_ext.abi3.so")
    sonames = [v for v in unit["verdicts"] if v["check"] == "sonames"]
    assert [v["status"] for v in sonames] == ["unknown"], unit["verdicts"]
    assert "libsrcprov.so.1" in sonames[0]["explanation"] and "srcprov" in sonames[0]["explanation"]
    assert (rc, doc["status"]) == (3, "unknown")
    # AND where the build is of a pure-Python project a missing library stays a failure
    assert plain_doc["checks"]["sonames"] == "fail" and rc_plain & 4, plain_doc["checks"]


def test_a_bare_name_beside_an_item_that_needs_an_sdist_is_still_picked(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN bareneed 1.0, which requires baresrc==1.0 (only an sdist), and barepick 1.0 and 2.0
    out = tmp_path / "files"
    out.mkdir()
    server.add_wheel(build_wheel(out, "bareneed", "1.0", {"bareneed.py": b""}, tag="py3-none-any",
                                 requires_dist=["baresrc==1.0"]))  # fmt: skip
    server.add_wheel(_sdist(out, "baresrc", "1.0"), project="baresrc", metadata=False)
    for version in ("1.0", "2.0"):
        server.add_wheel(build_wheel(out, "barepick", version, {"barepick.py": b""}, tag="py3-none-any"))
    # WHEN the user names barepick without a version beside bareneed==1.0
    rc, doc = check(server, tmp_path, capsys, "bareneed==1.0", "barepick")
    # THEN barepick's newest is picked (no usage error), and the sdist is said as for the item alone
    assert rc != 2 and "barepick 2.0" in doc["wheels"], (rc, doc["wheels"])
    assert any(v["evidence"].get("from_source") for v in doc["set_verdicts"]), doc["set_verdicts"]


def test_a_symbol_its_scope_exports_under_another_signature_fails_whatever_a_build_installs(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN srcabi 1.0, which requires srcprov2==1.0 (only an sdist), whose extension needs
    # libsrcprov2.so.1 (no wheel has it) and ns::f(int) from its own libsrcbase.so, which now exports
    # ns::f(unsigned int) (built against the old header, as an extension built for another torch is)
    from support.cbuild import build_shared

    out = tmp_path / "files"
    prov = build_shared(
        out / "p", "libsrcprov2.so.1", "int prov2(void) { return 1; }\n", soname="libsrcprov2.so.1"
    )
    old = build_shared(out / "old", "libsrcbase.so", "namespace ns { int f(int x) { return x; } }\n",
                       soname="libsrcbase.so", cxx=True)  # fmt: skip
    new = build_shared(out / "new", "libsrcbase.so", "namespace ns { int f(unsigned x) { return 1; } }\n",
                       soname="libsrcbase.so", cxx=True)  # fmt: skip
    ext = build_shared(out / "ext", "_ext.abi3.so",
                       "namespace ns { int f(int); }\nextern \"C\" int prov2(void);\n"
                       "extern \"C\" int use(void) { return ns::f(1) + prov2(); }\n",
                       link=(old, prov), runpath=("$ORIGIN",), cxx=True)  # fmt: skip
    files = {
        "srcabi/__init__.py": b"from . import _ext\n",
        "srcabi/_ext.abi3.so": ext,
        "srcabi/libsrcbase.so": new,
    }
    server.add_wheel(build_wheel(out, "srcabi", "1.0", files, tag=f"py3-none-{PLATFORM}",
                                 requires_dist=["srcprov2==1.0"]))  # fmt: skip
    server.add_wheel(_sdist(out, "srcprov2", "1.0"), project="srcprov2", metadata=False)
    # WHEN it is checked
    rc, doc = check(server, tmp_path, capsys, "srcabi==1.0")
    # THEN the library the build may install is unknown, but the changed signature is a failure: the
    # import fails whatever the build installs
    unit = next(u for u in doc["units"] if u["path"] == "srcabi/_ext.abi3.so")
    got = {v["check"]: v["status"] for v in unit["verdicts"]}
    assert (got["sonames"], got["symbols"]) == ("unknown", "fail"), unit["verdicts"]
    assert doc["import_status"] == "fail" and rc & 8, (rc, doc["import_status"])
