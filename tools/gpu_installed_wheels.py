"""GPU host check of issue 27 item 7: torchvision / torchaudio wheels on top of an installed torch.

For each wheel in a local folder: ``check --installed --no-deps NAME==V`` and ``probe --installed
--no-deps NAME==V`` (the installer's dry run offline: ``--find-links DIR --no-index``), then a real
install into a throwaway folder (``pip install --target T --no-deps WHEEL``) put first on ``sys.path``,
a real import and a first GPU op (``torchvision.ops.nms`` on CUDA tensors; ``torchaudio.functional.lfilter``
on a CUDA tensor). Prints a Markdown table: wheel, static verdict, probe verdict, real result, agree.

Run from the repository root on the GPU host (no network needed; the wheels travel in .whl/gpu27/):

    PYTHONPATH=$PWD python3 tools/gpu_installed_wheels.py run .whl/gpu27 > $OUT/installed-wheels.md

Fetch the wheels on a host with network (the default index; see ``download``):

    python3 tools/gpu_installed_wheels.py download .whl/gpu27

A trailing ``torchvision`` or ``torchaudio`` limits either command to one project, so the wheels can
travel in two device calls when together they pass the 64 MiB a call may carry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WHEELS = {
    "torchvision": ("0.24.1", "0.25.0", "0.26.0", "0.27.0", "0.29.2"),
    "torchaudio": ("2.9.1", "2.10.0", "2.11.0", "2.11.1"),
}
TARGET = (
    "--python-version",
    "3.12",
    "--implementation",
    "cp",
    "--abi",
    "cp312",
    "--platform",
    "manylinux_2_28_x86_64",
)
FIRST_OP = {
    "torchvision": (
        "import torch, torchvision; "
        "b = torch.tensor([[0., 0., 10., 10.], [1., 1., 11., 11.]], device='cuda'); "
        "s = torch.tensor([0.9, 0.8], device='cuda'); "
        "print('nms', torchvision.ops.nms(b, s, 0.5).tolist(), torchvision.__version__)"
    ),
    "torchaudio": (
        "import torch, torchaudio; x = torch.randn(1, 1000, device='cuda'); "
        "a = torch.tensor([1.0, -0.5], device='cuda'); bb = torch.tensor([0.5, 0.5], device='cuda'); "
        "print('lfilter', tuple(torchaudio.functional.lfilter(x, a, bb).shape), torchaudio.__version__)"
    ),
}


def download_command(dest: str, only: str | None = None) -> list[str]:
    """``pip download`` of exactly the wheels above (cp312, manylinux_2_28 x86_64, no dependencies) from
    the default index (``only``: one project's); the user's pip configuration is bypassed so pip's
    built-in default index is the one used."""
    reqs = [f"{name}=={v}" for name, versions in WHEELS.items() if only in (None, name) for v in versions]
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        *TARGET,
        "--dest",
        dest,
        *reqs,
    ]


def download(dest: str, only: str | None = None) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    print(" ".join(download_command(dest, only)))
    rc = subprocess.call(download_command(dest, only), env=env)
    total = sum(p.stat().st_size for p in Path(dest).glob("*.whl"))
    print(f"{len(list(Path(dest).glob('*.whl')))} wheels, {total / 2**20:.1f} MiB in {dest}")
    return rc


def _abiprobe(*args: str) -> tuple[int, dict[str, object] | None, str]:
    proc = subprocess.run([sys.executable, "-m", "abiprobe", *args, "--json"], capture_output=True, text=True)
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr.strip()
    except json.JSONDecodeError:
        return proc.returncode, None, (proc.stderr.strip().splitlines() or ["no output"])[-1]


def _on_this_environment(name: str, version: str, folder: str) -> tuple[str, ...]:
    """``--installed NAME==V`` through pip's offline dry run from ``folder``, for this interpreter."""
    return ("--installed", f"{name}=={version}", "--no-deps", "--installer", "pip", "--find-links", folder,
            "--no-index", "--python", sys.executable)  # fmt: skip


def static_verdict(name: str, version: str, folder: str) -> tuple[bool | None, str]:
    rc, doc, err = _abiprobe("check", *_on_this_environment(name, version, folder))
    if doc is None:
        return None, f"error rc={rc}: {err[:120]}"
    plan = doc.get("plan") or {}
    broken = [b["distribution"] for b in plan.get("broken", [])]  # type: ignore[attr-defined]
    first = doc.get("first_error") or {}
    why = str(first.get("text", "")) if isinstance(first, dict) else ""
    text = f"{doc.get('status')} (rc {rc})" + (f"; breaks {', '.join(broken)}" if broken else "")
    return rc == 0, text + (f"; {why[:100]}" if why else "")


def probe_verdict(name: str, version: str, folder: str) -> tuple[bool | None, str]:
    rc, doc, err = _abiprobe("probe", *_on_this_environment(name, version, folder))
    if doc is None:
        return None, f"error rc={rc}: {err[:120]}"
    [result] = doc["results"]  # type: ignore[index]
    outcome = result["outcome"]
    return outcome == "ok", f"{outcome}: {str(result.get('message', ''))[:100]}"


def real_result(name: str, wheel: Path) -> tuple[bool, str]:
    target = Path(tempfile.mkdtemp(prefix="gpu27-"))
    try:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--no-index",
                "--target",
                str(target),
                str(wheel),
            ],
            check=True,
            capture_output=True,
        )
        code = f"import sys; sys.path.insert(0, {str(target)!r}); " + FIRST_OP[name]
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        last = (proc.stdout.strip() or proc.stderr.strip()).splitlines()[-1:] or ["no output"]
        return proc.returncode == 0, last[0][:140]
    finally:
        shutil.rmtree(target, ignore_errors=True)


def _row(name: str, version: str, found: list[Path], folder: str) -> tuple[str, bool]:
    """One wheel's row (its static, probe and real answers) and whether they agree."""
    if not found:
        return f"| {name}-{version} | (wheel not in {folder}) | | | |", True
    s_ok, s_text = static_verdict(name, version, folder)
    p_ok, p_text = probe_verdict(name, version, folder)
    r_ok, r_text = real_result(name, found[0])
    agree = s_ok == r_ok and p_ok == r_ok
    cells = [
        found[0].name,
        s_text,
        p_text,
        ("works: " if r_ok else "fails: ") + r_text,
        "yes" if agree else "**no**",
    ]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |", agree


def run(folder: str, only: str | None = None) -> int:
    """Every wheel's row, the wheels run side by side (each row is its own processes)."""
    from concurrent.futures import ThreadPoolExecutor

    wheels = sorted(Path(folder).glob("*.whl"))
    rows = ["| wheel | static verdict | probe verdict | real result | agree |", "|---|---|---|---|---|"]
    jobs = [
        (name, version, [w for w in wheels if w.name.startswith(f"{name}-{version}-")])
        for name, versions in WHEELS.items()
        if only in (None, name)
        for version in versions
    ]
    disagree = 0
    with ThreadPoolExecutor(max_workers=int(os.environ.get("GPU_TABLE_JOBS", "8"))) as pool:
        for row, agree in pool.map(lambda j: _row(j[0], j[1], j[2], folder), jobs):
            rows.append(row)
            disagree += not agree
            print(row, file=sys.stderr, flush=True)
    try:
        import torch

        print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), {sys.executable}\n")
    except ImportError:
        print(f"no torch importable with {sys.executable}\n")
    print("\n".join(rows))
    return 1 if disagree else 0


if __name__ == "__main__":
    if (
        len(sys.argv) not in (3, 4)
        or sys.argv[1] not in ("run", "download")
        or sys.argv[3:4]
        not in (
            [],
            ["torchvision"],
            ["torchaudio"],
        )
    ):
        sys.exit(__doc__)
    project = sys.argv[3] if len(sys.argv) == 4 else None
    sys.exit(run(sys.argv[2], project) if sys.argv[1] == "run" else download(sys.argv[2], project))
