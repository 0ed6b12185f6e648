"""System-library profiles (built-in, derived, from this host), the stable-ABI list, driver API table."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from support.nvbuild import need_nvcc

from abiprobe.analyze.driver_api import DRIVER_SYMBOLS, driver_symbol_introduced, is_driver_api_name
from abiprobe.analyze.profiles import (
    BUILTIN_PROFILES,
    ProfileError,
    builtin_profile,
    load_profile,
    profile_for,
    stable_abi_names,
)
from abiprobe.errors import UsageError
from abiprobe.host.ldconfig import profile_from_host


@pytest.mark.parametrize("name", BUILTIN_PROFILES)
def test_every_builtin_profile_loads_with_glibc_and_libstdcxx(name: str) -> None:
    p = builtin_profile(name)
    assert p.library("libc.so.6") is not None and p.library("libstdc++.so.6") is not None
    assert p.driver is True


def test_manylinux_2_28_stops_at_glibc_2_28_and_glibcxx_3_4_25() -> None:
    p = builtin_profile("manylinux_2_28_x86_64")
    libc, cxx = p.library("libc.so.6"), p.library("libstdc++.so.6")
    assert libc is not None and cxx is not None
    assert "GLIBC_2.28" in libc.versions and "GLIBC_2.29" not in libc.versions
    assert "GLIBCXX_3.4.25" in cxx.versions and "GLIBCXX_3.4.26" not in cxx.versions
    assert p.library("libnuma.so.1") is None


def test_manylinux_2_34_has_glibc_2_34_in_libc() -> None:
    libc = builtin_profile("manylinux_2_34_x86_64").library("libc.so.6")
    assert libc is not None and "GLIBC_2.34" in libc.versions


def test_profile_for_picks_the_newest_builtin_not_above_the_target_glibc() -> None:
    assert profile_for("x86_64", (2, 36)).name == "manylinux_2_34_x86_64"
    assert profile_for("x86_64", (2, 31)).name == "manylinux_2_28_x86_64"
    assert profile_for("aarch64", (2, 28)).name == "manylinux_2_28_aarch64"


def test_unknown_builtin_profile_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown profile 'nope'"):
        builtin_profile("nope")


def test_derived_profile_file_adds_and_removes_libraries(tmp_path: Path) -> None:
    # GIVEN a profile file deriving from manylinux_2_28 with libnuma added and no driver
    f = tmp_path / "p.json"
    f.write_text(
        json.dumps(
            {
                "format": "abiprobe-profile/1",
                "base": "manylinux_2_28_x86_64",
                "name": "numa-host",
                "add": {"libnuma.so.1": {"versions": ["libnuma_1.1"]}},
                "remove": ["librt.so.1"],
                "driver": False,
            }
        )
    )
    # WHEN loaded
    p = load_profile(f)
    # THEN it has libnuma, lacks librt and the driver
    assert (p.name, p.has("libnuma.so.1"), p.has("librt.so.1"), p.has("libcuda.so.1")) == (
        "numa-host",
        True,
        False,
        False,
    )


def test_malformed_profile_file_raises_one_line_error(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_text('{"format": "abiprobe-profile/1", "name": "x"}')
    with pytest.raises(ProfileError, match="malformed profile"):
        load_profile(f)


def test_profile_json_round_trips() -> None:
    from abiprobe.analyze.profiles import profile_from_json

    p = builtin_profile("manylinux_2_34_aarch64")
    assert profile_from_json(p.to_json()).to_json() == p.to_json()


@pytest.mark.parametrize("name", BUILTIN_PROFILES)
def test_a_builtin_profile_cut_on_first_use_answers_as_one_built_whole(name: str) -> None:
    import dataclasses

    from abiprobe.analyze.profiles import _builtin_document, profile_from_json

    # GIVEN a built-in profile (its export tables cut on first use) and the same document built whole
    lazy, whole = builtin_profile(name), profile_from_json(_builtin_document(name), name)
    # THEN every library defines the same symbols at the same versions, and says so the same way
    for a, b in zip(lazy.libraries, whole.libraries, strict=True):
        assert a.soname == b.soname and a.versions == b.versions
        assert (a.exports is None) == (b.exports is None)
        assert dict(a.exports or {}) == dict(b.exports or {})
        for symbol in ("malloc", "memcpy", "_ZSt4cout", "no_such_symbol_at_all"):
            for version in (None, "GLIBC_2.2.5", "GLIBC_2.17", "GLIBCXX_3.4"):
                assert a.provides(symbol, version) == b.provides(symbol, version)
    assert lazy.to_json() == whole.to_json()
    # AND a profile made from it with one library less has a digest of its own (a cache key never shared)
    fewer = dataclasses.replace(lazy, libraries=lazy.libraries[1:])
    assert fewer.digest() not in (lazy.digest(), whole.digest())
    assert lazy.digest() == builtin_profile(name).digest()


def test_host_profile_reads_real_version_definitions_and_exports() -> None:
    # GIVEN this machine's libc and libstdc++ WHEN read from their bytes
    p = profile_from_host(("libc.so.6", "libstdc++.so.6"))
    libc = p.library("libc.so.6")
    assert libc is not None and libc.exports is not None
    # THEN versions and default exports are those of the real files
    assert "GLIBC_2.34" in libc.versions
    assert libc.provides("pthread_create", "GLIBC_2.34") is True
    assert libc.provides("no_such_function_abiprobe", None) is False


def test_stable_abi_list_has_limited_api_names_only() -> None:
    names = stable_abi_names()
    assert {"PyModule_Create2", "PyList_New", "_Py_Dealloc"} <= names
    assert "PyUnicode_AsUTF8" not in names and "_PyObject_GC_Malloc" not in names


def _cuda_include() -> Path:
    """The include directory of the toolkit behind ``nvcc`` (asked from nvcc: it may be a wrapper)."""
    nvcc = need_nvcc()
    out = subprocess.run(
        [nvcc, "--dryrun", "-c", "-x", "cu", "/dev/null", "-o", "/dev/null"], capture_output=True, text=True
    ).stderr
    top = re.search(r"^#\$ TOP=(.+)$", out, re.M)
    assert top is not None, out
    return Path(top.group(1).strip()).resolve() / "include"


def test_every_driver_symbol_is_declared_in_the_local_cuda_headers() -> None:
    # GIVEN the CUDA toolkit's cuda.h WHEN looking for each tabled name THEN each is declared or #defined to
    text = (_cuda_include() / "cuda.h").read_text(errors="replace")
    declared = set(re.findall(r"CUDAAPI\s+(cu\w+)\s*\(", text)) | set(
        re.findall(r"#define\s+cu\w+\s+.*?(cu\w+)", text)
    )
    assert sorted(n for n in DRIVER_SYMBOLS if n not in declared) == []


def test_driver_symbol_versions_match_the_pfn_typedefs() -> None:
    # GIVEN cudaTypedefs.h's PFN_<name>_v<NNNNN> THEN each unsuffixed name has its oldest version
    text = (_cuda_include() / "cudaTypedefs.h").read_text(errors="replace")
    for name, version in DRIVER_SYMBOLS.items():
        if re.search(r"_v\d$", name):
            continue
        found = sorted(int(v) for v in re.findall(rf"PFN_{name}_v(\d+)\b", text))
        assert found, name
        assert (found[0] // 1000, found[0] % 1000 // 10) == version, name


def test_driver_symbol_lookup_folds_per_thread_stream_suffixes() -> None:
    assert driver_symbol_introduced("cuGreenCtxCreate") == (12, 4)
    assert driver_symbol_introduced("cuMemPrefetchAsync_v2_ptsz") == (12, 2)
    assert driver_symbol_introduced("cuInit") is None
    assert is_driver_api_name("cuInit") and not is_driver_api_name("cudaMalloc")
