"""Benchmark a warm offline ``abiprobe solve`` of the default stack against ``uv pip compile --offline``
of the set it chooses (run by hand; issue 31's goal: within 1.0x uv's time).

abiprobe solves the README's target (``--cuda 13.0 --arch sm120 --python 3.12 --platform
manylinux_2_28_x86_64``) offline over a scratch copy of the committed ``wheel_index_cache/`` (every
verdict stored), writing its matrix files into a scratch folder, as a user types it. uv resolves the
chosen three pins (from the committed matrix) for the same Python and platform, offline, from a scratch
uv cache filled by one online compile first (about 6 MB of metadata: the only network use; pass
``--uv-cache DIR`` to reuse a filled one). uv runs twice: as typed (it looks for an interpreter on PATH
first, which through version-manager shims can cost it half a second) and with ``--python`` naming a
CPython 3.12 (its resolution alone). The commands alternate, each in a fresh process with bytecode
cached and no user pip/uv configuration; medians of N runs (bench/sidebyside.py).

    python bench/bench_warm_compile.py [--runs 5] [--uv-cache DIR] [--abiprobe CMD] [--json OUT]

``--abiprobe`` runs another build (``"env PYTHONPATH=/tmp/old python -m abiprobe"``) for a before/after.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from sidebyside import alternate, ratios  # noqa: E402

TARGET = ["--cuda", "13.0", "--arch", "sm120", "--python", "3.12", "--platform", "manylinux_2_28_x86_64"]
UV_TARGET = ["--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_28"]
MATRIX = "cu130-sm120-cp312-manylinux_2_28_x86_64"


def clean_env(local: Path) -> dict[str, str]:
    """The installer's default configuration only, bytecode cached (as an installed tool runs), this
    machine's abiprobe state in a scratch folder."""
    dropped = ("PIP_FIND_LINKS", "PIP_CERT", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1", "ABIPROBE_LOCAL_DIR": str(local)}


def chosen_pins() -> list[str]:
    doc = json.loads((ROOT / "matrices" / f"{MATRIX}.json").read_text())
    return list(doc["chosen"].values())


def uv_executable() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if not found:
        raise SystemExit("uv not found: it comes with the test extra (pip install -e '.[test]')")
    return found


def python312() -> str | None:
    """A Python 3.12 interpreter that runs (a version manager's shim that cannot is skipped)."""
    candidates = [
        shutil.which("python3.12") or "",
        *sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.12*/bin/python3.12"))),
    ]
    for c in candidates:
        if c and subprocess.run([c, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return c
    return None


def warm_vs_uv(
    runs: int = 5, uv_cache: Path | None = None, abiprobe: list[str] | None = None
) -> dict[str, Any]:
    """The row: both commands' medians, their ratios, and whether abiprobe's lock is the committed one."""
    uv = uv_executable()
    abiprobe = abiprobe or [str(Path(sys.executable).with_name("abiprobe"))]
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        t = Path(tmp)
        env = clean_env(t / "local")
        cache, out = t / "wheel_index_cache", t / "matrices"
        shutil.copytree(ROOT / "wheel_index_cache", cache)
        pins = t / "pins.txt"
        pins.write_text("\n".join(chosen_pins()) + "\n")
        if uv_cache is None:
            uv_cache = t / "uv-cache"
            fill = [uv, "pip", "compile", "-q", "--cache-dir", str(uv_cache), *UV_TARGET, str(pins),
                    "-o", str(t / "uv-online.txt")]  # fmt: skip
            subprocess.run(fill, cwd=t, env=env, check=True, capture_output=True)
        commands = {
            "abiprobe_solve_offline": [
                *abiprobe,
                "solve",
                *TARGET,
                "--offline",
                "--cache-dir",
                str(cache),
                "--out-dir",
                str(out),
            ],
            "uv_pip_compile_offline": [
                uv,
                "pip",
                "compile",
                "-q",
                "--offline",
                "--cache-dir",
                str(uv_cache),
                *UV_TARGET,
                str(pins),
                "-o",
                str(t / "uv.txt"),
            ],
        }
        interpreter = python312()
        if interpreter is not None:
            commands["uv_pip_compile_offline_python_given"] = [
                *commands["uv_pip_compile_offline"], "--python", interpreter,
            ]  # fmt: skip
        # 3: the answer is incomplete (the hosts that do not resolve here are not in the cache)
        results: dict[str, Any] = alternate(commands, t, runs, env, ok=(0, 3))
        lock = f"{MATRIX}.lock.txt"
        committed = (ROOT / "matrices" / lock).read_bytes()
        results["lock_same_as_committed"] = (out / lock).read_bytes() == committed
        results["uv_resolved_packages"] = sum(
            1 for line in (t / "uv.txt").read_text().splitlines() if line and not line.startswith((" ", "#"))
        )
    results["pins"] = chosen_pins()
    results.update(ratios(results["abiprobe_solve_offline"], results["uv_pip_compile_offline"]))
    results["goal"] = {"within 1.0x uv's time": (results["ratio_seconds"] or 99) <= 1.0}
    given = results.get("uv_pip_compile_offline_python_given")
    if given is not None:
        results["ratio_seconds_python_given"] = ratios(results["abiprobe_solve_offline"], given)[
            "ratio_seconds"
        ]
    return results


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--uv-cache", type=Path, help="a uv cache already filled for these pins")
    parser.add_argument("--abiprobe", help="command that runs abiprobe (default: the one beside python)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    abiprobe = shlex.split(args.abiprobe) if args.abiprobe else None
    text = json.dumps(warm_vs_uv(args.runs, args.uv_cache, abiprobe), indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
