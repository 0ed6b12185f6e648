"""Executed INSIDE a probe venv (``python -I -B runner.py SPEC.json``): import a stack, report JSON.

Standard library only, so it can be copied to any host. Two modes: ``single`` imports one candidate in
this process; ``server`` imports the shared ``preload`` modules once (CUDA untouched), then forks one child
per candidate, each child importing its own candidate from its own directories.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import signal
import sys
import time
import traceback
from typing import Any

_SO_MARKERS = (".so", ".so.")


def _write(path: str, doc: dict[str, Any]) -> None:
    tmp = path + ".part"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    os.replace(tmp, path)


def _loaded_objects(roots: list[str]) -> list[str]:
    """Shared objects mapped into this process whose path lies under one of ``roots``."""
    found: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                base = os.path.basename(path)
                if not (base.endswith(".so") or ".so." in base):
                    continue
                if any(path.startswith(r) for r in roots) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def _dist_versions(dists: list[str]) -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for d in dists:
        try:
            out[d] = metadata.version(d)
        except Exception:
            out[d] = None
    return out


def _last_frame(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def _guard(fn: Any) -> dict[str, Any]:
    try:
        value = fn()
    except BaseException as exc:
        return {"status": "fail", "error": f"{type(exc).__name__}: {exc}"[:500]}
    return {"status": "ok", "value": value}


def _torch_kernel() -> dict[str, Any]:
    torch = sys.modules["torch"]

    x = torch.arange(1024, dtype=torch.float32)
    want = float((x * 2).sum().item())
    got = float((x.cuda() * 2).sum().item())
    torch.cuda.synchronize()
    if got != want:
        raise RuntimeError(f"torch kernel result {got} != {want}")
    return {"result": got}


def _silu_and_mul_op(fn: Any) -> dict[str, Any]:
    torch = sys.modules["torch"]

    x = torch.randn(4, 256, device="cuda", dtype=torch.float16)
    out = fn(x)
    torch.cuda.synchronize()
    ref = torch.nn.functional.silu(x[:, :128].float()) * x[:, 128:].float()
    err = float((out.float() - ref).abs().max().item())
    if err > 1e-2:
        raise RuntimeError(f"max error {err}")
    return {"max_error": err}


def _kernel_package_ops() -> dict[str, dict[str, Any]]:
    ops: dict[str, dict[str, Any]] = {}
    sgl = sys.modules.get("sgl_kernel")
    if sgl is not None:
        fn = getattr(sgl, "silu_and_mul", None)
        ops["sgl_kernel"] = (
            _guard(lambda: _silu_and_mul_op(fn)) if fn else {"status": "skipped", "error": "no cheap op"}
        )
    fi = sys.modules.get("flashinfer")
    if fi is not None:
        act = getattr(fi, "activation", None)
        fn2 = getattr(act, "silu_and_mul", None) if act is not None else None
        ops["flashinfer"] = (
            _guard(lambda: _silu_and_mul_op(fn2)) if fn2 else {"status": "skipped", "error": "no cheap op"}
        )
    return ops


def _smoke() -> dict[str, Any]:
    """On a visible GPU: compute capability, one torch kernel, one cheap op per kernel package."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {"status": "skipped", "reason": "torch not imported"}
    avail = _guard(lambda: bool(torch.cuda.is_available()))
    if avail.get("value") is not True:
        return {"status": "skipped", "reason": "no GPU visible", "detail": avail}
    cap = _guard(lambda: list(torch.cuda.get_device_capability(0)))
    name = _guard(lambda: str(torch.cuda.get_device_name(0)))
    kernel = _guard(_torch_kernel)
    ops = _kernel_package_ops()
    failed = kernel["status"] == "fail" or any(o["status"] == "fail" for o in ops.values())
    return {
        "status": "fail" if failed else "ok",
        "capability": cap.get("value"),
        "device": name.get("value"),
        "torch_kernel": kernel,
        "ops": ops,
    }


def import_candidate(cand: dict[str, Any], roots: list[str], smoke: bool) -> dict[str, Any]:
    """Import ``cand['modules']`` in order; report versions, files, loaded objects and any failure."""
    result_path = cand["result"]
    for p in reversed(cand.get("paths", [])):
        sys.path.insert(0, p)
    modules: dict[str, str | None] = {}
    doc: dict[str, Any] = {"label": cand.get("label", ""), "status": "ok", "modules": modules}
    started = time.monotonic()
    if cand.get("preload_libs"):
        import ctypes

        for lib in cand["preload_libs"]:
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    for name in cand["modules"]:
        _write(result_path, {"label": doc["label"], "status": "importing", "module": name})
        try:
            mod = importlib.import_module(name)
        except BaseException as exc:
            doc.update(
                status="exception",
                module=name,
                exc_type=type(exc).__name__,
                message=str(exc),
                last_frame=_last_frame(exc),
            )
            break
        modules[name] = getattr(mod, "__file__", None)
    doc["versions"] = _dist_versions(cand.get("dists", []))
    doc["loaded"] = _loaded_objects(roots)
    doc["import_seconds"] = round(time.monotonic() - started, 4)
    if smoke and doc["status"] == "ok":
        _write(result_path, {"label": doc["label"], "status": "importing", "module": "<smoke>"})
        doc["smoke"] = _smoke()
    _write(result_path, doc)
    return doc


def _enter_candidate_env(cand: dict[str, Any]) -> None:
    sys.dont_write_bytecode = True  # only the layer's parent may add to the layer's bytecode
    home = cand.get("home")
    if home:
        os.environ["HOME"] = home
        os.environ["TMPDIR"] = home


def _wait_child(pid: int, deadline: float) -> tuple[str, int]:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFSIGNALED(status):
                return "signal", os.WTERMSIG(status)
            return "exit", os.WEXITSTATUS(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", 0
        time.sleep(0.005)


def serve(spec: dict[str, Any]) -> None:
    """Import the shared layer once, then fork one child per candidate (CUDA must stay untouched here)."""
    roots = spec["roots"]
    pre = {"label": "<preload>", "modules": spec["preload"], "result": spec["preload_result"], "dists": []}
    doc = import_candidate(pre, roots, smoke=False)
    if doc["status"] != "ok":
        return
    for cand in spec["candidates"]:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _enter_candidate_env(cand)
                import_candidate(cand, roots, spec.get("smoke", False))
            except BaseException:
                code = 70
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        how, value = _wait_child(pid, time.monotonic() + float(spec["timeout"]))
        _write(cand["result"] + ".exit", {"how": how, "value": value})


def main(argv: list[str]) -> int:
    faulthandler.enable()
    with open(argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    for p in reversed(spec.get("paths", [])):
        sys.path.insert(0, p)
    if spec["mode"] == "server":
        serve(spec)
        # Every result is on disk; the parent's own teardown (torch's, ~0.3 s) judges nothing.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    else:
        import_candidate(spec["candidates"][0], spec["roots"], spec.get("smoke", False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
